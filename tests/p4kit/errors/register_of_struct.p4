// expect-error: 25 last_pair: only registers with bit or int types are supported
// p4c's BMv2 back end keeps a register's cells as bit<W> or int<W> values ("Only registers with bit
// or int types are currently supported"); a register of a struct was accepted and then crashed the
// back end. One register per field does it.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<8>  b;
    bit<16> w;
}

struct headers_t { h_t h; }
struct pair_t { bit<8> a; bit<8> b; }
struct meta_t { pair_t last; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<pair_t>(16) last_pair;
    apply {
        last_pair.read(meta.last, 0);
        last_pair.write(0, {hdr.h.a, hdr.h.b});
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
