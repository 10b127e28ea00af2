/* Tributary's switch program (P4_16, v1model): WAN forwarding (include/forwarding.p4) and the
   in-network aggregation protocol of docs/protocol.md (include/aggregation.p4). Compile with
       p4kit-p4c --p4v 16 -o build/inc.json --p4runtime-files build/inc.p4info.txtpb p4src/inc.p4
   or, with the real tools, p4c-bm2-ss and the same flags. */
#include <core.p4>
#include <v1model.p4>

#include "include/headers.p4"
#include "include/parser.p4"
#include "include/forwarding.p4"
#include "include/aggregation.p4"
#include "include/edge_multicast.p4"

control TributaryIngress(inout headers_t hdr, inout metadata_t meta,
                         inout standard_metadata_t std_meta) {
    SourceGuard() guard;
    Forwarding() forwarding;
    Aggregation() aggregation;
    EdgeMulticast() edge_multicast;
    apply {
        if (hdr.ipv4.isValid()) {
            guard.apply(hdr, meta, std_meta);
            if (std_meta.egress_spec == 511) {
                return;  /* denied: a spoofed source */
            }
        }
        if (hdr.udp.isValid() && hdr.udp.dst_port == INC_UDP_PORT) {
            /* every packet to the INC port, well-formed or not, is the aggregation's to take or drop */
            aggregation.apply(hdr, meta, std_meta);
        } else if (hdr.udp.isValid() && hdr.udp.dst_port == EDGE_UDP_PORT) {
            /* Edge-INC streams are only replicated, along the source's tree of the packet's round */
            edge_multicast.apply(hdr, meta, std_meta);
        } else {
            forwarding.apply(hdr, meta, std_meta);
        }
    }
}

control TributaryEgress(inout headers_t hdr, inout metadata_t meta,
                        inout standard_metadata_t std_meta) {
    Delivery() delivery;
    EdgeDelivery() edge_delivery;
    apply {
        if (hdr.udp.isValid() && hdr.udp.dst_port == EDGE_UDP_PORT) {
            edge_delivery.apply(hdr, meta, std_meta);
        } else {
            delivery.apply(hdr, meta, std_meta);
        }
    }
}

V1Switch(TributaryParser(), TributaryVerifyChecksum(), TributaryIngress(), TributaryEgress(),
         TributaryComputeChecksum(), TributaryDeparser()) main;
