// resubmit_preserving_field_list (ingress runs again on the original packet, instance_type 6)
// and recirculate_preserving_field_list (the deparsed packet re-enters the parser,
// instance_type 4); the @field_list metadata survives both.
#include <core.p4>
#include <v1model.p4>

header r_t {
    bit<8> op;
    bit<8> val;
    bit<8> res;
    bit<8> it;
}

struct headers_t { r_t h; }

struct meta_t {
    @field_list(0)
    bit<8> carried;
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
    apply {
        if (sm.instance_type == 0 && hdr.h.op == 1) {
            meta.carried = hdr.h.val + 1;
            hdr.h.val = 0xFF;
            resubmit_preserving_field_list(0);
        } else if (sm.instance_type == 6) {
            hdr.h.res = meta.carried;
            hdr.h.it = 6;
            sm.egress_spec = 2;
        } else if (sm.instance_type == 4) {
            hdr.h.res = meta.carried;
            hdr.h.it = 4;
            sm.egress_spec = 3;
        } else {
            sm.egress_spec = 1;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 0 && hdr.h.op == 2) {
            hdr.h.val = hdr.h.val + 0x10;
            hdr.h.op = 3;
            meta.carried = 0x77;
            recirculate_preserving_field_list(0);
        }
    }
}

control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
