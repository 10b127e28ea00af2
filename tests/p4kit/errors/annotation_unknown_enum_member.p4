// expect-error: 10 'Missing' is not a member of enum 'Lists'
#include <core.p4>
#include <v1model.p4>

enum bit<8> Lists { Keep = 1 }

header h_t { bit<8> a; }
struct headers_t { h_t h; }
struct meta_t {
    @field_list(Lists.Missing)
    bit<8> x;
}

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
        clone_preserving_field_list(CloneType.I2E, 5, Lists.Keep);
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
