// Inside a function called from a parser state, a `?:`, `&&` or `||` with calls evaluates only what P4
// evaluates (P4_16 8.5/8.6, 8.14): as the return value, nested in one, as an assignment's right-hand
// side and as a local's initializer. p4c inlines the function and its side-effect ordering makes each
// an if; here the if is predicated inside the state's primitives. `log` has one bit per call.
#include <core.p4>
#include <v1model.p4>

header probe_t {
    bit<8> sel;
    bit<8> log;
    bit<8> r1;
    bit<8> r2;
    bit<8> r3;
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

bit<8> choose(in bit<8> sel, inout bit<8> log) {
    return sel[0:0] == 1 ? mark(log, 0x01, 0x11) : mark(log, 0x02, 0x22);
}

bit<8> count(in bit<8> sel, inout bit<8> log) {
    bool b = sel[1:1] == 1 && yes(log, 0x04);
    bit<8> r = 8w0x30 + (sel[2:2] == 1 ? mark(log, 0x10, 1) : mark(log, 0x20, 2));
    return r + (bit<8>)(bit<1>)b;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.p);
        hdr.p.r1 = choose(hdr.p.sel, hdr.p.log);
        hdr.p.r2 = count(hdr.p.sel, hdr.p.log);
        transition accept;
    }
}

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
