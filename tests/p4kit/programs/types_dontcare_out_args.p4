// `_` as an out argument: the callee writes a value nobody keeps (P4_16 spec, "don't care" arguments;
// p4c gives each call its own temporary). Here the parser skips a header by extracting it into `_`,
// an action, a function and a register read each get `_` for one out parameter and a real variable
// for another, and the real ones must still arrive.
#include <core.p4>
#include <v1model.p4>

header skip_t { bit<16> junk; }

header h_t {
    bit<8> op;
    bit<8> a;
    bit<8> b;
    bit<8> c;
}

struct headers_t { h_t h; }
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract<skip_t>(_);
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

bit<8> split(in bit<8> x, out bit<8> hi, out bit<8> lo) {
    hi = x >> 4;
    lo = x & 0x0f;
    return x + 1;
}

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<8>>(4) r;

    action two_outs(out bit<8> first, out bit<8> second) {
        first = 0x11;
        second = 0x22;
    }

    apply {
        sm.egress_spec = 1;
        r.write(0, 0x5a);
        if (hdr.h.op == 1) {
            two_outs(_, hdr.h.b);          // only the second value is kept
        } else if (hdr.h.op == 2) {
            two_outs(hdr.h.a, _);          // only the first
        } else if (hdr.h.op == 3) {
            bit<8> lo;
            hdr.h.c = split(hdr.h.a, _, lo); // the return value and one out still arrive
            hdr.h.b = lo;
        } else if (hdr.h.op == 4) {
            r.read(_, 0);                  // a read into nothing changes nothing
            r.read(hdr.h.c, 0);
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
