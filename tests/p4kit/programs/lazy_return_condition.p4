// A `?:` or a short-circuit operator with calls evaluates only what P4 evaluates (P4_16 8.5/8.6, 8.14)
// also as a function's return value (whole, or nested in it), and nested inside an if condition or a
// switch's selector, in a control's body and in an action. `log` has one bit per call.
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

bit<8> pick(in bool c, inout bit<8> log) {
    return c ? mark(log, 0x01, 0x11) : mark(log, 0x02, 0x22);   // the whole return value
}

bit<8> pick_sum(in bool c, inout bit<8> log) {
    return 8w0x30 + (bit<8>)(bit<1>)(c && yes(log, 0x04));     // nested in it
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.p); transition accept; }
}

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action in_action() {
        if ((hdr.p.sel[3:3] == 1 ? mark(hdr.p.log, 0x40, 1) : 8w2) == 1) {
            hdr.p.r4 = 0x41;
        } else {
            hdr.p.r4 = 0x42;
        }
    }
    apply {
        sm.egress_spec = 1;
        hdr.p.r1 = pick(hdr.p.sel[0:0] == 1, hdr.p.log);
        hdr.p.r2 = pick_sum(hdr.p.sel[1:1] == 1, hdr.p.log);
        switch (hdr.p.sel[2:2] == 1 ? mark(hdr.p.log, 0x10, 1) : mark(hdr.p.log, 0x20, 2)) {
            1: { hdr.p.r3 = 0x31; }
            default: { hdr.p.r3 = 0x32; }
        }
        in_action();
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
