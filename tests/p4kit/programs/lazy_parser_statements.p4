// In a parser state, a `?:`, `&&` or `||` with calls evaluates only what P4 evaluates (P4_16 8.5/8.6,
// 8.14): as an assignment's right-hand side, nested in arithmetic, as a local's initializer and as a
// select expression's key (where a plain call is computed first too, state `one`). A parser state has no if of its own: p4c's side-effect ordering makes the
// if and its parser control-flow pass splits the state around it. `log` has one bit per call.
#include <core.p4>
#include <v1model.p4>

header probe_t {
    bit<8> sel;
    bit<8> log;
    bit<8> r1;
    bit<8> r2;
    bit<8> r3;
    bit<8> r4;
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

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.p);
        hdr.p.r1 = hdr.p.sel[0:0] == 1 ? mark(hdr.p.log, 0x01, 0x11) : mark(hdr.p.log, 0x02, 0x22);
        hdr.p.r2 = 8w0x30 + (bit<8>)(bit<1>)(hdr.p.sel[1:1] == 1 && yes(hdr.p.log, 0x04));
        bool b = hdr.p.sel[3:3] == 1 || yes(hdr.p.log, 0x40);
        hdr.p.r4 = b ? 8w0x41 : 8w0x42;
        transition select(hdr.p.sel[2:2] == 1 ? mark(hdr.p.log, 0x10, 1) : mark(hdr.p.log, 0x20, 2)) {
            1: one;
            default: other;
        }
    }
    state one {
        hdr.p.r3 = 0x31;
        transition select(mark(hdr.p.log, 0x80, hdr.p.sel[3:3] ++ 7w0)) {
            0x80: accept;
            default: other;
        }
    }
    state other { hdr.p.r3 = 0x32; transition accept; }
}

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
