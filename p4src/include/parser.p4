/* Parser and deparser: Ethernet, IPv4 (without options) and UDP; checksums. An INC packet that is too
   short stops the parser with the INC headers invalid, and the ingress drops it (it never gets routed). */
#ifndef TRIBUTARY_PARSER_P4
#define TRIBUTARY_PARSER_P4

parser TributaryParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                       inout standard_metadata_t std_meta) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IPPROTO_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            INC_UDP_PORT: parse_inc;
            EDGE_UDP_PORT: parse_inc;
            default: accept;
        }
    }
    state parse_inc {
        pkt.extract(hdr.inc);
        transition select(hdr.inc.format) {
            INC_FMT_INT32: parse_values;
            INC_FMT_INT8: parse_packed;
            INC_FMT_INT4: parse_packed;
            INC_FMT_WIDE32: parse_wide;
            INC_FMT_WIDE16: parse_wide;
            INC_FMT_EMPTY: accept;
            default: parse_values;
        }
    }
    state parse_values {
        pkt.extract(hdr.values);
        transition accept;
    }
    state parse_packed {
        pkt.extract(hdr.w0);
        transition accept;
    }
    state parse_wide {
        pkt.extract(hdr.w0);
        pkt.extract(hdr.w1);
        pkt.extract(hdr.w2);
        pkt.extract(hdr.w3);
        transition accept;
    }
}

control TributaryDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.inc);
        pkt.emit(hdr.values);
        pkt.emit(hdr.w0);
        pkt.emit(hdr.w1);
        pkt.emit(hdr.w2);
        pkt.emit(hdr.w3);
    }
}

/* The IPv4 header checksum, and the UDP checksum of every INC packet: summed in ones' complement over
   the pseudo-header, the UDP header (its checksum field included) and the INC payload, a valid packet
   gives 0xFFFF, whose complement is 0 (meta.zero). This also accepts both encodings of a zero sum (0 and
   0xFFFF) and refuses a packet sent without a checksum. A mismatch sets checksum_error; the ingress drops. */
#define INC_UDP_CHECKSUM_FIELDS \
    hdr.ipv4.src_addr, hdr.ipv4.dst_addr, 8w0, hdr.ipv4.protocol, hdr.udp.length, \
    hdr.udp.src_port, hdr.udp.dst_port, hdr.udp.length

control TributaryVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
        verify_checksum(hdr.values.isValid(),
            { INC_UDP_CHECKSUM_FIELDS, hdr.udp.checksum, hdr.inc, hdr.values },
            meta.zero, HashAlgorithm.csum16);
        /* the packed and wide layouts: a list each, so that every list is straight-line code */
        verify_checksum(hdr.w0.isValid() && !hdr.w3.isValid(),
            { INC_UDP_CHECKSUM_FIELDS, hdr.udp.checksum, hdr.inc, hdr.w0 },
            meta.zero, HashAlgorithm.csum16);
        verify_checksum(hdr.w3.isValid(),
            { INC_UDP_CHECKSUM_FIELDS, hdr.udp.checksum, hdr.inc, hdr.w0, hdr.w1, hdr.w2, hdr.w3 },
            meta.zero, HashAlgorithm.csum16);
        verify_checksum(hdr.inc.isValid() && hdr.inc.format == INC_FMT_EMPTY && !hdr.values.isValid(),
            { INC_UDP_CHECKSUM_FIELDS, hdr.udp.checksum, hdr.inc },
            meta.zero, HashAlgorithm.csum16);
    }
}

/* Every INC packet that leaves carries a fresh UDP checksum: the switches rewrite values, counts, flags
   and, towards workers, addresses and ports. */
control TributaryComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
        update_checksum(hdr.values.isValid(),
            { INC_UDP_CHECKSUM_FIELDS, hdr.inc, hdr.values },
            hdr.udp.checksum, HashAlgorithm.csum16);
        update_checksum(hdr.w3.isValid(),
            { INC_UDP_CHECKSUM_FIELDS, hdr.inc, hdr.w0, hdr.w1, hdr.w2, hdr.w3 },
            hdr.udp.checksum, HashAlgorithm.csum16);
        update_checksum(hdr.inc.isValid() && hdr.inc.format == INC_FMT_EMPTY && !hdr.values.isValid(),
            { INC_UDP_CHECKSUM_FIELDS, hdr.inc },
            hdr.udp.checksum, HashAlgorithm.csum16);
    }
}

#endif
