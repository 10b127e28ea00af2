// Controls and parsers with type parameters, instantiated with type arguments (Put<bit<8>>(...),
// Take<h8_t>()) or with types inferred from constructor arguments: each instantiation is checked and
// lowered as its own copy with the arguments in place (p4c's SpecializeAll), including a table in a
// generic control, whose key has the parameter's type and whose name comes from the instance.
#include <core.p4>
#include <v1model.p4>

header h8_t { bit<8> v; }
header h16_t { bit<16> v; }
struct headers_t { h8_t a; h16_t b; h8_t c; h8_t olda; h16_t oldb; }
struct meta_t { }

parser Take<H>(packet_in pkt, out H h) {
    state start {
        pkt.extract(h);
        transition accept;
    }
}

control Put<T>(inout T x, out T old)(T value) {
    apply {
        old = x;
        x = value;
    }
}

control Classify<K>(in K key, out bit<8> verdict) {
    action set(bit<8> v) { verdict = v; }
    table t {
        key = { key : exact; }
        actions = { set; NoAction; }
        default_action = set(0xee);
    }
    apply {
        verdict = 0;
        t.apply();
    }
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    Take<h8_t>() take8;
    Take<h16_t>() take16;
    state start {
        take8.apply(pkt, hdr.a);
        take16.apply(pkt, hdr.b);
        pkt.extract(hdr.c);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Put<bit<8>>(8w0x5a) put8;
    Put(16w0x1234) put16;               // T inferred from the constructor argument
    Classify<bit<16>>() by16;
    apply {
        sm.egress_spec = 1;
        by16.apply(hdr.b.v, hdr.c.v);   // the verdict on the b that arrived
        hdr.olda.setValid();
        hdr.oldb.setValid();
        put8.apply(hdr.a.v, hdr.olda.v);
        put16.apply(hdr.b.v, hdr.oldb.v);
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
