// Bitwise & | ^ ~, shifts by constants and by a run-time amount, comparisons, boolean
// && || ! on bool locals, the ?: operator and concatenation ++.
#include <core.p4>
#include <v1model.p4>

header ops_t {
    bit<8>  a;
    bit<8>  b;
    bit<8>  and_r;
    bit<8>  or_r;
    bit<8>  xor_r;
    bit<8>  not_r;
    bit<8>  shl;
    bit<8>  shr;
    bit<8>  shlv;
    bit<8>  cmp;
    bit<8>  logic;
    bit<8>  maxv;
    bit<16> cat;
}

struct headers_t { ops_t h; }
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
    apply {
        bit<8> a = hdr.h.a;
        bit<8> b = hdr.h.b;
        hdr.h.and_r = a & b;
        hdr.h.or_r = a | b;
        hdr.h.xor_r = a ^ b;
        hdr.h.not_r = ~a;
        hdr.h.shl = a << 3;
        hdr.h.shr = a >> 3;
        hdr.h.shlv = a << (b & 8w7);
        hdr.h.cmp = (a == b ? 8w0x01 : 8w0) | (a != b ? 8w0x02 : 8w0) | (a < b ? 8w0x04 : 8w0)
                  | (a <= b ? 8w0x08 : 8w0) | (a > b ? 8w0x10 : 8w0) | (a >= b ? 8w0x20 : 8w0);
        bool x = a > 8w0x10;
        bool y = b > 8w0x10;
        hdr.h.logic = (x && y ? 8w0x01 : 8w0) | (x || y ? 8w0x02 : 8w0) | (!x ? 8w0x04 : 8w0)
                    | (x != y ? 8w0x08 : 8w0) | (x == true ? 8w0x10 : 8w0);
        hdr.h.maxv = a > b ? a : b;
        hdr.h.cat = a ++ b;
        sm.egress_spec = 2;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
