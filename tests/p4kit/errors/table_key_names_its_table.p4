// expect-error: 27 tag: Cannot refer to the containing table tag
// A table named like a parameter of its control shadows it (p4c warns), so the key `tag` is the
// table itself, not the parameter: p4c says "Cannot refer to the containing table" (its issue2267).
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

control Classify(in bit<8> tag, inout bit<8> out_v) {
    action set(bit<8> v) { out_v = v; }
    table tag {
        key = { tag : exact; }
        actions = { set; NoAction; }
        default_action = NoAction();
    }
    apply { tag.apply(); }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Classify() classify;
    apply {
        classify.apply(hdr.h.a, meta.x);
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
