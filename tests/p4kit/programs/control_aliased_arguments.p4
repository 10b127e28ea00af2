// A control applied with two out/inout arguments on the same storage (`c.apply(hdr, hdr.h)`) works
// on copies that are written back in parameter order, so the later parameter's copy wins for the
// bits both cover (P4's copy-in/copy-out; p4-guide's calling-convention example, whose two controls
// differ only in the order of their parameters).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> sel;
    bit<8> ttl;
    bit<8> dst;
}

header t_t { bit<8> port; }

struct headers_t { h_t h; t_t t; }
struct meta_t { }

control HdrFirst(inout headers_t all, inout h_t one) {
    apply {
        all.h.ttl = all.h.ttl - 1;
        all.t.port = all.t.port + 1;
        one.ttl = one.ttl - 2;
        one.dst = one.dst + 4;
    }
}

control OneFirst(inout h_t one, inout headers_t all) {
    apply {
        all.h.ttl = all.h.ttl - 1;
        all.t.port = all.t.port + 1;
        one.ttl = one.ttl - 2;
        one.dst = one.dst + 4;
    }
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.t);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    HdrFirst() hdr_first;
    OneFirst() one_first;
    apply {
        sm.egress_spec = 1;
        if (hdr.h.sel == 0) {
            hdr_first.apply(hdr, hdr.h);   // hdr copied out first, then hdr.h: ttl - 2, dst + 4
        } else {
            one_first.apply(hdr.h, hdr);   // hdr.h first, then hdr: ttl - 1, dst unchanged
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
