// Multicast through standard_metadata.mcast_grp: the replication engine copies the packet to each
// (port, rid) of the group; egress sees egress_port, egress_rid and instance_type 5 (REPLICATION).
#include <core.p4>
#include <v1model.p4>

header mc_t {
    bit<16> grp;
    bit<16> rid;
    bit<16> port;
    bit<8>  it;
}

struct headers_t { mc_t h; }
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
        if (hdr.h.grp != 0) {
            sm.mcast_grp = hdr.h.grp;
        } else {
            sm.egress_spec = 4;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.rid = sm.egress_rid;
        hdr.h.port = (bit<16>)sm.egress_port;
        hdr.h.it = (bit<8>)sm.instance_type;
    }
}

control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
