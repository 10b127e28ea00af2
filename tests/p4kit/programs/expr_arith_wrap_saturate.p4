// Unsigned arithmetic: + - * wrap modulo 2^W, |+| |-| saturate, unary minus, widening casts.
#include <core.p4>
#include <v1model.p4>

header arith_t {
    bit<8>  a;
    bit<8>  b;
    bit<8>  add;
    bit<8>  sub;
    bit<8>  mul;
    bit<8>  sadd;
    bit<8>  ssub;
    bit<16> wide;
    bit<8>  neg;
}

struct headers_t { arith_t h; }
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.add = hdr.h.a + hdr.h.b;
        hdr.h.sub = hdr.h.a - hdr.h.b;
        hdr.h.mul = hdr.h.a * hdr.h.b;
        hdr.h.sadd = hdr.h.a |+| hdr.h.b;
        hdr.h.ssub = hdr.h.a |-| hdr.h.b;
        hdr.h.wide = (bit<16>)hdr.h.a * (bit<16>)hdr.h.b;
        hdr.h.neg = -hdr.h.a;
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
