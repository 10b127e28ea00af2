// expect-error: 30 a 'type' converts only to and from the type it is declared from
// A type declared with `type` converts only from its own underlying type: a wider value needs a cast to that first.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<8>  b;
    int<8>  s;
    bit<16> w;
}

struct headers_t { h_t h; }
struct meta_t { bit<8> x; int<8> y; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

type bit<4> nibble_t;

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        nibble_t n = (nibble_t)hdr.h.a;
        hdr.h.b = (bit<8>)(bit<4>)n;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
