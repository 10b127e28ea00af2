// direct_counter and direct_meter attached to a table (counters = / meters =), direct_meter.read
// in the table's action. An unconfigured meter marks every packet GREEN (0).
#include <core.p4>
#include <v1model.p4>

header d_t {
    bit<16> key;
    bit<8>  color;
    bit<8>  hit;
}

struct headers_t { d_t h; }
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
    direct_counter(CounterType.packets_and_bytes) dc;
    direct_meter<bit<8>>(MeterType.bytes) dm;

    action metered(bit<9> port) {
        dm.read(hdr.h.color);
        sm.egress_spec = port;
        hdr.h.hit = 1;
    }
    action unmetered() {
        hdr.h.hit = 2;
    }

    table t {
        key = { hdr.h.key: exact; }
        actions = { metered; unmetered; }
        default_action = unmetered();
        counters = dc;
        meters = dm;
        size = 32;
    }

    apply {
        t.apply();
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
