/* Copies the traffic manager's view of each packet into the packet (tests/p4kit/switch/test_queues.py).
   A probe arrives with a tag and the priority it asks for; ingress sends it to port 2 at that
   priority; egress writes standard_metadata's queue fields into the probe. */
#include <core.p4>
#include <v1model.p4>

header probe_h {
    bit<8>  tag;
    bit<8>  prio;
    bit<32> enq_ts;
    bit<32> enq_depth;
    bit<32> deq_delta;
    bit<32> deq_depth;
    bit<8>  out_prio;
}

struct headers_t { probe_h probe; }
struct meta_t { }

parser ProbeParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.probe);
        transition accept;
    }
}

control ProbeVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control ProbeIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        sm.priority = (bit<3>) hdr.probe.prio;
    }
}

control ProbeEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.probe.enq_ts = sm.enq_timestamp;
        hdr.probe.enq_depth = (bit<32>) sm.enq_qdepth;
        hdr.probe.deq_delta = sm.deq_timedelta;
        hdr.probe.deq_depth = (bit<32>) sm.deq_qdepth;
        hdr.probe.out_prio = (bit<8>) sm.priority;
    }
}

control ProbeCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control ProbeDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.probe); }
}

V1Switch(ProbeParser(), ProbeVerify(), ProbeIngress(), ProbeEgress(), ProbeCompute(), ProbeDeparser()) main;
