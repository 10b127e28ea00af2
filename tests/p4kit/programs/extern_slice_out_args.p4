// Bit slices as out arguments of extern methods and functions (register read, hash, random): the
// extern writes a temporary that is then put into just the slice's bits (p4c introduces the same
// temporaries); the neighbouring bits keep their values.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<16> a; bit<16> b; bit<16> c; }
struct headers_t { h_t h; }
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
    register<bit<8>>(4) r;
    apply {
        sm.egress_spec = 1;
        r.write(1, 8w0xAB);
        r.read(hdr.h.a[11:4], 1);                                          // a = x AB x
        hash(hdr.h.b[7:0], HashAlgorithm.identity, 8w0, { hdr.h.c[15:8] }, 16w256);  // b's low byte = c's high byte
        random(hdr.h.c[3:0], 4w5, 4w5);                                    // c's low nibble = 5
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
