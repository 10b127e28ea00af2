// P4's calling convention: arguments are evaluated left to right before the call, out/inout
// parameters are copies that go back to the argument when the callee ends (by return or exit), and
// a callee that reads its argument's storage directly sees the value from before the call.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> op;
    bit<8> a;
    bit<8> b;
    bit<8> c;
    bit<8> d;
}

struct headers_t { h_t h; }
struct meta_t { }

bit<8> bump(inout bit<8> v) {
    v = v + 1;
    return v;
}

bit<8> pair(in bit<8> p, in bit<8> q) {
    return (p << 4) | q;
}

void twice(inout bit<8> s, inout bit<8> t) {
    bit<8> old = s;
    s = t + 1;
    t = old + 2;
}

bit<8> early(inout bit<8> v) {
    v = 3;
    if (v == 3) {
        return 1;
    }
    v = 4;
    return 2;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_and_read(inout bit<8> v) {
        v = 9;
        hdr.h.c = hdr.h.a;      // the argument is hdr.h.a: still its value from before the call
    }
    action inner(inout bit<8> w) {
        w = 0x44;
        hdr.h.c = hdr.h.a;
        exit;                   // w is still copied back, through outer's v, to hdr.h.a
    }
    action outer(inout bit<8> v) {
        inner(v);
        hdr.h.b = 0xEE;         // never runs
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.h.op == 1) {
            bit<8> x = 1;
            hdr.h.b = pair(x, bump(x));      // p is 1 (read before bump runs), q is 2
            hdr.h.d = x;
        } else if (hdr.h.op == 2) {
            set_and_read(hdr.h.a);
        } else if (hdr.h.op == 3) {
            twice(hdr.h.a, hdr.h.a);         // both copies start at a; t is copied back last
        } else if (hdr.h.op == 4) {
            outer(hdr.h.a);
            hdr.h.d = 0xEE;                  // never runs: exit ends the control
        } else if (hdr.h.op == 5) {
            hdr.h.b = early(hdr.h.a);        // the copy-out happens after return too
        } else if (hdr.h.op == 6) {
            hdr.h.b = hdr.h.a + bump(hdr.h.a);   // left operand read before bump runs
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
