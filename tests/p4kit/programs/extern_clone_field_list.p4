// Ingress-to-egress clone with clone_preserving_field_list (@field_list metadata survives into
// the clone), egress-to-egress clone with clone(); egress tells the copies apart by instance_type.
#include <core.p4>
#include <v1model.p4>

header c_t {
    bit<8> op;
    bit<8> mark;
    bit<8> tag;
    bit<8> it;
}

struct headers_t { c_t h; }

struct meta_t {
    @field_list(1)
    bit<8> tag;
    bit<8> unkept;
}

const bit<32> I2E_SESSION = 5;
const bit<32> E2E_SESSION = 6;

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
        sm.egress_spec = 1;
        if (hdr.h.op == 1) {
            meta.tag = 0x5A;
            meta.unkept = 0x33;
            clone_preserving_field_list(CloneType.I2E, I2E_SESSION, 1);
        }
        hdr.h.mark = 0x11;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.it = (bit<8>)sm.instance_type;
        if (sm.instance_type == 1) {
            hdr.h.tag = meta.tag | meta.unkept;
        } else if (sm.instance_type == 0 && hdr.h.op == 2) {
            clone(CloneType.E2E, E2E_SESSION);
            hdr.h.tag = 0x22;
        }
    }
}

control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
