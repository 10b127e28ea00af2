// A parser's or a control's own local (declared beside its states or actions, not in a block) whose
// initializer is a `?:`, `&&` or `||` with calls evaluates only what P4 evaluates (P4_16 8.5/8.6, 8.14):
// the parser's run when it starts, the control's when its apply block starts. `log` has one bit per call.
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
struct meta_t { bit<8> sel; bit<8> log; }

bit<8> mark(inout bit<8> log, in bit<8> bit_, in bit<8> v) {
    log = log | bit_;
    return v;
}

bool yes(inout bit<8> log, in bit<8> bit_) {
    log = log | bit_;
    return true;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    // meta.sel and meta.log are 0 here: the first branch never runs
    bit<8> early = meta.sel == 1 ? mark(meta.log, 0x01, 0x11) : mark(meta.log, 0x02, 0x22);
    state start {
        pkt.extract(hdr.p);
        hdr.p.r1 = early;
        hdr.p.log = meta.log;
        transition accept;
    }
}

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    bit<8> picked = hdr.p.sel[0:0] == 1 ? mark(hdr.p.log, 0x04, 0x31) : mark(hdr.p.log, 0x08, 0x32);
    bool both = hdr.p.sel[1:1] == 1 && yes(hdr.p.log, 0x10);
    apply {
        sm.egress_spec = 1;
        hdr.p.r2 = picked;
        hdr.p.r3 = both ? 8w0x41 : 8w0x42;
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
