/* Multicast whose egress tells the replicas apart (tests/p4kit/switch/test_dataplane_mcast_fast.py):
   each copy records its port, rid and instance type, port 3's copies are dropped in egress, and a
   checksum over the header is computed again on the way out. */
#include <core.p4>
#include <v1model.p4>

header m_h {
    bit<16> group;
    bit<16> rid;
    bit<16> port;
    bit<32> itype;
    bit<16> sum;
}

struct headers_t { m_h m; }
struct meta_t { }

parser MP(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.m); transition accept; }
}
control MV(inout headers_t hdr, inout meta_t meta) { apply { } }
control MI(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.m.group == 0) {
            sm.egress_spec = 9;
        } else {
            sm.mcast_grp = hdr.m.group;
        }
    }
}
control ME(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.m.rid = sm.egress_rid;
        hdr.m.port = (bit<16>) sm.egress_port;
        hdr.m.itype = sm.instance_type;
        if (sm.egress_port == 3) {
            mark_to_drop(sm);
        }
    }
}
control MC(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(true, { hdr.m.group, hdr.m.rid, hdr.m.port, hdr.m.itype }, hdr.m.sum, HashAlgorithm.csum16);
    }
}
control MD(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.m); } }

V1Switch(MP(), MV(), MI(), ME(), MC(), MD()) main;
