// Keys of a serializable enum type matched by values of its underlying type, as p4c accepts them:
// `(bit<16>)Kind.B &&& 0xff00` in a table's const entries and a `bit<16>` value with a mask in a
// select. The enum value itself still matches exactly; a miss takes the default.
#include <core.p4>
#include <v1model.p4>

enum bit<16> Kind {
    A = 0x0a00,
    B = 0xab00
}

header h_t {
    Kind kind;
    bit<8> mark;
}

struct headers_t { h_t h; }
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.kind) {
            Kind.A: accept;
            16w0xf000 &&& 16w0xf000: high;   // a bit<16> keyset for a Kind key
            default: accept;
        }
    }
    state high {
        hdr.h.mark = 0xee;
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action send(bit<9> port) { sm.egress_spec = port; }

    table t {
        key = { hdr.h.kind : ternary; }
        actions = { send; }
        const default_action = send(0);
        const entries = {
            Kind.A                          : send(1);
            ((bit<16>)Kind.B) &&& 0xff00    : send(2);
            16w0x0c00 &&& 16w0x0f00         : send(3);
        }
    }

    apply { t.apply(); }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
