// Edge cases of unsigned arithmetic: shifts by a run-time amount equal to or larger than the
// width (result 0), division and modulo by power-of-two constants, unary minus on bit<8>
// (wraps modulo 2^8) and on int<8> (negating -128 gives -128), and a cast binding tighter than <<.
#include <core.p4>
#include <v1model.p4>

header e_t {
    bit<8>  a;
    bit<8>  n;
    int<8>  s;
    bit<8>  shl;
    bit<8>  shr;
    bit<8>  quo;
    bit<8>  rem;
    bit<8>  neg;
    int<8>  sneg;
    bit<16> wide;
}

struct headers_t { e_t h; }
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
        bit<8> a = hdr.h.a;
        hdr.h.shl = a << hdr.h.n;
        hdr.h.shr = a >> hdr.h.n;
        hdr.h.quo = a / 4;
        hdr.h.rem = a % 8;
        hdr.h.neg = -a;
        hdr.h.sneg = -hdr.h.s;
        // The cast applies to a only: the shift is done on 16 bits, nothing is lost.
        hdr.h.wide = (bit<16>)a << 4;
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
