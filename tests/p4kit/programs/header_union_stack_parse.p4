// A stack of header unions: the parser extracts each element as one member or the other (by the
// next byte), `next` walks the union stack, the members of one element exclude each other, and a
// fourth element overflows (StackOutOfBounds; the packet still reaches ingress with what was parsed).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> res;
    bit<8> n;       // how many options follow
}

header one_t {
    bit<8> kind;    // 1
    bit<8> x;
}

header two_t {
    bit<8>  kind;   // 2
    bit<16> y;
}

header_union opt_t {
    one_t one;
    two_t two;
}

struct headers_t {
    h_t      h;
    opt_t[3] opts;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.n) {
            0: accept;
            default: next_opt;
        }
    }
    state next_opt {
        hdr.h.n = hdr.h.n - 1;
        transition select(pkt.lookahead<bit<8>>()) {
            1: parse_one;
            2: parse_two;
        }
    }
    state parse_one {
        pkt.extract(hdr.opts.next.one);
        transition select(hdr.h.n) {
            0: accept;
            default: next_opt;
        }
    }
    state parse_two {
        pkt.extract(hdr.opts.next.two);
        transition select(hdr.h.n) {
            0: accept;
            default: next_opt;
        }
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        bit<8> r = 0;
        if (hdr.opts[0].one.isValid()) { r = r | 0x01; hdr.opts[0].one.x = hdr.opts[0].one.x + 1; }
        if (hdr.opts[0].two.isValid()) { r = r | 0x02; }
        if (hdr.opts[1].one.isValid()) { r = r | 0x04; }
        if (hdr.opts[1].two.isValid()) { r = r | 0x08; hdr.opts[1].two.y = 0xBEEF; }
        if (hdr.opts[2].isValid()) { r = r | 0x10; }
        if (sm.parser_error == error.StackOutOfBounds) { r = r | 0x80; }
        hdr.h.res = r;
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.opts);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
