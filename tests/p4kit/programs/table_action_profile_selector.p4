// Tables with implementation = action_profile and action_selector (selector match kind).
// STF cannot install members, so the tables miss; the program checks that a miss runs nothing.
#include <core.p4>
#include <v1model.p4>

header p_t {
    bit<16> key;
    bit<16> flow;
    bit<8>  r1;
    bit<8>  r2;
}

struct headers_t { p_t h; }
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
    action set_port(bit<9> port) { sm.egress_spec = port; }
    action set_r1(bit<8> v) { hdr.h.r1 = v; }

    action_profile(32w128) ap;
    action_selector(HashAlgorithm.crc16, 32w64, 32w14) as;

    table t_prof {
        key = { hdr.h.key: exact; }
        actions = { set_r1; NoAction; }
        implementation = ap;
        size = 128;
    }

    table t_sel {
        key = {
            hdr.h.key: exact;
            hdr.h.flow: selector;
        }
        actions = { set_port; NoAction; }
        implementation = as;
        size = 64;
    }

    apply {
        sm.egress_spec = 2;
        if (t_prof.apply().hit) {
            hdr.h.r1 = hdr.h.r1 | 0x80;
        } else {
            hdr.h.r1 = 0xEE;
        }
        if (t_sel.apply().miss) {
            hdr.h.r2 = 0xEF;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
