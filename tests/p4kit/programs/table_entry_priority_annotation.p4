// `@priority(N)` on const entries, as p4c's bmv2 back end reads it: N is BMv2's own priority (the
// smaller wins), entries without one are numbered by their position (1, 2, ...). So an annotated
// entry written last can still win over the ones before it.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  tag;
    bit<16> k;
    bit<8>  res;
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
    action mark(bit<8> v) { hdr.h.res = v; }
    table pick {
        key = { hdr.h.k: ternary; }
        actions = { mark; NoAction; }
        default_action = NoAction();
        const entries = {
            0x00AA &&& 0x00FF : mark(0x11) @priority(5);   // loses to both others where they match
            0x12AA            : mark(0x22);                // position 2
            0x1200 &&& 0xFF00 : mark(0x33) @priority(1);   // wins wherever it matches
        }
    }
    apply {
        pick.apply();
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
