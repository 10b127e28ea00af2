// expect-error: 41 clone\(I2E, \.\.\.\) not invoked in ingress
// An ingress-to-egress clone belongs to ingress: p4c's BMv2 back end refuses clone(I2E, ...) where
// egress runs it ("'clone(I2E, ...) not invoked in ingress"), here through a table's action.
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
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action mirror(bit<32> session) {
        clone(CloneType.I2E, session);
    }
    table mirror_ingress {
        key = { hdr.h.a : exact; }
        actions = { mirror; NoAction; }
        default_action = NoAction();
    }
    apply { mirror_ingress.apply(); sm.egress_spec = 1; }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action mirror_late(bit<32> session) {
        hdr.h.b = 1;
        clone(CloneType.I2E, session);
    }
    table mirror_egress {
        key = { hdr.h.a : exact; }
        actions = { mirror_late; NoAction; }
        default_action = NoAction();
    }
    apply { mirror_egress.apply(); }
}

control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
