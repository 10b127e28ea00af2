// Generic functions and generic structs/headers: a function's type parameter takes the type of each
// call (its locals, parameters and the generic functions it calls), and each specialisation of a
// generic header is its own header type (gh<bit<8>> and gh<bit<16>> have different widths), named
// as p4c's SpecializeGenericTypes names them (gh_0, gh_1).
#include <core.p4>
#include <v1model.p4>

struct pair<T> { T first; T second; }
header gh<T> { T v; bit<8> tag; }

header h_t { bit<8> a; bit<8> b; bit<16> w; bit<16> x; }
struct headers_t { h_t h; gh<bit<8>> g8; gh<bit<16>> g16; }
struct meta_t { pair<bit<8>> p; }

T pick<T>(in bool c, in T a, in T b) {
    T r = b;               // a local of type T
    if (c) { r = a; }
    return r;
}

void swap<T>(inout T x, inout T y) {
    T t = x;
    x = y;
    y = t;
}

T first_of<T>(in pair<T> p) {
    return pick(true, p.first, p.second);   // a generic call inside a generic function
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.g8);
        pkt.extract(hdr.g16);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        meta.p = { hdr.h.a, hdr.h.b };
        swap(meta.p.first, meta.p.second);                    // T = bit<8>
        hdr.h.a = meta.p.first;
        hdr.h.b = meta.p.second;
        swap<bit<16>>(hdr.h.w, hdr.h.x);                      // T = bit<16>
        hdr.g8.v = pick(hdr.h.a > hdr.h.b, hdr.h.a, hdr.h.b); // the larger byte
        hdr.g16.v = pick(hdr.h.w > hdr.h.x, hdr.h.w, hdr.h.x);
        hdr.g8.tag = first_of(meta.p);
        pair<bit<16>> q = { 16w0x1234, 16w0x5678 };
        hdr.g16.tag = (bit<8>)first_of<bit<16>>(q);
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
