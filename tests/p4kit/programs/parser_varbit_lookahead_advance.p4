// varbit extraction with a run-time length, advance (skipped bytes vanish from the output) and
// lookahead (peeks without consuming).
#include <core.p4>
#include <v1model.p4>

header fix_t {
    bit<4> ver;
    bit<4> ihl;
    bit<8> kind;
}

header opts_t {
    varbit<64> data;
}

header tail_t {
    bit<8> t;
}

struct headers_t {
    fix_t  fix;
    opts_t opts;
    tail_t tail;
}

struct meta_t {
    bit<8>  path;
    bit<16> peek;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.fix);
        transition select(hdr.fix.kind) {
            1: with_opts;
            2: skip_two;
            default: peek;
        }
    }
    state with_opts {
        pkt.extract(hdr.opts, (bit<32>)hdr.fix.ihl * 8);
        meta.path = 1;
        transition parse_tail;
    }
    state skip_two {
        pkt.advance(16);
        meta.path = 2;
        transition parse_tail;
    }
    state peek {
        meta.peek = pkt.lookahead<bit<16>>();
        meta.path = 3;
        transition parse_tail;
    }
    state parse_tail {
        pkt.extract(hdr.tail);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (meta.path == 1) {
            hdr.tail.t = hdr.opts.isValid() ? 8w0xA1 : 8w0xA0;
        } else if (meta.path == 2) {
            hdr.tail.t = 0xB2;
        } else {
            hdr.tail.t = meta.peek[15:8] ^ meta.peek[7:0];
        }
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.fix);
        pkt.emit(hdr.opts);
        pkt.emit(hdr.tail);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
