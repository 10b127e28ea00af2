// expect-error: 28 default values \{\.\.\.\} cannot be used in a return statement
// '...' fills the rest of a location being initialized; a returned value initializes no location.
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

struct pair_t { bit<8> lo; bit<8> hi; }
pair_t low_only(in bit<8> v) {
    return { v, ... };
}

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { pair_t p = low_only(hdr.h.a); hdr.h.b = p.lo; }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
