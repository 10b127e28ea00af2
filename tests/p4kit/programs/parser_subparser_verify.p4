// A sub-parser instance applied from a state, verify() with a user error inside it, a select
// without default (no match raises error.NoMatch) and an explicit reject case.
#include <core.p4>
#include <v1model.p4>

error { InnerTooLong }

header outer_t {
    bit<8> has_inner;
    bit<8> err;
}

header inner_t {
    bit<8> len;
    bit<8> v;
}

struct headers_t {
    outer_t outer;
    inner_t inner;
}

struct meta_t { bit<8> seen; }

parser InnerParser(packet_in pkt, out inner_t inner, inout meta_t meta) {
    state start {
        pkt.extract(inner);
        meta.seen = 1;
        verify(inner.len <= 8w10, error.InnerTooLong);
        transition accept;
    }
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    InnerParser() inner_p;

    state start {
        pkt.extract(hdr.outer);
        transition select(hdr.outer.has_inner) {
            0: accept;
            1: parse_inner;
            0xFF: reject;
        }
    }
    state parse_inner {
        inner_p.apply(pkt, hdr.inner, meta);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.NoError) {
            hdr.outer.err = 0;
            if (hdr.inner.isValid()) {
                hdr.inner.v = hdr.inner.v + hdr.inner.len;
            }
        } else {
            hdr.inner.setInvalid();
            if (sm.parser_error == error.NoMatch) {
                hdr.outer.err = 1;
            } else if (sm.parser_error == error.InnerTooLong) {
                hdr.outer.err = 2;
            } else {
                hdr.outer.err = 3;
            }
        }
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.outer);
        pkt.emit(hdr.inner);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
