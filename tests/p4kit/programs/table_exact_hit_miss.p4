// Exact-match tables: size, default_action (changeable) vs const default_action, .hit and .miss,
// action parameters, a default action run on a miss still counts as a miss.
#include <core.p4>
#include <v1model.p4>

header k_t {
    bit<16> key;
    bit<8>  res;
    bit<8>  hm;
    bit<8>  res2;
}

struct headers_t { k_t h; }
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
    action set_res(bit<8> v, bit<9> port) {
        hdr.h.res = v;
        sm.egress_spec = port;
    }
    action set_res2(bit<8> v) {
        hdr.h.res2 = v;
    }

    table t_exact {
        key = { hdr.h.key: exact; }
        actions = { set_res; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    table t2 {
        key = { hdr.h.key: exact; }
        actions = { set_res2; }
        const default_action = set_res2(8w0xEE);
        size = 16;
    }

    apply {
        if (t_exact.apply().hit) {
            hdr.h.hm = 0x11;
        } else {
            hdr.h.hm = 0x22;
        }
        if (t2.apply().miss) {
            hdr.h.hm = hdr.h.hm | 0x80;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
