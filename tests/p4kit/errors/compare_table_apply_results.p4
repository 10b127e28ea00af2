// expect-error: 30 table application results cannot be compared
// What a table's apply() returns is read through .hit, .miss or action_run, never compared whole.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<8>  b;
    int<8>  s;
    bit<16> w;
}

struct headers_t { h_t h; }
struct meta_t { bit<8> x; int<8> y; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    table t1 { key = { hdr.h.a : exact; } actions = { NoAction; } }
    table t2 { key = { hdr.h.b : exact; } actions = { NoAction; } }
    apply {
        if (t1.apply() == t2.apply()) {
            sm.egress_spec = 1;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
