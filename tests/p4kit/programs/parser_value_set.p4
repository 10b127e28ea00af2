// A parser value_set next to constant cases. With no members installed the value set matches
// nothing, so traffic takes the constant cases or the default.
#include <core.p4>
#include <v1model.p4>

header eth_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header mark_t { bit<8> path; }

struct headers_t {
    eth_t  eth;
    mark_t mark;
}

struct meta_t { bit<8> path; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    value_set<bit<16>>(4) custom_types;

    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) {
            custom_types: in_set;
            0x0800: known;
            default: other;
        }
    }
    state in_set { meta.path = 1; transition accept; }
    state known { meta.path = 2; transition accept; }
    state other { meta.path = 3; transition accept; }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.mark.setValid();
        hdr.mark.path = meta.path;
        sm.egress_spec = 2;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.mark);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
