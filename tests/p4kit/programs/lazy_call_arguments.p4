// A `?:` or a short-circuit operator passed as an argument evaluates only what P4 evaluates (P4_16
// 8.5/8.6, 8.14), in its turn among the arguments, which are evaluated left to right (6.8): an argument
// before it is read before its call runs, an inout argument is copied in after all of them and out
// again on return. As a function's argument, an extern method's (register.write), a direct action
// call's and an action's argument inside an action; `log` has one bit per call.
#include <core.p4>
#include <v1model.p4>

header probe_t {
    bit<8> sel;
    bit<8> log;
    bit<8> n;
    bit<8> r1;
    bit<8> r2;
    bit<8> r3;
    bit<8> r4;
}

struct headers_t { probe_t p; }
struct meta_t { bit<8> unused; }

bit<8> mark(inout bit<8> log, in bit<8> bit_, in bit<8> v) {
    log = log | bit_;
    return v;
}

// n is read first (by value); the second argument's call then changes n; acc (inout) is copied in
// after both are evaluated, so it sees that change, and copied out on return
bit<8> combine(in bit<8> first, in bit<8> second, inout bit<8> acc) {
    acc = acc + 1;
    return first + second;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.p); transition accept; }
}

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<8>>(1) reg;

    action put(bit<8> v) { hdr.p.r3 = v; }
    action put4(bit<8> v) { hdr.p.r4 = v; }
    action via_action() {
        put4(hdr.p.sel[3:3] == 1 ? mark(hdr.p.log, 0x40, 0x31) : 8w0x32);
    }
    apply {
        sm.egress_spec = 1;
        hdr.p.r1 = combine(hdr.p.n, hdr.p.sel[0:0] == 1 ? mark(hdr.p.n, 0x01, 0x10) : mark(hdr.p.n, 0x02, 0x20),
                           hdr.p.n);
        reg.write(0, hdr.p.sel[1:1] == 1 ? mark(hdr.p.log, 0x04, 0x11) : mark(hdr.p.log, 0x08, 0x12));
        reg.read(hdr.p.r2, 0);
        put(hdr.p.sel[2:2] == 1 || mark(hdr.p.log, 0x10, 0) == 1 ? 8w0x21 : 8w0x22);
        via_action();
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control VerifyImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control ComputeImpl(inout headers_t hdr, inout meta_t meta) { apply {} }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(ParserImpl(), VerifyImpl(), IngressImpl(), EgressImpl(), ComputeImpl(), DeparserImpl()) main;
