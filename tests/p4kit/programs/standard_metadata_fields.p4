// standard_metadata as simple_switch fills it: ingress_port, packet_length (bytes received),
// instance_type, egress_port in egress; egress_spec computed from the ingress port.
#include <core.p4>
#include <v1model.p4>

header sm_t {
    bit<16> inport;
    bit<32> len;
    bit<16> eport;
    bit<8>  it;
}

struct headers_t { sm_t h; }
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
        hdr.h.inport = (bit<16>)sm.ingress_port;
        hdr.h.len = sm.packet_length;
        sm.egress_spec = sm.ingress_port + 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.eport = (bit<16>)sm.egress_port;
        hdr.h.it = (bit<8>)sm.instance_type;
    }
}

control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
