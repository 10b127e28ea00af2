// v1model hash() with crc16, crc32, crc16_custom, crc32_custom (BMv2 defaults equal the standard
// CRCs), csum16, xor16 and identity over the same 4 data bytes; one with a base and a modulus.
#include <core.p4>
#include <v1model.p4>

header hsh_t {
    bit<16> d0;
    bit<16> d1;
    bit<16> o_crc16;
    bit<32> o_crc32;
    bit<16> o_crc16c;
    bit<32> o_crc32c;
    bit<16> o_csum16;
    bit<16> o_xor16;
    bit<32> o_ident;
    bit<16> o_mod;
}

struct headers_t { hsh_t h; }
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
        hash(hdr.h.o_crc16, HashAlgorithm.crc16, 16w0, { hdr.h.d0, hdr.h.d1 }, 32w65536);
        hash(hdr.h.o_crc32, HashAlgorithm.crc32, 32w0, { hdr.h.d0, hdr.h.d1 }, 64w4294967296);
        hash(hdr.h.o_crc16c, HashAlgorithm.crc16_custom, 16w0, { hdr.h.d0, hdr.h.d1 }, 32w65536);
        hash(hdr.h.o_crc32c, HashAlgorithm.crc32_custom, 32w0, { hdr.h.d0, hdr.h.d1 }, 64w4294967296);
        hash(hdr.h.o_csum16, HashAlgorithm.csum16, 16w0, { hdr.h.d0, hdr.h.d1 }, 32w65536);
        hash(hdr.h.o_xor16, HashAlgorithm.xor16, 16w0, { hdr.h.d0, hdr.h.d1 }, 32w65536);
        hash(hdr.h.o_ident, HashAlgorithm.identity, 32w0, { hdr.h.d0, hdr.h.d1 }, 64w4294967296);
        hash(hdr.h.o_mod, HashAlgorithm.crc16, 16w100, { hdr.h.d0, hdr.h.d1 }, 32w10);
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
