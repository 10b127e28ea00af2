// A header stack indexed by a value known only at run time: a statement that writes (or validates)
// an element out of range does nothing, as p4c's HSIndexSimplifier makes it (one copy of the
// statement per index, each under `if (i == k)`), while the statements around it still run, and a
// condition that reads an element out of range is false (the chain `if (i == k && c[k])` ends in
// the else branch); in range, the element at the index is the one read or changed.
#include <core.p4>
#include <v1model.p4>

header idx_t {
    bit<8> i;
    bit<8> j;
    bit<8> seen;
}

header elem_t {
    bit<8> v;
}

struct headers_t {
    idx_t     x;
    elem_t[2] s;
    elem_t[3] extra;   // invalid on arrival; an element validated below is emitted
}

struct meta_t { bit<8> unused; }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.x);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action rewrite(bit<8> val) {
        hdr.s[hdr.x.i].v = val;          // skipped when x.i > 1
        hdr.x.seen = hdr.x.seen + 1;     // always runs
        if (hdr.s[hdr.x.i].v == 0x5A) {  // in an action too: false when x.i > 1
            hdr.x.seen = hdr.x.seen + 0x10;
        } else {
            hdr.x.seen = hdr.x.seen + 0x20;
        }
        hdr.extra[hdr.x.j].setValid();   // skipped when x.j > 2
        hdr.extra[hdr.x.j].v = 0xE0;
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.s[hdr.x.i].v == 0xAA) {   // false when x.i > 1
            hdr.x.seen = hdr.x.seen | 0x80;
        } else {
            hdr.x.seen = hdr.x.seen | 0x40;
        }
        rewrite(0x5A);
        hdr.s[hdr.x.j] = { 0x11 };       // a whole element: skipped when x.j > 1
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
