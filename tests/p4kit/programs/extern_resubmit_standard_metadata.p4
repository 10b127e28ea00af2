// resubmit/recirculate/clone3 with the whole standard_metadata as the field list: the preserved
// fields come back, but instance_type is the new packet's (RESUBMIT 6, RECIRC 4, INGRESS_CLONE 1),
// as simple_switch sets it after copying the list; a resubmitted packet that kept instance_type 0
// would be resubmitted again and again.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  op;
    bit<8>  seen_ingress;   // instance_type seen by the last ingress pass
    bit<8>  seen_egress;    // instance_type seen by the last egress pass
    bit<8>  passes;         // ingress passes so far
}

struct headers_t { h_t h; }
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
        hdr.h.passes = hdr.h.passes + 1;
        hdr.h.seen_ingress = (bit<8>)sm.instance_type;
        if (sm.instance_type == 0) {
            sm.egress_spec = 2;   // a resubmitted packet keeps it through the field list
            if (hdr.h.op == 1) {
                resubmit(sm);
            } else if (hdr.h.op == 3) {
                clone3(CloneType.I2E, 32w7, sm);
            }
        } else if (sm.instance_type == 4) {
            sm.egress_spec = 2;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.seen_egress = (bit<8>)sm.instance_type;
        if (hdr.h.op == 2 && hdr.h.seen_ingress == 0) {   // egress sees NORMAL (0) for unicast
            recirculate(sm);
        }
    }
}

control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
