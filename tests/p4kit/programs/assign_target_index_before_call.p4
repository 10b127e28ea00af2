// An assignment evaluates its target before its right-hand side (P4 spec, assignment statements; p4c's
// side-effect ordering saves a run-time index first): in `s[n].v = bump(n)` the element written is the
// one n named before bump changed it. In a control's body, in an action and in a compound assignment,
// whose right side reads the same element it writes.
#include <core.p4>
#include <v1model.p4>

header ctl_t {
    bit<8> n;
}

header slot_t {
    bit<8> v;
}

struct headers_t {
    ctl_t     c;
    slot_t[4] s;
}

struct meta_t { bit<8> unused; }

bit<8> bump(inout bit<8> n) {
    n = n + 1;
    return 0xA0 | n;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.c);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action in_action() {
        hdr.s[hdr.c.n].v = bump(hdr.c.n);
    }
    apply {
        sm.egress_spec = 1;
        hdr.s[hdr.c.n].v = bump(hdr.c.n);     // control body
        in_action();                          // action
        hdr.s[hdr.c.n].v += bump(hdr.c.n);    // compound: reads and writes the element n named first
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
