// Table keys that are expressions rather than plain fields: a header's isValid() and a bit
// slice, each given a control-plane name with @name (that name is what STF `add` uses).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> flag;
    bit<8> f;
    bit<8> res;
}

header opt_t {
    bit<8> v;
}

struct headers_t { h_t h; opt_t opt; }
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.flag) {
            1: parse_opt;
            default: accept;
        }
    }
    state parse_opt {
        pkt.extract(hdr.opt);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action fwd(bit<9> port, bit<8> r) {
        sm.egress_spec = port;
        hdr.h.res = r;
    }
    table t {
        key = {
            hdr.opt.isValid() : exact @name("opt_valid");
            hdr.h.f[7:4]      : exact @name("f_hi");
        }
        actions = { fwd; NoAction; }
        default_action = NoAction();
    }
    apply {
        t.apply();
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.opt);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
