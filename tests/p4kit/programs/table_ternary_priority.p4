// Ternary matching: control-plane entries with priorities; const entries without priorities (the
// first listed wins); an entries list with explicit priorities (largest_priority_wins defaults to
// true: the largest value wins; a 'const entries' list may not carry priorities).
#include <core.p4>
#include <v1model.p4>

header t_t {
    bit<16> a;
    bit<8>  c1;
    bit<8>  c2;
    bit<8>  c3;
}

struct headers_t { t_t h; }
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
    action set_c1(bit<8> c) { hdr.h.c1 = c; }
    action set_c2(bit<8> c) { hdr.h.c2 = c; }
    action set_c3(bit<8> c) { hdr.h.c3 = c; }

    table tern {
        key = { hdr.h.a: ternary; }
        actions = { set_c1; }
        default_action = set_c1(0);
    }

    table tord {
        key = { hdr.h.a: ternary; }
        actions = { set_c2; }
        default_action = set_c2(0);
        const entries = {
            16w0x1200 &&& 16w0xFF00: set_c2(0x01);
            16w0x1234 &&& 16w0xFFFF: set_c2(0x02);
            16w0x00FF &&& 16w0x00FF: set_c2(0x03);
        }
    }

    table tprio {
        key = { hdr.h.a: ternary; }
        actions = { set_c3; }
        default_action = set_c3(0);
        entries = {
            const priority = 10: 16w0x1200 &&& 16w0xFF00: set_c3(0x10);
            const priority = 20: 16w0x1234 &&& 16w0xFFFF: set_c3(0x20);
        }
    }

    apply {
        tern.apply();
        tord.apply();
        tprio.apply();
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
