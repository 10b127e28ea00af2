/* Edge-INC in the switches (docs/edge-inc.md): replication only, no aggregation.

   A clique member's edge host sends its stream once, as UDP to EDGE_UDP_PORT with the INC header of
   protocol version 2. Every switch on the source's distribution tree looks the packet up by (tenant,
   round, source address) and hands it to the packet replication engine with that tree's multicast group
   here: the ports towards the tree's next switches, and the site's edge host when the site is a member.
   The round comes from the packet, so a rotating schedule changes trees at packet speed; the controller
   installs every round's groups and entries before the job starts (controller/edge/).

   Egress: a replica leaving towards an edge host gets that host's MAC and IP address, so its kernel
   takes it (the UDP checksum is recomputed with the INC payload's). edge_rx and edge_tx count the Edge-INC
   packets and bytes per ingress and egress port: the evidence that each WAN link carries each stream once;
   edge_tree_traffic counts them per tree entry (tenant, round, source). */
#ifndef TRIBUTARY_EDGE_MULTICAST_P4
#define TRIBUTARY_EDGE_MULTICAST_P4

/* indices of edge_stats */
const bit<32> EDGE_STAT_REPLICATED = 0;  /* looked up and handed to its tree's group */
const bit<32> EDGE_STAT_NO_TREE    = 1;  /* no tree for (tenant, round, source): dropped */
const bit<32> EDGE_STAT_MALFORMED  = 2;  /* truncated, wrong version, bad checksum: dropped */

control EdgeMulticast(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std_meta) {
    counter(4, CounterType.packets_and_bytes) edge_stats;
    counter(512, CounterType.packets_and_bytes) edge_rx;
    /* per entry, so per (tenant, round, source) tree at this switch: what the job view shows per round */
    direct_counter(CounterType.packets_and_bytes) edge_tree_traffic;

    action edge_replicate(bit<16> grp) {
        std_meta.mcast_grp = grp;
        edge_tree_traffic.count();
        edge_stats.count(EDGE_STAT_REPLICATED);
    }

    action edge_no_tree() {
        mark_to_drop(std_meta);
        edge_stats.count(EDGE_STAT_NO_TREE);
    }

    table edge_mcast {
        key = {
            hdr.inc.tenant: exact;
            hdr.inc.round: exact;
            hdr.ipv4.src_addr: exact;
        }
        actions = { edge_replicate; edge_no_tree; }
        default_action = edge_no_tree();
        counters = edge_tree_traffic;
        size = 4096;
    }

    apply {
        edge_rx.count((bit<32>) std_meta.ingress_port);
        if (!hdr.values.isValid() || std_meta.checksum_error == 1 || hdr.inc.version != INC_VERSION) {
            mark_to_drop(std_meta);
            edge_stats.count(EDGE_STAT_MALFORMED);
        } else {
            edge_mcast.apply();
        }
    }
}

control EdgeDelivery(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std_meta) {
    counter(512, CounterType.packets_and_bytes) edge_tx;

    action edge_to_host(bit<48> mac, bit<32> ip) {
        hdr.ethernet.dst_addr = mac;
        hdr.ipv4.dst_addr = ip;
    }

    table edge_hosts {
        key = {
            hdr.inc.tenant: exact;
            std_meta.egress_port: exact;
        }
        actions = { edge_to_host; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    apply {
        edge_tx.count((bit<32>) std_meta.egress_port);
        edge_hosts.apply();
    }
}

#endif
