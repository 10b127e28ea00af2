/* A control whose branches join again after early returns, a hit/miss table and a switch on the
   action that ran (tests/p4kit/switch/test_control_regions.py): the fast path nests each branch up
   to its join and must do exactly what the node-by-node (traced) pipeline does. */
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> c;
    bit<8> d;
    bit<8> out1;
    bit<8> out2;
    bit<8> out3;
    bit<8> out4;
}

struct headers_t { h_t h; }
struct meta_t { bit<8> tmp; }

parser JP(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control JV(inout headers_t hdr, inout meta_t meta) { apply { } }
control JI(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter(8, CounterType.packets) seen;

    action set_x(bit<8> v) { hdr.h.out2 = hdr.h.out2 + v; }
    action set_y() { hdr.h.out2 = hdr.h.out2 + 2; }
    action mark(bit<8> v) { meta.tmp = v; }

    table t_hitmiss {
        key = { hdr.h.c: exact; }
        actions = { mark; NoAction; }
        default_action = NoAction();
    }
    table t_run {
        key = { hdr.h.b: exact; }
        actions = { set_x; set_y; NoAction; }
        default_action = NoAction();
    }

    apply {
        sm.egress_spec = 1;
        if (hdr.h.a == 1) {
            if (hdr.h.b == 1) {
                mark_to_drop(sm);
                seen.count(0);
                return;
            }
            hdr.h.out1 = 1;
        } else if (hdr.h.a == 2) {
            hdr.h.out1 = 2;
            if (hdr.h.c > 5) {
                hdr.h.out2 = hdr.h.out2 + 3;
            }
        } else {
            hdr.h.out1 = 3;
            if (hdr.h.d == 7) {
                seen.count(1);
                return;
            }
        }
        hdr.h.out3 = hdr.h.out1 + 10;
        if (t_hitmiss.apply().hit) {
            if (hdr.h.d == 0) {
                seen.count(2);
                return;
            }
            hdr.h.out4 = meta.tmp;
        } else {
            hdr.h.out4 = 2;
        }
        switch (t_run.apply().action_run) {
            set_x: { hdr.h.out2 = hdr.h.out2 + 1; }
            set_y: { seen.count(3); return; }
        }
        if (hdr.h.a == 3 || hdr.h.out2 > 4) {
            hdr.h.out3 = hdr.h.out3 + 1;
        }
        seen.count(4);
    }
}
control JE(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control JC(inout headers_t hdr, inout meta_t meta) { apply { } }
control JD(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(JP(), JV(), JI(), JE(), JC(), JD()) main;
