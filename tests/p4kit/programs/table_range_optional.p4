// range and optional match kinds (with exact) in const entries; entries are tried in order.
#include <core.p4>
#include <v1model.p4>

header r_t {
    bit<16> x;
    bit<8>  y;
    bit<8>  z;
    bit<8>  r;
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
    action set_r(bit<8> r) { hdr.h.r = r; }

    table trange {
        key = {
            hdr.h.x: range;
            hdr.h.y: optional;
            hdr.h.z: exact;
        }
        actions = { set_r; }
        default_action = set_r(0xFF);
        const entries = {
            (16w10 .. 16w20, 8w1, 8w0): set_r(1);
            (16w10 .. 16w20, _, 8w0): set_r(2);
            (16w100 .. 16w200, _, 8w0): set_r(3);
            (_, 8w7, 8w0): set_r(4);
            (16w0 .. 16w0xFFFF, _, 8w9): set_r(5);
        }
    }

    apply {
        trange.apply();
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
