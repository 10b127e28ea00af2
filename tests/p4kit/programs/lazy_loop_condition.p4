// A `for` loop's condition with `&&` and a call on its right calls it only while the left side holds,
// on every test (P4_16 8.5/8.6 on `&&`, 12.15 on for loops: the condition is evaluated before each
// iteration). In an action; `calls` counts the calls that ran, `n` the iterations.
#include <core.p4>
#include <v1model.p4>

header probe_t {
    bit<8> limit;
    bit<8> stop;
    bit<8> calls;
    bit<8> n;
}

struct headers_t { probe_t p; }
struct meta_t { bit<8> unused; }

bool below(inout bit<8> calls, in bit<8> i, in bit<8> stop) {
    calls = calls + 1;
    return i < stop;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.p); transition accept; }
}

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action run() {
        for (bit<8> i = 0; i < hdr.p.limit && below(hdr.p.calls, i, hdr.p.stop); i = i + 1) {
            hdr.p.n = hdr.p.n + 1;
        }
    }
    apply {
        sm.egress_spec = 1;
        run();
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
