/* L3 forwarding across the WAN.

   Every host has a /32 route on the switch of its site (port of the host); every other site's
   subnet has a /24 route towards the next hop on the lowest-RTT path. Hosts use static ARP for
   every other host, so frames already carry the right destination MAC and the switch only picks
   the port and decrements the TTL. Non-IPv4 frames are switched on the destination MAC. */
#ifndef TRIBUTARY_FORWARDING_P4
#define TRIBUTARY_FORWARDING_P4

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

    apply {
        if (hdr.ipv4.isValid()) {
            if (hdr.ipv4.ttl <= 1) {
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
