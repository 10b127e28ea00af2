// `...` default values (P4_16 1.2.4): a plain `x = ...` (0, false, the first enum member, an
// invalid header), struct and tuple initializers that end with `...` (the other fields get their
// defaults), `{f = 5, ...}` for a header (valid, other fields 0); and compound assignment (+=, |=,
// -=, ^=) on header stack elements with constant and run-time indices.
#include <core.p4>
#include <v1model.p4>

enum Color { RED, GREEN, BLUE }

header h_t {
    bit<8> op;
    bit<8> i;
    bit<8> r0;
    bit<8> r1;
    bit<8> r2;
    bit<8> r3;
}

header x_t {
    bit<8> f1;
    bit<8> f2;
}

header s_t {
    bit<8> v;
}

struct inner_t {
    bit<8> p;
    bool   b;
    Color  c;
}

struct headers_t {
    h_t    h;
    s_t[3] s;
    x_t    x;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.h.op == 1) {
            bit<8> z = ...;
            bool b = ...;
            Color c = ...;
            inner_t st = { p = 7, ... };
            tuple<bit<8>, bit<8>> tp = { 9, ... };
            hdr.h.r0 = z + st.p;                                   // 0 + 7
            hdr.h.r1 = (b || st.b) ? 8w1 : 8w0;                     // false
            hdr.h.r2 = (c == Color.RED && st.c == Color.RED) ? 8w2 : 8w3;
            hdr.h.r3 = tp[0] + tp[1];                               // 9 + 0
            hdr.x = { f2 = 5, ... };                                // valid: f1 0, f2 5
        } else if (hdr.h.op == 2) {
            hdr.x = { f1 = 1, f2 = 2 };
            hdr.x = ...;                                            // invalid again: not emitted
            hdr.s[0] = ...;                                         // invalid: not emitted
        } else if (hdr.h.op == 3) {
            hdr.s[0].v += 1;
            hdr.s[1].v |= 0xF0;
            hdr.s[2].v -= 2;
            hdr.s[hdr.h.i].v ^= 0xFF;                               // run-time index
            hdr.s[2].v += 0x10;                                     // the last one extracted
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.x);
        pkt.emit(hdr.s);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
