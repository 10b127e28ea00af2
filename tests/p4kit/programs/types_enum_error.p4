// Serializable enum as a header field and select key, a plain enum, user error codes raised by
// verify() and inspected through standard_metadata.parser_error in ingress; a user match_kind.
#include <core.p4>
#include <v1model.p4>

enum bit<8> Kind_t {
    DATA = 1,
    CTRL = 2,
    ACK  = 0x10
}

enum Color_t { RED, GREEN, BLUE }

error { BadKind, ZeroLen }

// An extra match_kind declaration (declared, never used by a table).
match_kind { custom_unused_kind }

header msg_t {
    Kind_t kind;
    bit<8> len;
    bit<8> err;
    bit<8> color;
}

struct headers_t { msg_t m; }
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.m);
        transition select(hdr.m.kind) {
            Kind_t.DATA: accept;
            Kind_t.CTRL: check_len;
            default: bad_kind;
        }
    }
    state check_len {
        verify(hdr.m.len != 0, error.ZeroLen);
        transition accept;
    }
    state bad_kind {
        verify(false, error.BadKind);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.NoError) {
            hdr.m.err = 0;
        } else if (sm.parser_error == error.BadKind) {
            hdr.m.err = 1;
        } else if (sm.parser_error == error.ZeroLen) {
            hdr.m.err = 2;
        } else {
            hdr.m.err = 0xFF;
        }
        Color_t c = Color_t.RED;
        if (hdr.m.kind == Kind_t.DATA) {
            c = Color_t.GREEN;
        } else if (hdr.m.kind == Kind_t.CTRL) {
            c = Color_t.BLUE;
        }
        hdr.m.color = (c == Color_t.GREEN) ? 8w1 : ((c == Color_t.BLUE) ? 8w2 : 8w0);
        if (hdr.m.kind == Kind_t.DATA) {
            hdr.m.kind = Kind_t.ACK;
        }
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.m); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
