// A member of a serializable enum names a field list: `@field_list(Lists.Keep)` marks metadata as
// `@field_list(1)` would, and `clone_preserving_field_list` takes the enum member as its index (p4c
// resolves both; p4c's issue1001 tests do the same). Fields outside the list are zero in the clone.
#include <core.p4>
#include <v1model.p4>

enum bit<8> Lists {
    Keep = 1,
    Other = 2
}

header c_t {
    bit<8> op;
    bit<8> a;
    bit<8> b;
}

struct headers_t { c_t h; }

struct meta_t {
    @field_list(Lists.Keep)
    bit<8> a;
    @field_list(Lists.Other)
    bit<8> b;
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
        sm.egress_spec = 1;
        meta.a = 0xA1;
        meta.b = 0xB2;
        if (hdr.h.op == 1) {
            clone_preserving_field_list(CloneType.I2E, 32w4, Lists.Keep);
        } else {
            clone_preserving_field_list(CloneType.I2E, 32w4, Lists.Other);
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 1) {
            hdr.h.a = meta.a;
            hdr.h.b = meta.b;
        }
    }
}

control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
