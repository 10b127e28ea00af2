// expect-error: 27 list<bit<16>> as list<bit<32>>
// list<T> (P4_16 v1.2.3) is checked like any type: a list of bit<16> does not convert to the list
// of bit<32> an extern's constructor takes (p4c: "Cannot cast implicitly type 'bit<16>' to type
// 'bit<32>'", reported at the instance).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<8>  b;
    bit<16> w;
}

struct headers_t { h_t h; }
struct meta_t { bit<8> x; }

extern Lookup {
    Lookup(list<bit<32>> values);
    bit<32> at(in bit<8> index);
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Lookup((list<bit<16>>){2, 3, 4}) table_of_values;
    apply { sm.egress_spec = 1; }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
