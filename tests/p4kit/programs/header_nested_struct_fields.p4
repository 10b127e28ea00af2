// A header may hold structs nested to any depth, of bit<W>, int<W>, bool and serializable enums
// (p4c flattens them into the header's fields; p4c's issue1653 tests do this). The program also
// names its checksum controls verify_checksum and compute_checksum, which p4c accepts beside
// v1model's extern functions of the same names, and calls the extern from inside one of them.
#include <core.p4>
#include <v1model.p4>

enum bit<8> Kind { A = 1, B = 2 }

struct inner_t {
    bit<1> flag;
    bit<7> port;
    int<8> delta;
    bool   on;
    Kind   kind;
    bit<7> pad;
}

struct row_t {
    inner_t first;
    inner_t second;
}

header row_h {
    row_t row;
    bit<16> csum;
}

struct headers_t { row_h r; }
struct meta_t { row_t saved; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.r);
        transition accept;
    }
}

control verify_checksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        meta.saved = hdr.r.row;
        sm.egress_spec = (bit<9>)hdr.r.row.first.port;
        if (hdr.r.row.first.on && hdr.r.row.first.kind == Kind.A) {
            hdr.r.row.second.delta = hdr.r.row.first.delta - 3;   // signed: may go negative
            hdr.r.row.second.kind = Kind.B;
            hdr.r.row.second.on = !meta.saved.second.on;
        }
        hdr.r.row.first.flag = ~hdr.r.row.first.flag;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control compute_checksum(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(true, { hdr.r.row.first.delta, hdr.r.row.second.delta }, hdr.r.csum,
                        HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.r); }
}

V1Switch(MyParser(), verify_checksum(), MyIngress(), MyEgress(), compute_checksum(), MyDeparser()) main;
