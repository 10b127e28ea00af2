// Signed int<N>: two's complement wrap, signed saturation, signed comparison, arithmetic shift,
// sign extension through casts.
#include <core.p4>
#include <v1model.p4>

header s_t {
    int<8>  a;
    int<8>  b;
    int<8>  add;
    int<8>  sub;
    int<8>  sadd;
    int<8>  ssub;
    bit<8>  lt;
    int<8>  shr;
    bit<16> ext;
    int<8>  neg;
}

struct headers_t { s_t h; }
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
        hdr.h.sadd = hdr.h.a |+| hdr.h.b;
        hdr.h.ssub = hdr.h.a |-| hdr.h.b;
        hdr.h.lt = (hdr.h.a < hdr.h.b) ? 8w1 : 8w0;
        hdr.h.shr = hdr.h.a >> 2;
        hdr.h.ext = (bit<16>)(int<16>)hdr.h.a;
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
