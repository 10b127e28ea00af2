// Dropping: mark_to_drop in ingress, mark_to_drop in egress, and egress_spec set to the drop
// port 511 directly.
#include <core.p4>
#include <v1model.p4>

header op_t {
    bit<8> op;
    bit<8> seen;
}

struct headers_t { op_t h; }
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
    apply {
        sm.egress_spec = 2;
        if (hdr.h.op == 1) {
            mark_to_drop(sm);
        } else if (hdr.h.op == 3) {
            sm.egress_spec = 511;
        } else if (hdr.h.op == 4) {
            mark_to_drop(sm);
            sm.egress_spec = 3;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.seen = hdr.h.seen + 1;
        if (hdr.h.op == 2) {
            mark_to_drop(sm);
        }
    }
}

control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
