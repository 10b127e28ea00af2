// Nested structs in metadata, struct initialisers (positional and named), header-to-header
// assignment (copies validity), setValid on an unparsed header, a tuple local passed to an extern.
#include <core.p4>
#include <v1model.p4>

header pair_h { bit<8> f1; bit<8> f2; }
header other_h { bit<8> g1; bit<8> g2; }
header wide_h { bit<16> v; }

struct pair_t {
    bit<8> x;
    bit<8> y;
}

struct headers_t {
    pair_h  a;
    pair_h  copy;
    other_h b;
    wide_h  c;
}

struct meta_t {
    pair_t p;
    bit<8> z;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.a);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        meta.p = { hdr.a.f2, hdr.a.f1 };
        pair_t q = { x = 8w1, y = 8w2 };
        hdr.copy = hdr.a;
        hdr.copy.f1 = meta.p.x;
        hdr.b.setValid();
        hdr.b.g1 = q.x + meta.p.y;
        hdr.b.g2 = q.y;
        tuple<bit<8>, bit<8>> t = { hdr.a.f1, hdr.a.f2 };
        hdr.c.setValid();
        hash(hdr.c.v, HashAlgorithm.identity, 16w0, t, 32w65536);
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.a);
        pkt.emit(hdr.copy);
        pkt.emit(hdr.b);
        pkt.emit(hdr.c);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
