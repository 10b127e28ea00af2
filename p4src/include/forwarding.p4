/* L3 forwarding across the WAN.

   Every host has a /32 route on the switch of its site (port of the host); every other site's
   subnet has a /24 route towards the next hop on the lowest-RTT path. Hosts use static ARP for
   every other host, so frames already carry the right destination MAC and the switch only picks
   the port and decrements the TTL. Non-IPv4 frames are switched on the destination MAC. */
#ifndef TRIBUTARY_FORWARDING_P4
#define TRIBUTARY_FORWARDING_P4

/* indices of guard_stats */
const bit<32> GUARD_SPOOFED_SOURCE = 0;  /* a host sent from an address that is not its own */
const bit<32> GUARD_WORKER_PORT    = 1;  /* a routed packet addressed to a worker's result port */
const bit<32> GUARD_BAD_CHECKSUM   = 2;  /* an IPv4 header whose checksum does not hold */
const bit<32> GUARD_TRUNCATED      = 3;  /* an IPv4 packet shorter than its header says */

/* Applied to every IPv4 packet before aggregation or routing. A host port carries only that host's own
   source address: the controller installs (port, host address/32) -> permit and (port, 0/0) -> deny for
   every host port; ports towards other switches have no entry and pass. So no host can pose as another
   host, as a switch's INC address (the source of every result) or as another tenant's worker. */
control SourceGuard(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std_meta) {
    counter(4, CounterType.packets_and_bytes) guard_stats;

    action permit() {
    }

    action deny() {
        mark_to_drop(std_meta);
        guard_stats.count(GUARD_SPOOFED_SOURCE);
    }

    table source_guard {
        key = {
            std_meta.ingress_port: exact;
            hdr.ipv4.src_addr: lpm;
        }
        actions = { permit; deny; }
        default_action = permit();
        size = 1024;
    }

    apply {
        source_guard.apply();
    }
}

control Forwarding(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t std_meta) {
    direct_counter(CounterType.packets_and_bytes) route_hits;
    counter(512, CounterType.packets_and_bytes) tx_port;

    action drop() {
        mark_to_drop(std_meta);
    }

    action route(bit<9> port) {
        std_meta.egress_spec = port;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        meta.routed = 1;
        route_hits.count();
    }

    action route_drop() {
        mark_to_drop(std_meta);
        route_hits.count();
    }

    table ipv4_routes {
        key = { hdr.ipv4.dst_addr: lpm; }
        actions = { route; route_drop; }
        default_action = route_drop();
        counters = route_hits;
        size = 1024;
    }

    action switch_to(bit<9> port) {
        std_meta.egress_spec = port;
    }

    table l2_switch {
        key = { hdr.ethernet.dst_addr: exact; }
        actions = { switch_to; drop; }
        default_action = drop();
        size = 1024;
    }

    counter(4, CounterType.packets_and_bytes) route_guard;

    apply {
        if (hdr.ipv4.isValid()) {
            if (std_meta.checksum_error == 1) {
                drop();
                route_guard.count(GUARD_BAD_CHECKSUM);
            } else if (std_meta.packet_length < 14 + (bit<32>) hdr.ipv4.total_len) {
                /* cut short (a UDP header that did not fit, say): never routed on */
                drop();
                route_guard.count(GUARD_TRUNCATED);
            } else if (hdr.udp.isValid() && hdr.udp.dst_port > WORKER_PORT_BASE
                    && hdr.udp.dst_port <= WORKER_PORT_BASE + INC_MAX_TENANT) {
                /* only the switches deliver to worker ports (Delivery, from an INC packet) */
                drop();
                route_guard.count(GUARD_WORKER_PORT);
            } else if (hdr.ipv4.ttl <= 1) {
                drop();
            } else {
                ipv4_routes.apply();
            }
        } else {
            l2_switch.apply();
        }
        if (std_meta.egress_spec != 511) {
            tx_port.count((bit<32>) std_meta.egress_spec);
        }
    }
}

#endif
