// const declarations, compile-time constant expressions, typedef, type (new type), literals with
// widths (8w5, 0x.., 0b.., signed), minSizeInBits / minSizeInBytes.
#include <core.p4>
#include <v1model.p4>

typedef bit<8> byte_t;
type bit<16> tag_t;

const byte_t K = 8w5;
const bit<16> BIG = 16w3 * 16w4 + (16w1 << 3);
const int SHIFT = 2;
const bit<8> MASK = 0b11110000;
const int<8> NEG = -8s3;
const bit<16> TAGV = 0x1234;

header c_t {
    byte_t  a;
    bit<8>  k;
    bit<16> big;
    bit<8>  masked;
    bit<8>  neg;
    bit<16> tag;
    bit<8>  bits;
    bit<8>  bytes;
    bit<8>  hexw;
}

struct headers_t { c_t h; }
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
        tag_t t = (tag_t)TAGV;
        hdr.h.k = K + hdr.h.a;
        hdr.h.big = BIG;
        hdr.h.masked = hdr.h.a & MASK;
        hdr.h.neg = (bit<8>)NEG;
        hdr.h.tag = (bit<16>)t;
        hdr.h.bits = (bit<8>)hdr.h.minSizeInBits();
        hdr.h.bytes = (bit<8>)hdr.h.minSizeInBytes();
        hdr.h.hexw = 8w0xF0 >> SHIFT;
        sm.egress_spec = (bit<9>)K;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
