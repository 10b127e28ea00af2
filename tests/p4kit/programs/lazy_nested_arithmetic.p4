// A `?:`, `&&` or `||` nested inside a larger expression still evaluates only what P4 evaluates (P4_16
// 8.5/8.6 on `&&`/`||`, 8.14 on `?:`; p4c's side-effect ordering turns each into an if first): a call
// in the branch not taken, or on the right of an operator already decided, does not run. Nested in
// arithmetic, in a cast, under `!` and inside another `?:`, in a control's body and in an action;
// `log` has one bit per call, so it shows which calls ran.
#include <core.p4>
#include <v1model.p4>

header probe_t {
    bit<8> sel;
    bit<8> log;
    bit<8> r1;
    bit<8> r2;
    bit<8> r3;
    bit<8> r4;
}

struct headers_t { probe_t p; }
struct meta_t { bit<8> unused; }

bit<8> mark(inout bit<8> log, in bit<8> bit_, in bit<8> v) {
    log = log | bit_;
    return v;
}

bool yes(inout bit<8> log, in bit<8> bit_) {
    log = log | bit_;
    return true;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.p); transition accept; }
}

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action nested() {
        // an action: `?:` inside a sum, `||` inside a cast
        hdr.p.r3 = 8w0x40 + (hdr.p.sel[2:2] == 1 ? mark(hdr.p.log, 0x10, 1) : mark(hdr.p.log, 0x20, 2));
        hdr.p.r4 = (bit<8>)(bit<1>)(hdr.p.sel[3:3] == 1 || yes(hdr.p.log, 0x40)) | 8w0x80;
    }
    apply {
        sm.egress_spec = 1;
        // a control's body: `?:` inside a sum, `&&` under `!` inside a `?:` condition
        hdr.p.r1 = 8w0x10 + (hdr.p.sel[0:0] == 1 ? mark(hdr.p.log, 0x01, 1) : mark(hdr.p.log, 0x02, 2));
        hdr.p.r2 = (!(hdr.p.sel[1:1] == 1 && yes(hdr.p.log, 0x04)) ? 8w0x21 : 8w0x22) + 8w0x10;
        nested();
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
