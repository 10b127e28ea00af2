// Functions with return values and inout parameters, a nested control instantiated twice with
// different arguments, a direct action call with an inout argument, local variables.
#include <core.p4>
#include <v1model.p4>

header f_t {
    bit<8> a;
    bit<8> b;
    bit<8> m;
    bit<8> c;
    bit<8> d;
}

struct headers_t { f_t h; }
struct meta_t { }

bit<8> max8(in bit<8> x, in bit<8> y) {
    if (x > y) {
        return x;
    }
    return y;
}

void swap8(inout bit<8> x, inout bit<8> y) {
    bit<8> t = x;
    x = y;
    y = t;
}

control Bump(inout f_t h, in bit<8> inc) {
    action bump() {
        h.c = h.c + inc;
    }
    apply {
        bump();
        if (h.c > 8w100) {
            h.c = 100;
        }
    }
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
    Bump() small;
    Bump() large;

    action double_it(inout bit<8> v) {
        v = v + v;
    }

    apply {
        bit<8> best = max8(hdr.h.a, hdr.h.b);
        hdr.h.m = best;
        swap8(hdr.h.a, hdr.h.b);
        small.apply(hdr.h, 8w10);
        large.apply(hdr.h, 8w50);
        double_it(hdr.h.d);
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
