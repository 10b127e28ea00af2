// A header stack element at a run-time index read by a switch statement's expression and by a table
// key. p4c gives both a temporary first (EliminateSwitch: the switch becomes a table keyed on a copy of
// the expression; SimplifyKey: a key that is not a plain field is copied before the apply), and the
// copy is an assignment like any other, which HSIndexSimplifier guards with one `if (i == k)` per
// element: out of range it does nothing, so the temporary keeps the value it had (zero, for a packet
// that has not set it: BMv2 clears metadata per packet). The switch then takes the case of that value
// (default here), the table looks that value up, and the statements after both run; the packet is not
// dropped.
#include <core.p4>
#include <v1model.p4>

header sel_t {
    bit<8> i;
    bit<8> seen;
}

header item_t {
    bit<8> v;
}

struct headers_t {
    sel_t     sel;
    item_t[2] items;
}

struct meta_t { bit<8> unused; }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.sel);
        pkt.extract(hdr.items.next);
        pkt.extract(hdr.items.next);
        transition accept;
    }
}

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action flag(bit<8> bits) {
        hdr.sel.seen = hdr.sel.seen | bits;
    }
    table by_item {
        key = { hdr.items[hdr.sel.i].v : exact; }
        actions = { flag; NoAction; }
        default_action = flag(0x01);
    }
    apply {
        sm.egress_spec = 1;
        switch (hdr.items[hdr.sel.i].v) {
            0xAA:    { hdr.sel.seen = hdr.sel.seen | 0x10; }
            0x00:    { hdr.sel.seen = hdr.sel.seen | 0x20; }
            default: { hdr.sel.seen = hdr.sel.seen | 0x40; }
        }
        by_item.apply();
        hdr.sel.seen = hdr.sel.seen | 0x80;
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
