// expect-error: 23 policer: direct meter is not associated with any table via 'meters'
// A direct meter meters a table's entries; read() in an action of a table that does not name it in
// `meters = ...` has nothing to meter by. p4c's BMv2 back end refuses it at the meter.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<8>  b;
    bit<16> w;
}

struct headers_t { h_t h; }
struct meta_t { bit<2> color; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    direct_meter<bit<2>>(MeterType.packets) policer;
    action police() { policer.read(meta.color); }
    table flows {
        key = { hdr.h.a : exact; }
        actions = { police; NoAction; }
        default_action = NoAction();
    }
    apply {
        flows.apply();
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
