// A `?:` or a short-circuit operator with calls, passed to a sub-control's or a sub-parser's apply,
// evaluates only what P4 evaluates (P4_16 8.5/8.6, 8.14), before the callee runs (copy-in, 6.8).
// `log` has one bit per call.
#include <core.p4>
#include <v1model.p4>

header probe_t {
    bit<8> sel;
    bit<8> log;
    bit<8> r1;
    bit<8> r2;
    bit<8> r3;
}

struct headers_t { probe_t p; }
struct meta_t { bit<8> unused; }

bit<8> mark(inout bit<8> log, in bit<8> bit_, in bit<8> v) {
    log = log | bit_;
    return v;
}

bool yes(inout bit<8> log, in bit<8> bit_) {
    log = log | bit_;
    return true;
}

parser Sub(packet_in pkt, in bit<8> v, out bit<8> r) {
    state start { r = v; transition accept; }
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    state start {
        pkt.extract(hdr.p);
        sub.apply(pkt, hdr.p.sel[0:0] == 1 ? mark(hdr.p.log, 0x01, 0x11) : mark(hdr.p.log, 0x02, 0x22),
                  hdr.p.r1);
        transition accept;
    }
}

control Inner(in bit<8> v, in bool b, inout bit<8> r2, inout bit<8> r3) {
    apply {
        r2 = v;
        r3 = b ? 8w0x41 : 8w0x42;
    }
}

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Inner() inner;
    apply {
        sm.egress_spec = 1;
        inner.apply(hdr.p.sel[1:1] == 1 ? mark(hdr.p.log, 0x04, 0x31) : mark(hdr.p.log, 0x08, 0x32),
                    hdr.p.sel[2:2] == 1 || yes(hdr.p.log, 0x10), hdr.p.r2, hdr.p.r3);
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
