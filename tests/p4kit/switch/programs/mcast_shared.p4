/* Multicast replicas that own some headers and share others (tests/p4kit/switch/test_replicas.py):
   egress writes a and b (b only when its own flag says so, so a replica that saw a sibling's write
   would differ) and reads c, which the replicas share; the checksum covers a and c. */
#include <core.p4>
#include <v1model.p4>

header a_h {
    bit<16> group;
    bit<16> port;
    bit<16> sum;
}
header b_h {
    bit<8> flag;
    bit<8> seen;
}
header c_h {
    bit<32> val;
}

struct headers_t { a_h a; b_h b; c_h c; }
struct meta_t { }

parser SP(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.a); pkt.extract(hdr.b); pkt.extract(hdr.c); transition accept; }
}
control SV(inout headers_t hdr, inout meta_t meta) { apply { } }
control SI(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.mcast_grp = hdr.a.group; }
}
control SE(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.b.flag == 0) {
            hdr.b.flag = 1;
            hdr.a.port = (bit<16>) sm.egress_port;
        } else {
            hdr.b.seen = hdr.b.seen + 1;
        }
        if (hdr.c.val == 5) {
            hdr.a.port = hdr.a.port + 100;
        }
    }
}
control SC(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(true, { hdr.a.group, hdr.a.port, hdr.c.val }, hdr.a.sum, HashAlgorithm.csum16);
    }
}
control SD(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.a); pkt.emit(hdr.b); pkt.emit(hdr.c); } }

V1Switch(SP(), SV(), SI(), SE(), SC(), SD()) main;
