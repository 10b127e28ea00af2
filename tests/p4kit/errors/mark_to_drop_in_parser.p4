// expect-error: 27 mark_to_drop.*unsupported in parser
// p4c's BMv2 back end turns only extract, lookahead, advance, verify, assert, assume and log_msg into
// parser operations; mark_to_drop (like hash, registers and counters) is refused in a parser state
// ("Unsupported in parser on this target"). Dropping belongs to ingress or egress.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<8>  b;
    bit<16> w;
}

struct headers_t { h_t h; }
struct meta_t { bit<8> x; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a) {
            0: drop_it;
            default: accept;
        }
    }
    state drop_it {
        mark_to_drop(sm);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
