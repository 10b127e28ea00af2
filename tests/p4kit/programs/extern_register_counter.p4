// register read/write (state carried from packet to packet), an indexed counter, and
// register_write from the control plane.
#include <core.p4>
#include <v1model.p4>

header r_t {
    bit<8>  idx;
    bit<32> inc;
    bit<32> old;
}

struct headers_t { r_t h; }
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
    register<bit<32>>(8) acc;
    counter(8, CounterType.packets) pkts;

    action accumulate() {
        bit<32> cur;
        acc.read(cur, (bit<32>)hdr.h.idx);
        acc.write((bit<32>)hdr.h.idx, cur + hdr.h.inc);
        hdr.h.old = cur;
    }

    apply {
        accumulate();
        pkts.count((bit<32>)hdr.h.idx);
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
