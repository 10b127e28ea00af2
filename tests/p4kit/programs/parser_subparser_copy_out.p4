// Sub-parser arguments follow copy-in/copy-out too: a bit slice as an out argument gets its bits
// written when the sub-parser accepts, and two inout arguments on the same storage (`hdr` and
// `hdr.h`) are written back in parameter order, the later one winning.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; }
struct headers_t { h_t h; }
struct meta_t { bit<16> m; }

parser Sub(packet_in pkt, inout headers_t all, inout h_t one, out bit<4> nib) {
    state start {
        all.h.a = all.h.a + 1;
        one.a = one.a + 2;
        nib = 4w9;
        transition accept;
    }
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    Sub() sub;
    state start {
        pkt.extract(hdr.h);
        meta.m = 16w0x1234;
        sub.apply(pkt, hdr, hdr.h, meta.m[7:4]);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.h.b = meta.m[7:0];   // 0x34 with its nibble 7:4 replaced: 0x94
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
