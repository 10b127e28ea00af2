// exit inside a sub-control still copies out the control's out/inout arguments (P4_16: exit ends
// every block being executed, after their copy-out), also where the arguments are bit slices or share
// storage and so are passed as copies: from the control's own body, from an action it calls directly,
// from an action of a table it applies, and from a control nested in it (innermost copy-out first).
#include <core.p4>
#include <v1model.p4>

header pkt_t {
    bit<8>  op;
    bit<16> word;   // word[7:0] is given to the sub-controls as a slice
    bit<8>  count;
    bit<8>  mark;
}

struct headers_t { pkt_t p; }
struct meta_t { bit<8> unused; }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.p); transition accept; }
}

control Inner(inout bit<8> v) {
    apply {
        v = v | 0x80;
        exit;
    }
}

control Stepper(inout bit<8> lo, inout bit<8> n, in bit<8> op) {
    Inner() inner;
    action bump_and_stop() {
        n = n + 10;
        exit;
    }
    action stop_from_table() {
        n = n + 20;
        exit;
    }
    table stopper {
        key = { op: exact; }
        actions = { stop_from_table; NoAction; }
        const entries = { 4 : stop_from_table(); }
        default_action = NoAction();
    }
    apply {
        lo = lo + 1;
        n = n + 1;
        if (op == 1) {
            exit;                 // lo and n copied out, the caller's mark stays
        } else if (op == 2) {
            bump_and_stop();      // exit inside an action called by the sub-control
        } else if (op == 3) {
            inner.apply(lo);      // exit two controls deep
        } else if (op == 4) {
            stopper.apply();      // exit in a table's action
        }
        lo = 0xEE;
    }
}

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Stepper() step;
    apply {
        sm.egress_spec = 1;
        // a slice and a field of the same header: both are passed as copies
        step.apply(hdr.p.word[7:0], hdr.p.count, hdr.p.op);
        hdr.p.mark = 0x77;
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.p); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
