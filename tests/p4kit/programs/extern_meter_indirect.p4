// An indexed meter (execute_meter) and a bytes counter. Without configured rates BMv2's meters
// return GREEN (0) for every packet.
#include <core.p4>
#include <v1model.p4>

header m_t {
    bit<8> idx;
    bit<8> color;
}

struct headers_t { m_t h; }
struct meta_t { bit<8> color; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    meter(16, MeterType.packets) pm;
    counter(16, CounterType.bytes) octets;
    counter(16, CounterType.packets_and_bytes) both;

    apply {
        pm.execute_meter((bit<32>)hdr.h.idx, meta.color);
        hdr.h.color = meta.color;
        octets.count((bit<32>)hdr.h.idx);
        both.count((bit<32>)hdr.h.idx);
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
