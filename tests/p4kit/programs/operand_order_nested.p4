// Left to right at every depth (P4_16 8.x): in `(a + bump(a)) + b + bump(b)` the second `b` is read
// before the second bump changes it, though it sits one operator further out than the call, in a
// control's body and in an action; in `(is_odd(a) ? a : b) + bump(a)` the `a` the ?: picks is read
// before bump (the ?: is evaluated in its turn, condition and then branch, before the call after it).
#include <core.p4>
#include <v1model.p4>

header probe_t {
    bit<8> a;
    bit<8> b;
    bit<8> r1;
    bit<8> r2;
    bit<8> r3;
    bit<8> r4;
}

struct headers_t { probe_t p; }
struct meta_t { bit<8> unused; }

bit<8> bump(inout bit<8> x) {
    x = x + 1;
    return x;
}

bool is_odd(in bit<8> x) {
    return x[0:0] == 1;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.p); transition accept; }
}

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action in_action() {
        hdr.p.r2 = hdr.p.a + bump(hdr.p.a) + hdr.p.b + bump(hdr.p.b);
        hdr.p.r4 = (is_odd(hdr.p.a) ? hdr.p.a : hdr.p.b) + bump(hdr.p.a);
    }
    apply {
        sm.egress_spec = 1;
        hdr.p.r1 = hdr.p.a + bump(hdr.p.a) + hdr.p.b + bump(hdr.p.b);
        hdr.p.r3 = (is_odd(hdr.p.a) ? hdr.p.a : hdr.p.b) + bump(hdr.p.a);
        in_action();
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
