// Bit slices as out/inout arguments: the callee (a function, an action, a control) works on a copy
// of the slice's bits, and the copy is written back into just those bits when it returns; the other
// bits of the field keep their values (P4's copy-in/copy-out; p4-guide's exit-3 example passes
// hdr.ethernet.src_addr[23:16] to a function this way).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> a;
    bit<16> b;
    bit<16> c;
    bit<8>  r;
}

struct headers_t { h_t h; }
struct meta_t { }

bit<8> bump(inout bit<8> y, in bit<8> by) {
    y = y + by;
    return y;
}

control Twice(inout bit<4> n) {
    apply { n = n + n; }
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Twice() twice;

    action put(out bit<8> dst, bit<8> v) { dst = v; }

    apply {
        sm.egress_spec = 1;
        hdr.h.r = bump(hdr.h.a[15:8], 1);   // a's high byte + 1; the low byte stays
        put(hdr.h.b[7:0], 0x5a);           // b's low byte = 0x5a; the high byte stays
        twice.apply(hdr.h.c[11:8]);        // c's nibble 11:8 doubled (mod 16); the rest stays
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
