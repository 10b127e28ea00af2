// Header stacks: parse loop with .next / .last / .lastIndex, .size, constant and run-time
// indexing, pop_front, push_front, setValid on a stack element, emitting a stack.
#include <core.p4>
#include <v1model.p4>

header label_t {
    bit<7> val;
    bit<1> bos;
}

header info_t {
    bit<8> cnt;
    bit<8> last;
    bit<8> lastidx;
    bit<8> sz;
    bit<8> rt;
}

struct headers_t {
    label_t[4] lbl;
    info_t     info;
}

struct meta_t {
    bit<8> lastval;
    bit<8> lastidx;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        transition parse_label;
    }
    state parse_label {
        pkt.extract(hdr.lbl.next);
        transition select(hdr.lbl.last.bos) {
            1: parse_info;
            default: parse_label;
        }
    }
    state parse_info {
        meta.lastval = (bit<8>)hdr.lbl.last.val;
        meta.lastidx = (bit<8>)hdr.lbl.lastIndex;
        pkt.extract(hdr.info);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.info.last = meta.lastval;
        hdr.info.lastidx = meta.lastidx;
        hdr.info.sz = (bit<8>)hdr.lbl.size;
        hdr.info.rt = (bit<8>)hdr.lbl[hdr.info.rt].val;
        hdr.lbl.pop_front(1);
        hdr.lbl.push_front(2);
        hdr.lbl[0].setValid();
        hdr.lbl[0].val = 0x7F;
        hdr.lbl[0].bos = 0;
        bit<8> n = 0;
        if (hdr.lbl[0].isValid()) { n = n + 1; }
        if (hdr.lbl[1].isValid()) { n = n + 1; }
        if (hdr.lbl[2].isValid()) { n = n + 1; }
        if (hdr.lbl[3].isValid()) { n = n + 1; }
        hdr.info.cnt = n;
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.lbl);
        pkt.emit(hdr.info);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
