// Struct, header and tuple initializers are evaluated left to right like arguments: in
// `{ x, bump(x) }` the first element is x's value before bump changes it. Checked for a control's
// own variables (initialized before apply), for a local in apply, for an assignment of a list
// and for a parser local.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> c;
    bit<8> d;
    bit<8> e;
    bit<8> f;
}

struct pair_t {
    bit<8> first;
    bit<8> second;
}

struct headers_t { h_t h; }
struct meta_t { bit<8> p1; bit<8> p2; }

bit<8> bump(inout bit<8> x) {
    x = x + 0x10;
    return x + 1;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pair_t q = { hdr.h.f, bump(hdr.h.f) };
        meta.p1 = q.first;
        meta.p2 = q.second;
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    pair_t early = { hdr.h.a, bump(hdr.h.a) };
    apply {
        sm.egress_spec = 1;
        tuple<bit<8>, bit<8>> t = { hdr.h.b, bump(hdr.h.b) };
        pair_t late;
        late = { hdr.h.c, bump(hdr.h.c) };
        hdr.h.a = early.first;
        hdr.h.b = early.second;
        hdr.h.c = t[0];
        hdr.h.d = t[1];
        hdr.h.e = late.first ^ late.second;
        hdr.h.f = meta.p1 ^ meta.p2;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
