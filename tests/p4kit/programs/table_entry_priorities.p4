// Table entries with explicit priorities (P4_16 1.2.4): `entries` (mutable initial entries, some
// `const`), `priority = N:`, entries without one derived with priority_delta, and both senses of
// largest_priority_wins. Overlapping ternary entries show which priority wins.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> e;
    bit<8> t;
    bit<8> r1;
    bit<8> r2;
}

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
    action set1(bit<8> v) { hdr.h.r1 = v; }
    action set2(bit<8> v) { hdr.h.r2 = v; }

    // smallest wins; delta 10: priorities 10, 20, 30, 40 (explicit), 50
    table small_wins {
        key = { hdr.h.e: exact; hdr.h.t: ternary; }
        actions = { set1; }
        largest_priority_wins = false;
        priority_delta = 10;
        @noWarn("duplicate_priorities")
        entries = {
            const priority=10: (0x01, 0x11 &&& 0x0F) : set1(1);
                               (0x01, 0x11)          : set1(2);     // 20
                               (0x02, 0x10 &&& 0xF0) : set1(3);     // 30
                  priority=25: (0x02, 0x12)          : set1(4);     // beats 30
                               (0x03, _)             : set1(5);     // 35
        }
    }

    // largest wins (the default); delta 5: 100, 95, 90, then 200 explicit, then 195
    table large_wins {
        key = { hdr.h.t: ternary; }
        actions = { set2; }
        priority_delta = 5;
        entries = {
            priority=100: 0x20 &&& 0xF0 : set2(1);
                          0x21          : set2(2);   // 95: loses to 100
                          0x30 &&& 0xF0 : set2(3);   // 90
            priority=200: 0x00 &&& 0x00 : set2(4);   // beats everything, except ...
                          0x3F          : set2(5);   // 195: loses to 200 too
        }
    }

    apply {
        small_wins.apply();
        large_wins.apply();
        sm.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
