// `a && b` and `a || b` evaluate b only when a does not decide (P4 spec, boolean operators): a call in
// b does not run, and its inout argument keeps its value, when a already decided. As a local's
// initializer in a control's body and in an action, in an action's if condition (negated too) and in
// the condition of a `?:`; `log` shows which calls ran.
#include <core.p4>
#include <v1model.p4>

header probe_t {
    bit<8> sel;
    bit<8> log;   // each call sets its own bit
    bit<8> r1;
    bit<8> r2;
    bit<8> r3;
    bit<8> r4;
    bit<8> r5;
}

struct headers_t { probe_t p; }
struct meta_t { bit<8> unused; }

bool note(inout bit<8> log, in bit<8> mark) {
    log = log | mark;
    return true;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.p); transition accept; }
}

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action in_action() {
        bool t = hdr.p.sel[1:1] == 1 && note(hdr.p.log, 0x02);
        hdr.p.r2 = t ? 8w1 : 8w0;
        if (hdr.p.sel[3:3] == 1 || note(hdr.p.log, 0x08)) {
            hdr.p.r4 = 1;
        }
        if (!(hdr.p.sel[4:4] == 0 && !note(hdr.p.log, 0x10))) {   // negated: the same as || above
            hdr.p.r5 = 1;
        }
    }
    apply {
        sm.egress_spec = 1;
        bool t = hdr.p.sel[0:0] == 1 && note(hdr.p.log, 0x01);
        hdr.p.r1 = t ? 8w1 : 8w0;
        in_action();
        hdr.p.r3 = (hdr.p.sel[2:2] == 1 || note(hdr.p.log, 0x04)) ? 8w1 : 8w0;
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
