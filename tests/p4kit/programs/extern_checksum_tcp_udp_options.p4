// TCP and UDP checksums over pseudo header, header, options and payload: IPv4 options and TCP options
// are varbit fields of run-time width inside the checksum's field list (update_checksum and
// update_checksum_with_payload), and verify_checksum_with_payload checks the TCP checksum on the way
// in (the expected packets were computed with scapy).
#include <core.p4>
#include <v1model.p4>
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen; bit<16> identification;
    bit<3> flags; bit<13> fragOffset; bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
header ipv4_opts_t { varbit<320> options; }
header tcp_t {
    bit<16> srcPort; bit<16> dstPort; bit<32> seqNo; bit<32> ackNo;
    bit<4> dataOffset; bit<4> res; bit<8> flags; bit<16> window; bit<16> checksum; bit<16> urgentPtr;
}
header tcp_opts_t { varbit<320> options; }
header udp_t { bit<16> srcPort; bit<16> dstPort; bit<16> len; bit<16> checksum; }
struct headers_t { ipv4_t ipv4; ipv4_opts_t ipv4_opts; tcp_t tcp; tcp_opts_t tcp_opts; udp_t udp; }
struct meta_t { bit<16> l4len; }
parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ipv4);
        pkt.extract(hdr.ipv4_opts, ((bit<32>)hdr.ipv4.ihl - 5) * 32);
        meta.l4len = hdr.ipv4.totalLen - ((bit<16>)hdr.ipv4.ihl << 2);
        transition select(hdr.ipv4.protocol) { 6: tcp; 17: udp; default: accept; }
    }
    state tcp {
        pkt.extract(hdr.tcp);
        pkt.extract(hdr.tcp_opts, ((bit<32>)hdr.tcp.dataOffset - 5) * 32);
        transition accept;
    }
    state udp { pkt.extract(hdr.udp); transition accept; }
}
control MyVerify(inout headers_t hdr, inout meta_t meta) {
    apply {
        verify_checksum_with_payload(hdr.tcp.isValid(), { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, 8w0,
            hdr.ipv4.protocol, meta.l4len, hdr.tcp.srcPort, hdr.tcp.dstPort, hdr.tcp.seqNo, hdr.tcp.ackNo,
            hdr.tcp.dataOffset, hdr.tcp.res, hdr.tcp.flags, hdr.tcp.window, 16w0,
            hdr.tcp.urgentPtr, hdr.tcp_opts.options }, hdr.tcp.checksum, HashAlgorithm.csum16);
    }
}
control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.checksum_error == 1) {
            mark_to_drop(sm);
            return;
        }
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        if (hdr.tcp.isValid()) {
            hdr.tcp.window = 0x1234;
        }
        if (hdr.udp.isValid()) {
            hdr.udp.dstPort = 0x4321;
        }
        sm.egress_spec = 1;
    }
}
control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(), { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
            hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl, hdr.ipv4.protocol,
            hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4_opts.options }, hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
        update_checksum_with_payload(hdr.tcp.isValid(), { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, 8w0, hdr.ipv4.protocol,
            meta.l4len, hdr.tcp.srcPort, hdr.tcp.dstPort, hdr.tcp.seqNo, hdr.tcp.ackNo, hdr.tcp.dataOffset,
            hdr.tcp.res, hdr.tcp.flags, hdr.tcp.window, 16w0, hdr.tcp.urgentPtr, hdr.tcp_opts.options },
            hdr.tcp.checksum, HashAlgorithm.csum16);
        update_checksum_with_payload(hdr.udp.isValid(), { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, 8w0, hdr.ipv4.protocol,
            hdr.udp.len, hdr.udp.srcPort, hdr.udp.dstPort, hdr.udp.len, 16w0 }, hdr.udp.checksum, HashAlgorithm.csum16);
    }
}
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ipv4); pkt.emit(hdr.ipv4_opts); pkt.emit(hdr.tcp); pkt.emit(hdr.tcp_opts); pkt.emit(hdr.udp); } }
V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
