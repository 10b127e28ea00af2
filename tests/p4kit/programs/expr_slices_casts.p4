// Bit slices as r-values and l-values, widening and narrowing casts, bit<1> <-> bool casts.
#include <core.p4>
#include <v1model.p4>

header sl_t {
    bit<16> x;
    bit<8>  hi;
    bit<8>  lo;
    bit<4>  nib;
    bit<4>  pad;
    bit<16> y;
    bit<32> w;
    bit<8>  b;
    bit<8>  tr;
}

struct headers_t { sl_t h; }
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
        hdr.h.hi = hdr.h.x[15:8];
        hdr.h.lo = hdr.h.x[7:0];
        hdr.h.nib = hdr.h.x[11:8];
        hdr.h.y = hdr.h.x;
        hdr.h.y[7:4] = 4w0xF;
        hdr.h.y[0:0] = 1w0;
        hdr.h.w = (bit<32>)hdr.h.x;
        hdr.h.w[31:24] = hdr.h.lo;
        hdr.h.b = ((bool)hdr.h.x[0:0]) ? 8w0xAA : 8w0x55;
        hdr.h.tr = (bit<8>)hdr.h.x;
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
