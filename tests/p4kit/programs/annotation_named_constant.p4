// Named constants in annotations: `@field_list(FL_KEEP)` marks metadata the same way `@field_list(1)`
// does (p4lang/tutorials' flowcache writes @field_list(FL_PACKET_IN)). A field listed under two
// constants survives either clone; a field under no list is zero in the clone.
#include <core.p4>
#include <v1model.p4>

const bit<8> FL_KEEP = 1;
const bit<8> FL_OTHER = 2;

header c_t {
    bit<8> op;
    bit<8> a;
    bit<8> b;
    bit<8> c;
}

struct headers_t { c_t h; }

struct meta_t {
    @field_list(FL_KEEP)
    bit<8> a;
    @field_list(FL_KEEP, FL_OTHER)
    bit<8> b;
    bit<8> c;
}

const bit<32> SESSION = 5;

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
        meta.a = 0xA1;
        meta.b = 0xB2;
        meta.c = 0xC3;
        if (hdr.h.op == 1) {
            clone_preserving_field_list(CloneType.I2E, SESSION, FL_KEEP);
        } else if (hdr.h.op == 2) {
            clone_preserving_field_list(CloneType.I2E, SESSION, FL_OTHER);
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 1) {
            hdr.h.a = meta.a;
            hdr.h.b = meta.b;
            hdr.h.c = meta.c;
        }
    }
}

control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
