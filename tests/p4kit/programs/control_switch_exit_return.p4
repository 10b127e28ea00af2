// switch on table.apply().action_run with a default label, return inside a control, exit inside
// an action (ends ingress, egress still runs), if/else.
#include <core.p4>
#include <v1model.p4>

header s_t {
    bit<8> k;
    bit<8> r1;
    bit<8> r2;
    bit<8> r3;
    bit<8> r4;
}

struct headers_t { s_t h; }
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
    action act_a() { hdr.h.r1 = 0x11; }
    action act_b() { hdr.h.r1 = 0x22; sm.egress_spec = 3; }
    action act_exit() {
        hdr.h.r1 = 0x33;
        sm.egress_spec = 2;
        exit;
    }

    table tsel {
        key = { hdr.h.k: exact; }
        actions = { act_a; act_b; act_exit; NoAction; }
        default_action = NoAction();
        const entries = {
            8w1: act_a();
            8w2: act_b();
            8w3: act_exit();
        }
    }

    apply {
        hdr.h.r2 = 0;
        switch (tsel.apply().action_run) {
            act_a: {
                hdr.h.r2 = 0xAA;
            }
            act_b: {
                hdr.h.r2 = 0xBB;
                return;
            }
            default: {
                hdr.h.r2 = 0xDD;
            }
        }
        hdr.h.r3 = 0x77;
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.r4 = 0x99;
    }
}

control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
