// `entries` without const (P4_16 1.2.4): the entries are in the table when the program is loaded,
// and the control plane may still add entries (and change or remove those not marked const); P4Info
// says has_initial_entries, not is_const_table. With `const entries` nothing may be added.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> k; bit<8> v; }
struct headers_t { h_t h; }
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
    action set(bit<8> v) { hdr.h.v = v; }
    action miss() { hdr.h.v = 0xee; }
    table t {
        key = { hdr.h.k : exact; }
        actions = { set; miss; }
        default_action = miss();
        entries = {
            const 0x01 : set(0x11);    // fixed
            0x02 : set(0x22);          // may be changed or removed
        }
    }
    apply {
        sm.egress_spec = 1;
        t.apply();
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
