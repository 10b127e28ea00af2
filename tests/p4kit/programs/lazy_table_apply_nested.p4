// A table applied inside a `?:` branch or on the right of `&&`/`||`, nested in a larger expression, is
// applied only when P4 evaluates it (P4_16 8.5/8.6, 8.14; p4c's side-effect ordering makes the if, and
// the table's hit/miss its branches). Each table's action sets its own bit of `log`, so `log` shows
// which tables were applied (and hit).
#include <core.p4>
#include <v1model.p4>

header probe_t {
    bit<8> sel;
    bit<8> k;
    bit<8> log;
    bit<8> r1;
    bit<8> r2;
    bit<8> r3;
}

struct headers_t { probe_t p; }
struct meta_t { bit<8> unused; }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.p); transition accept; }
}

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_log(bit<8> b) { hdr.p.log = hdr.p.log | b; }
    table t1 {
        key = { hdr.p.k : exact; }
        actions = { set_log; NoAction; }
        const entries = { 1 : set_log(0x01); }
        default_action = NoAction();
    }
    table t2 {
        key = { hdr.p.k : exact; }
        actions = { set_log; NoAction; }
        const entries = { 1 : set_log(0x02); }
        default_action = NoAction();
    }
    table t3 {
        key = { hdr.p.k : exact; }
        actions = { set_log; NoAction; }
        const entries = { 1 : set_log(0x04); }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        hdr.p.r1 = (bit<8>)(bit<1>)(hdr.p.sel[0:0] == 1 && t1.apply().hit) + 8w0x10;
        hdr.p.r2 = (hdr.p.sel[1:1] == 1 ? (t2.apply().hit ? 8w1 : 8w2) : 8w3) + 8w0x20;
        if ((hdr.p.sel[2:2] == 1 || t3.apply().miss) == true) {
            hdr.p.r3 = 0x31;
        } else {
            hdr.p.r3 = 0x32;
        }
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
