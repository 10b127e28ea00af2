// digest to the control plane, truncate, log_msg with and without arguments, assert and assume
// that hold. None of the side effects but truncation is visible on the wire.
#include <core.p4>
#include <v1model.p4>

header t_t {
    bit<8>  flag;
    bit<8>  a;
    bit<16> b;
    bit<16> c;
}

struct headers_t { t_t h; }

struct learn_t {
    bit<8> a;
    bit<9> port;
}

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
        log_msg("packet seen");
        log_msg("flag={} a={}", { hdr.h.flag, hdr.h.a });
        assert(sm.ingress_port != 9w511);
        assume(hdr.h.isValid());
        digest<learn_t>(1, { hdr.h.a, sm.ingress_port });
        if (hdr.h.flag == 1) {
            truncate(32w4);
        }
        hdr.h.a = hdr.h.a + 1;
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
