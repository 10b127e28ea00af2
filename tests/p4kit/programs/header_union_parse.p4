// header_union: parse one of two members, test member and union validity, and setValid on one
// member invalidating the other (the packet shrinks).
#include <core.p4>
#include <v1model.p4>

header tag_t { bit<8> which; }
header v4_t { bit<8> ver; bit<24> a; }
header v6_t { bit<8> ver; bit<56> b; }

header_union ip_u {
    v4_t v4;
    v6_t v6;
}

struct headers_t {
    tag_t tag;
    ip_u  ip;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.tag);
        transition select(hdr.tag.which) {
            4: parse_v4;
            6: parse_v6;
            default: accept;
        }
    }
    state parse_v4 {
        pkt.extract(hdr.ip.v4);
        transition accept;
    }
    state parse_v6 {
        pkt.extract(hdr.ip.v6);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (!hdr.ip.isValid()) {
            hdr.tag.which = 0;
        } else if (hdr.ip.v4.isValid()) {
            hdr.tag.which = 0x44;
            hdr.ip.v4.a = hdr.ip.v4.a + 1;
        } else if (hdr.ip.v6.isValid()) {
            hdr.tag.which = 0x66;
            hdr.ip.v4.setValid();
            hdr.ip.v4.ver = 4;
            hdr.ip.v4.a = 0xABCDEF;
        }
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.tag);
        pkt.emit(hdr.ip);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
