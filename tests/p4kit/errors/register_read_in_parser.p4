// expect-error: 20 seen\.read.*unsupported in parser
// An extern method other than packet_in's extract, lookahead and advance has no parser operation in
// p4c's BMv2 back end ("Unsupported in parser on this target"): read the register in ingress.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<8>  b;
    bit<16> w;
}

struct headers_t { h_t h; }
struct meta_t { bit<8> x; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    register<bit<8>>(16) seen;
    state start {
        seen.read(meta.x, 0);
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
