// expect-error: 9 exit statements not allowed in functions
// A function returns to its caller: `exit` belongs to controls and their actions (P4_16 spec;
// p4c's ValidateParsedProgram says "exit statements not allowed in functions").
#include <core.p4>
#include <v1model.p4>

bit<8> checked_ttl(in bit<8> ttl) {
    if (ttl == 0) {
        exit;
    }
    return ttl - 1;
}

header h_t {
    bit<8>  ttl;
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
    apply {
        hdr.h.ttl = checked_ttl(hdr.h.ttl);
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
