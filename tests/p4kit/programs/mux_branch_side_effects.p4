// `c ? a : b` evaluates c and then only the branch it picks (P4 spec, conditional operator; p4c's
// side-effect ordering makes it an if): a call in the other branch does not run, so its changes to its
// inout argument do not happen. As an assignment's right-hand side and as a local's initializer, in a
// control's body and in an action; `log` shows which calls ran.
#include <core.p4>
#include <v1model.p4>

header probe_t {
    bit<8> sel;
    bit<8> log;   // each call sets its own bit
    bit<8> r1;
    bit<8> r2;
    bit<8> r3;
}

struct headers_t { probe_t p; }
struct meta_t { bit<8> unused; }

bit<8> left(inout bit<8> log, in bit<8> bit_) {
    log = log | bit_;
    return 0x11;
}

bit<8> right(inout bit<8> log, in bit<8> bit_) {
    log = log | bit_;
    return 0x22;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.p); transition accept; }
}

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action pick() {
        hdr.p.r2 = hdr.p.sel[1:1] == 1 ? left(hdr.p.log, 0x04) : right(hdr.p.log, 0x08);
    }
    apply {
        sm.egress_spec = 1;
        hdr.p.r1 = hdr.p.sel[0:0] == 1 ? left(hdr.p.log, 0x01) : right(hdr.p.log, 0x02);
        pick();
        bit<8> local = hdr.p.sel[2:2] == 1 ? left(hdr.p.log, 0x10) : right(hdr.p.log, 0x20);
        hdr.p.r3 = local;
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
