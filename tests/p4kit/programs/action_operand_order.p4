// Operands and arguments are evaluated left to right (P4_16 8.x, 6.8): in `a + bump(a)` the left `a` is
// read before bump changes it, in an action as in a control's body, in an argument list and in a
// function's return value (p4c's side-effect ordering copies the left operand into a temporary first).
#include <core.p4>
#include <v1model.p4>

header probe_t {
    bit<8> a;
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

bit<8> diff(in bit<8> first, in bit<8> second) {
    return second - first;
}

bit<8> twice(inout bit<8> x) {
    return x + bump(x);
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.p); transition accept; }
}

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action in_action() {
        hdr.p.r2 = hdr.p.a + bump(hdr.p.a);
        hdr.p.r3 = diff(hdr.p.a, bump(hdr.p.a));
        hdr.p.r4 = twice(hdr.p.a);
    }
    apply {
        sm.egress_spec = 1;
        hdr.p.r1 = hdr.p.a + bump(hdr.p.a);
        in_action();
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
