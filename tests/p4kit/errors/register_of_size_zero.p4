// expect-error: 23 seen: direct registers are not supported in bmv2
// A register of size 0 would be a direct register (one cell per table entry), which BMv2 does not
// have: p4c refuses it ("direct registers are not supported in bmv2").
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<8>  b;
    bit<16> w;
}

struct headers_t { h_t h; }
struct meta_t { bit<8> x; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<8>>(0) seen;
    apply {
        seen.write(0, hdr.h.a);
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
