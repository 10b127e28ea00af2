// Lookahead of a struct and of a header (each field filled from its slice of the upcoming bits,
// nothing consumed; a header target becomes valid), a field of a struct lookahead as a select key,
// and a header with a struct-typed field (flattened for BMv2, read and written through the struct).
#include <core.p4>
#include <v1model.p4>

struct pair_t {
    bit<4> hi;
    bit<4> lo;
    bit<8> next;
}

header peek_h {
    bit<8> first;
    bit<8> second;
}

header h_t {
    bit<8>  kind;
    pair_t  p;          // a struct inside a header
    bit<8>  z;
}

struct headers_t {
    h_t    h;
    peek_h seen;        // filled by a lookahead, never extracted: emitted in front
}

struct meta_t {
    pair_t peek;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        meta.peek = pkt.lookahead<pair_t>();        // kind's nibbles and the next byte
        hdr.seen = pkt.lookahead<peek_h>();
        transition select(pkt.lookahead<pair_t>().hi) {
            0xF: no_h;
            default: parse_h;
        }
    }
    state parse_h {
        pkt.extract(hdr.h);
        transition accept;
    }
    state no_h {
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (!hdr.h.isValid()) {
            mark_to_drop(sm);
            return;
        }
        hdr.h.z = (bit<8>)meta.peek.hi + (bit<8>)meta.peek.lo + meta.peek.next;
        pair_t swapped = { hdr.h.p.lo, hdr.h.p.hi, hdr.h.p.next + 1 };
        hdr.h.p = swapped;
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.seen);
        pkt.emit(hdr.h);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
