// A compound assignment `a op= b` evaluates its target once (P4 spec, compound assignments; p4c's
// side-effect ordering): in `s[next_slot(n)].v += b` the call runs once, and the element read is the
// element written, in a control's body and in an action; the counter the call bumps shows how often it
// ran.
#include <core.p4>
#include <v1model.p4>

header ctl_t {
    bit<8> n;     // bumped by every call of next_slot
    bit<8> add;
}

header slot_t {
    bit<8> v;
}

struct headers_t {
    ctl_t     c;
    slot_t[4] s;
}

struct meta_t { bit<8> unused; }

bit<2> next_slot(inout bit<8> n) {
    bit<2> r = n[1:0];
    n = n + 1;
    return r;
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
    action bump(bit<8> by) {
        hdr.s[next_slot(hdr.c.n)].v |= by;       // action: one call
    }
    apply {
        sm.egress_spec = 1;
        hdr.s[next_slot(hdr.c.n)].v += hdr.c.add; // control: one call
        bump(0x0F);
        hdr.s[next_slot(hdr.c.n)].v -= 1;        // a fourth slot, a fourth call
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
