// A lookahead whose value is not used still needs the bits it would read: on a packet too short for
// it the parser stops with error.PacketTooShort (BMv2 reads it into p4c's temporary), whether it
// looks at a bit string or at a struct.
#include <core.p4>
#include <v1model.p4>

header first_t {
    bit<8> kind;
}

struct pair_t {
    bit<16> x;
    bit<16> y;
}

struct headers_t {
    first_t first;
}

struct meta_t { bit<8> unused; }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.first);
        transition select(hdr.first.kind) {
            1: peek_bits;
            2: peek_struct;
            default: accept;
        }
    }
    state peek_bits {
        pkt.lookahead<bit<24>>();
        transition accept;
    }
    state peek_struct {
        pkt.lookahead<pair_t>();
        transition accept;
    }
}

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.PacketTooShort) {
            hdr.first.kind = 0xEE;
        }
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
