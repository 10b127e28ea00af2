// A table with no default_action has NoAction as its default (P4 spec, tables; p4c writes it as the
// table's default entry), whether or not its actions list names NoAction. On a miss, a switch on
// action_run takes the `NoAction:` case when it has one, else its `default:` case; the statements
// after the switch run only when the case taken does not exit.
#include <core.p4>
#include <v1model.p4>

header probe_t {
    bit<8> k;
    bit<8> first;
    bit<8> second;
    bit<8> after;
}

struct headers_t { probe_t p; }
struct meta_t { bit<8> unused; }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.p); transition accept; }
}

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action hit_first() { hdr.p.first = 0x11; }
    action hit_second() { hdr.p.second = 0x22; }
    table names_noaction {            // NoAction listed, no default_action
        key = { hdr.p.k : exact; }
        actions = { hit_first; NoAction; }
    }
    table omits_noaction {            // NoAction not listed: p4c adds it, default only
        key = { hdr.p.k : exact; }
        actions = { hit_second; }
    }
    apply {
        sm.egress_spec = 1;
        switch (names_noaction.apply().action_run) {
            hit_first: { hdr.p.first = hdr.p.first | 0x01; }
            NoAction:  { hdr.p.first = 0xA0; }
            default:   { hdr.p.first = 0xD0; }
        }
        switch (omits_noaction.apply().action_run) {
            hit_second: { hdr.p.second = hdr.p.second | 0x02; }
            default:    { hdr.p.second = 0xD1; }
        }
        hdr.p.after = 0xEE;
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
