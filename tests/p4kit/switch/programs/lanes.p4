/* Eight lanes per register index, updated lane by lane as INC does (tests/p4kit/switch/test_fusion.py):
   the switch fuses lane0..lane7 and runs each action's lanes as one list operation; the traced
   pipeline runs them one primitive at a time. Both must agree. With -DCSUM the packet carries a
   checksum over the lanes (verified, and updated per multicast replica): the packed header's
   checksum must agree with the per-field one. The chain action reads the lanes one by one: it runs
   on the unpacked header while the other actions keep it packed; -DLISTS keeps it a list. */
#include <core.p4>
#include <v1model.p4>

header op_h {
    bit<8>  kind;
    bit<8>  bias;
    bit<16> index;
    bit<32> acc;    /* the temporary's value after the action: the last lane's */
}

#define LANE_FIELD(i) bit<32> v##i;
header vec_h { LANE_FIELD(0) LANE_FIELD(1) LANE_FIELD(2) LANE_FIELD(3)
               LANE_FIELD(4) LANE_FIELD(5) LANE_FIELD(6) LANE_FIELD(7) }

header tail_h { bit<16> csum; }

struct headers_t { op_h op; vec_h vec; tail_h tail; }
struct meta_t { bit<32> acc; bit<16> index; }

#define LANES(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7)
#define REG(i) register<bit<32>>(16) lane##i;
#define STORE(i) lane##i.write((bit<32>) meta.index, hdr.vec.v##i);
#define ADD(i) lane##i.read(meta.acc, (bit<32>) meta.index); meta.acc = meta.acc + hdr.vec.v##i; \
    lane##i.write((bit<32>) meta.index, meta.acc); hdr.vec.v##i = meta.acc;
#define MAX(i) lane##i.read(meta.acc, (bit<32>) meta.index); \
    meta.acc = (hdr.vec.v##i > meta.acc) ? hdr.vec.v##i : meta.acc; \
    lane##i.write((bit<32>) meta.index, meta.acc); hdr.vec.v##i = meta.acc;
#define LOAD(i) lane##i.read(meta.acc, (bit<32>) meta.index); hdr.vec.v##i = meta.acc;
#define SUB(i) lane##i.read(meta.acc, (bit<32>) meta.index); meta.acc = meta.acc - hdr.vec.v##i; \
    lane##i.write((bit<32>) meta.index, meta.acc);
#define MIX(i) lane##i.read(meta.acc, (bit<32>) meta.index); \
    meta.acc = (meta.acc ^ hdr.vec.v##i) + (bit<32>) hdr.op.bias + salt; \
    lane##i.write((bit<32>) meta.index, meta.acc); hdr.vec.v##i = meta.acc;
/* a running sum across lanes: each lane reads what the one before left, so it must not be fused */
#define CHAIN(i) meta.acc = meta.acc + hdr.vec.v##i; lane##i.write((bit<32>) meta.index, meta.acc);

parser LanesParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.op);
        pkt.extract(hdr.vec);
#ifdef CSUM
        pkt.extract(hdr.tail);
#endif
        transition accept;
    }
}

control LanesVerify(inout headers_t hdr, inout meta_t meta) {
    apply {
#ifdef CSUM
        verify_checksum(hdr.tail.isValid(), { hdr.op.kind, hdr.op.index, hdr.vec }, hdr.tail.csum,
                        HashAlgorithm.csum16);
#endif
    }
}

control LanesIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    LANES(REG)
    action store() { LANES(STORE) }
    action add()   { LANES(ADD) }
    action maxed() { LANES(MAX) }
    action load()  { LANES(LOAD) }
    action sub()   { LANES(SUB) }
    action mix(bit<32> salt) { LANES(MIX) }
#ifndef NO_CHAIN
    action chain() { LANES(CHAIN) }
#endif
    table ops {
        key = { hdr.op.kind: exact; }
        actions = {
            store; add; maxed; load; sub; mix;
#ifndef NO_CHAIN
            chain;
#endif
            NoAction;
        }
        default_action = NoAction();
    }
    apply {
        meta.index = hdr.op.index;
        meta.acc = 7;
#ifdef LISTS
        if (hdr.vec.v0 == 1) { meta.acc = 7; }  /* a field read outside actions: vec stays a list */
#endif
        ops.apply();
        hdr.op.acc = meta.acc;
        sm.egress_spec = 1;
#ifdef CSUM
        if (sm.checksum_error == 1) { hdr.op.acc = 0xBAD; }
        sm.mcast_grp = 1;
#endif
    }
}

control LanesEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
#ifdef CSUM
        hdr.op.bias = (bit<8>) sm.egress_rid;  /* each replica's checksum differs */
#endif
    }
}
control LanesCompute(inout headers_t hdr, inout meta_t meta) {
    apply {
#ifdef CSUM
        update_checksum(hdr.tail.isValid(), { hdr.op.kind, hdr.op.bias, hdr.op.index, hdr.vec }, hdr.tail.csum,
                        HashAlgorithm.csum16);
#endif
    }
}
control LanesDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.op); pkt.emit(hdr.vec); pkt.emit(hdr.tail); }
}

V1Switch(LanesParser(), LanesVerify(), LanesIngress(), LanesEgress(), LanesCompute(), LanesDeparser()) main;
