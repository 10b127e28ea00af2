// The parser errors of varbit extraction and advance, as BMv2 raises them: a length that is not a
// whole number of bytes is ParserInvalidArgument (checked first), a packet too short for the length
// PacketTooShort (checked next), a length beyond the varbit's maximum HeaderTooShort. The packet
// still reaches ingress, which reports standard_metadata.parser_error in the first byte.
#include <core.p4>
#include <v1model.p4>

header fix_t {
    bit<8> kind;   // 1: extract a varbit of `len` bits, 2: advance by `len` bits
    bit<8> len;
    bit<8> valid;  // set by ingress: is the varbit header valid?
}

header opts_t {
    varbit<32> data;
}

struct headers_t {
    fix_t  fix;
    opts_t opts;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.fix);
        transition select(hdr.fix.kind) {
            1: varbits;
            2: skip;
            default: accept;
        }
    }
    state varbits {
        pkt.extract(hdr.opts, (bit<32>)hdr.fix.len);
        transition accept;
    }
    state skip {
        pkt.advance((bit<32>)hdr.fix.len);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.NoError) {
            hdr.fix.kind = 0xA0;
        } else if (sm.parser_error == error.PacketTooShort) {
            hdr.fix.kind = 0xA1;
        } else if (sm.parser_error == error.HeaderTooShort) {
            hdr.fix.kind = 0xA4;
        } else if (sm.parser_error == error.ParserInvalidArgument) {
            hdr.fix.kind = 0xA6;
        } else {
            hdr.fix.kind = 0xAF;
        }
        hdr.fix.valid = hdr.opts.isValid() ? 8w1 : 8w0;
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.fix);
        pkt.emit(hdr.opts);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
