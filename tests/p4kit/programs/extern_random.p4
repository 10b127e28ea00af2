// random() with a one-value range and a small range, and hash() with a modulus of 1 (the result is
// always the base). HashAlgorithm.random is not used: BMv2 registers no "random" hash.
#include <core.p4>
#include <v1model.p4>

header rnd_t {
    bit<8>  fixed;
    bit<8>  small;
    bit<16> hrand;
}

struct headers_t { rnd_t h; }
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
        random(hdr.h.fixed, 8w7, 8w7);
        random(hdr.h.small, 8w0, 8w15);
        hash(hdr.h.hrand, HashAlgorithm.xor16, 16w0x1234, { hdr.h.fixed, hdr.h.small }, 32w1);
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
