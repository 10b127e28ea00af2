// A table key that is a `?:` or a short-circuit operator with calls is computed before the table
// applies (p4c moves such keys into temporaries) and evaluates only what P4 evaluates (P4_16 8.5/8.6,
// 8.14; 14.2.1.1: the key is evaluated when the table is applied): only the branch picked runs, and
// the right of `||` runs only when the left side is false. `log` has one bit per call.
#include <core.p4>
#include <v1model.p4>

header probe_t {
    bit<8> sel;
    bit<8> log;
    bit<8> r1;
}

struct headers_t { probe_t p; }
struct meta_t { bit<8> unused; }

bit<8> mark(inout bit<8> log, in bit<8> bit_, in bit<8> v) {
    log = log | bit_;
    return v;
}

bool no(inout bit<8> log, in bit<8> bit_) {
    log = log | bit_;
    return false;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.p); transition accept; }
}

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set(bit<8> v) { hdr.p.r1 = v; }
    table t {
        key = {
            (hdr.p.sel[0:0] == 1 ? mark(hdr.p.log, 0x01, 0x11) : mark(hdr.p.log, 0x02, 0x22)) : exact @name("k1");
            (hdr.p.sel[1:1] == 1 || no(hdr.p.log, 0x04)) : exact @name("k2");
        }
        actions = { set; NoAction; }
        const entries = {
            (0x11, true) : set(0xA1);
            (0x11, false) : set(0xA2);
            (0x22, true) : set(0xB1);
            (0x22, false) : set(0xB2);
        }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        t.apply();
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
