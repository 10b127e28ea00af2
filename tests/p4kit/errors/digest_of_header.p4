// expect-error: 8 learn_t: expected a struct type
// p4c's BMv2 back end names a digest after its data's type, which must be a struct; a header is
// refused, and p4c reports it at the header's declaration (the note shows the digest call).
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<16> w; }
header learn_t { bit<8> a; bit<9> port; bit<7> pad; }

struct headers_t { h_t h; }
struct meta_t { learn_t l; }

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
        meta.l.setValid();
        meta.l.a = hdr.h.a;
        meta.l.port = sm.ingress_port;
        digest(1, meta.l);
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
