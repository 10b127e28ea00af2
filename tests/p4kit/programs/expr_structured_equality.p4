// `==` and `!=` on structured values compare element by element (p4c's SimplifyComparisons):
// list expressions against each other and against structs, structs holding structs, headers
// (validity included) and header stacks. static_assert is checked when compiling, in a parser
// state as well as in a control, and leaves nothing to run.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> c;
    bit<8> d;
}

header r_t { bit<8> bits; }

struct pair_t { bit<8> x; bit<8> y; }
struct nest_t { pair_t p; bool f; }

struct headers_t {
    h_t    h;
    h_t    h2;
    h_t[2] s1;
    h_t[2] s2;
    r_t    r;
}
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        static_assert(V1MODEL_VERSION >= 20180101, "v1model too old");
        pkt.extract(hdr.h);
        transition select(hdr.h.d) {
            1: two;
            default: accept;
        }
    }
    state two {
        pkt.extract(hdr.h2);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        static_assert(true);
        sm.egress_spec = 1;
        hdr.r.setValid();
        hdr.r.bits = 0;
        pair_t p = { hdr.h.a, hdr.h.b };
        nest_t n1 = { p, hdr.h.c == 0 };
        nest_t n2 = { { hdr.h.b, hdr.h.a }, true };
        if ({ hdr.h.a, hdr.h.b } == { 8w1, 8w2 }) { hdr.r.bits[0:0] = 1; }
        if (p == { hdr.h.b, hdr.h.a }) { hdr.r.bits[1:1] = 1; }      // a == b
        if (n1 == n2) { hdr.r.bits[2:2] = 1; }                     // a == b and c == 0
        if (hdr.h == hdr.h2) { hdr.r.bits[3:3] = 1; }              // h2 valid and equal
        if (hdr.h != hdr.h2) { hdr.r.bits[4:4] = 1; }
        hdr.s1[0] = hdr.h;
        hdr.s2[0] = hdr.h2;
        if (hdr.s1 == hdr.s2) { hdr.r.bits[5:5] = 1; }             // s1[1], s2[1] both invalid
        hdr.s1[0].setInvalid();
        hdr.s2[0].setInvalid();
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.r);
        pkt.emit(hdr.h);
        pkt.emit(hdr.h2);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
