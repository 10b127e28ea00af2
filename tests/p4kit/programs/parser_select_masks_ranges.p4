// select on a tuple of two fields with masks (&&&), a range (..), don't-care (_) and default;
// cases are tried in order, the first match wins.
#include <core.p4>
#include <v1model.p4>

header sel_t {
    bit<8> a;
    bit<8> b;
    bit<8> cls;
}

struct headers_t { sel_t h; }
struct meta_t { bit<8> cls; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a, hdr.h.b) {
            (8w0x10 &&& 8w0xF0, _): class1;
            (8w0x30 .. 8w0x45, 8w0x01): class2;
            (_, 8w0x80 &&& 8w0x80): class3;
            default: class4;
        }
    }
    state class1 { meta.cls = 1; transition accept; }
    state class2 { meta.cls = 2; transition accept; }
    state class3 { meta.cls = 3; transition accept; }
    state class4 { meta.cls = 4; transition accept; }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.cls = meta.cls;
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
