/* Aggregation of the packed and wide formats (docs/protocol.md, "Packed and wide formats"): the cells
   of contributions that Aggregation (include/aggregation.p4) has checked and hands on.

   A packed packet (a worker's int8 or int4) is first widened; a wide packet carries G = 4 or 8
   consecutive chunks of a worker's stream: for wide32 chunk c + g in cell index + 2g (the cell chunk
   c + g has in int32 mode), for wide16 chunks c + 2h and c + 2h + 1 together in cell index + 2h, as
   the two 16-bit halves of each lane; the state of all G lives in the cell of chunk c. The state machine is Aggregation's
   (same counters' meaning, in wide_stats), on registers of its own: the int32 path's cells, lanes and
   header are untouched by the wide formats (and a software switch keeps its int32 lanes fused into one
   list operation: p4kit/switch/fusion.py). */
#ifndef TRIBUTARY_WIDE_AGGREGATION_P4
#define TRIBUTARY_WIDE_AGGREGATION_P4

#define INC_WIDE_LANE_REGISTER(i) register<bit<32>>(INC_CELLS) wlane##i;

/* The macros take the header H and the cell index I of one chunk. */
#define INC_LANES_64_ON(M, H, I) \
    M(H, I, 0)  M(H, I, 1)  M(H, I, 2)  M(H, I, 3)  M(H, I, 4)  M(H, I, 5)  M(H, I, 6)  M(H, I, 7) \
    M(H, I, 8)  M(H, I, 9)  M(H, I, 10) M(H, I, 11) M(H, I, 12) M(H, I, 13) M(H, I, 14) M(H, I, 15) \
    M(H, I, 16) M(H, I, 17) M(H, I, 18) M(H, I, 19) M(H, I, 20) M(H, I, 21) M(H, I, 22) M(H, I, 23) \
    M(H, I, 24) M(H, I, 25) M(H, I, 26) M(H, I, 27) M(H, I, 28) M(H, I, 29) M(H, I, 30) M(H, I, 31) \
    M(H, I, 32) M(H, I, 33) M(H, I, 34) M(H, I, 35) M(H, I, 36) M(H, I, 37) M(H, I, 38) M(H, I, 39) \
    M(H, I, 40) M(H, I, 41) M(H, I, 42) M(H, I, 43) M(H, I, 44) M(H, I, 45) M(H, I, 46) M(H, I, 47) \
    M(H, I, 48) M(H, I, 49) M(H, I, 50) M(H, I, 51) M(H, I, 52) M(H, I, 53) M(H, I, 54) M(H, I, 55) \
    M(H, I, 56) M(H, I, 57) M(H, I, 58) M(H, I, 59) M(H, I, 60) M(H, I, 61) M(H, I, 62) M(H, I, 63)

/* sign extension in unsigned arithmetic: (x ^ 2^(k-1)) - 2^(k-1) mod 2^32 for a k-bit x */
#define INC_SX8(x)  ((((x) & 0xFF) ^ 0x80) - 0x80)
#define INC_SX4(x)  (((((x) & 0xF) ^ 0x8) - 0x8) & 0xFFFF)
#define INC_SX16(x) ((((x) & 0xFFFF) ^ 0x8000) - 0x8000)

/* packed int8 -> wide32: byte g (from the top) of word i is lane i of chunk g */
#define INC_WIDEN8(H, I, i) \
    hdr.w3.v##i = INC_SX8(H.v##i); \
    hdr.w2.v##i = INC_SX8(H.v##i >> 8); \
    hdr.w1.v##i = INC_SX8(H.v##i >> 16); \
    hdr.w0.v##i = INC_SX8(H.v##i >> 24);
/* packed int4 -> wide16: nibble g (from the top) of word i is lane i of chunk g; wide16 header h holds
   chunks 2h (high half) and 2h + 1 (low half) */
#define INC_WIDEN4(H, I, i) \
    hdr.w3.v##i = (INC_SX4(H.v##i >> 4) << 16) | INC_SX4(H.v##i); \
    hdr.w2.v##i = (INC_SX4(H.v##i >> 12) << 16) | INC_SX4(H.v##i >> 8); \
    hdr.w1.v##i = (INC_SX4(H.v##i >> 20) << 16) | INC_SX4(H.v##i >> 16); \
    hdr.w0.v##i = (INC_SX4(H.v##i >> 28) << 16) | INC_SX4(H.v##i >> 24);

/* wide32: one chunk of 64 x int32 in H, its cell I */
#define INC_W32_STORE(H, I, i) wlane##i.write(I, H.v##i);
#define INC_W32_ADD(H, I, i) wlane##i.read(acc, I); acc = acc + H.v##i; wlane##i.write(I, acc); H.v##i = acc;
#define INC_W32_LOAD(H, I, i) wlane##i.read(acc, I); H.v##i = acc;
/* wide16: two chunks of 64 x int16 in H (the high and low halves of each word), kept as they are in
   one cell: both halves are added at once, each mod 2^16 (the carry out of the low half is cut off).
   The sums are exact while they fit 16 bits (the worker limits int4 jobs to 4096 workers). */
#define INC_SWAR16_ADD(a, b) ((((a) & 0x7FFF7FFF) + ((b) & 0x7FFF7FFF)) ^ (((a) ^ (b)) & 0x80008000))
#define INC_W16_STORE(H, I, i) wlane##i.write(I, H.v##i);
#define INC_W16_ADD(H, I, i) \
    wlane##i.read(acc, I); acc = INC_SWAR16_ADD(acc, H.v##i); wlane##i.write(I, acc); H.v##i = acc;
#define INC_W16_LOAD(H, I, i) wlane##i.read(acc, I); H.v##i = acc;

/* the G chunks of a wide packet: op is store, add or load */
#define INC_WIDE_CELLS(op) \
    if (hdr.inc.format == INC_FMT_WIDE32) { INC_WIDE32_CELLS(op) } else { INC_WIDE16_CELLS(op) }
#define INC_WIDE32_CELLS(op) \
    gi = meta.inc.index;     w32_##op##0(); \
    gi = meta.inc.index + 2; w32_##op##1(); \
    gi = meta.inc.index + 4; w32_##op##2(); \
    gi = meta.inc.index + 6; w32_##op##3();
#define INC_WIDE16_CELLS(op) \
    gi = meta.inc.index;     w16_##op##0(); \
    gi = meta.inc.index + 2; w16_##op##1(); \
    gi = meta.inc.index + 4; w16_##op##2(); \
    gi = meta.inc.index + 6; w16_##op##3();

control WideAggregation(inout headers_t hdr, inout metadata_t meta,
                        inout standard_metadata_t std_meta) {
    counter(16, CounterType.packets_and_bytes) wide_stats;

    register<bit<32>>(INC_CELLS) wcell_chunk;
    register<bit<64>>(INC_CELLS) wcell_bitmap;
    register<bit<16>>(INC_CELLS) wcell_arrivals;
    register<bit<16>>(INC_CELLS) wcell_count;
    INC_LANES_64(INC_WIDE_LANE_REGISTER)

    bit<32> acc;
    bit<32> gi;          /* the cell an action works on */
    bit<32> chunk;
    bit<64> bitmap;
    bit<16> arrivals;
    bit<16> total;
    bit<64> me;

    action drop_as(bit<32> reason) {
        mark_to_drop(std_meta);
        wide_stats.count(reason);
    }

    action emit_aggregate() {
        hdr.inc.count = total;
        hdr.inc.sender = meta.inc.child;
        hdr.ipv4.src_addr = meta.inc.switch_ip;
    }

    /* the first switch widens a worker's packed chunks into the wide format its cells and links use */
    action widen8() {
        hdr.w1.setValid(); hdr.w2.setValid(); hdr.w3.setValid();
        INC_LANES_64_ON(INC_WIDEN8, hdr.w0, gi)
        hdr.inc.format = INC_FMT_WIDE32;
        hdr.udp.length = INC_WIDE_UDP_LENGTH;
        hdr.ipv4.total_len = INC_WIDE_IPV4_LENGTH;
    }
    action widen4() {
        hdr.w1.setValid(); hdr.w2.setValid(); hdr.w3.setValid();
        INC_LANES_64_ON(INC_WIDEN4, hdr.w0, gi)
        hdr.inc.format = INC_FMT_WIDE16;
        hdr.udp.length = INC_WIDE_UDP_LENGTH;
        hdr.ipv4.total_len = INC_WIDE_IPV4_LENGTH;
    }
    action w32_store0() { INC_LANES_64_ON(INC_W32_STORE, hdr.w0, gi) }
    action w32_store1() { INC_LANES_64_ON(INC_W32_STORE, hdr.w1, gi) }
    action w32_store2() { INC_LANES_64_ON(INC_W32_STORE, hdr.w2, gi) }
    action w32_store3() { INC_LANES_64_ON(INC_W32_STORE, hdr.w3, gi) }
    action w32_add0()   { INC_LANES_64_ON(INC_W32_ADD, hdr.w0, gi) }
    action w32_add1()   { INC_LANES_64_ON(INC_W32_ADD, hdr.w1, gi) }
    action w32_add2()   { INC_LANES_64_ON(INC_W32_ADD, hdr.w2, gi) }
    action w32_add3()   { INC_LANES_64_ON(INC_W32_ADD, hdr.w3, gi) }
    action w32_load0()  { INC_LANES_64_ON(INC_W32_LOAD, hdr.w0, gi) }
    action w32_load1()  { INC_LANES_64_ON(INC_W32_LOAD, hdr.w1, gi) }
    action w32_load2()  { INC_LANES_64_ON(INC_W32_LOAD, hdr.w2, gi) }
    action w32_load3()  { INC_LANES_64_ON(INC_W32_LOAD, hdr.w3, gi) }
    action w16_store0() { INC_LANES_64_ON(INC_W16_STORE, hdr.w0, gi) }
    action w16_store1() { INC_LANES_64_ON(INC_W16_STORE, hdr.w1, gi) }
    action w16_store2() { INC_LANES_64_ON(INC_W16_STORE, hdr.w2, gi) }
    action w16_store3() { INC_LANES_64_ON(INC_W16_STORE, hdr.w3, gi) }
    action w16_add0()   { INC_LANES_64_ON(INC_W16_ADD, hdr.w0, gi) }
    action w16_add1()   { INC_LANES_64_ON(INC_W16_ADD, hdr.w1, gi) }
    action w16_add2()   { INC_LANES_64_ON(INC_W16_ADD, hdr.w2, gi) }
    action w16_add3()   { INC_LANES_64_ON(INC_W16_ADD, hdr.w3, gi) }
    action w16_load0()  { INC_LANES_64_ON(INC_W16_LOAD, hdr.w0, gi) }
    action w16_load1()  { INC_LANES_64_ON(INC_W16_LOAD, hdr.w1, gi) }
    action w16_load2()  { INC_LANES_64_ON(INC_W16_LOAD, hdr.w2, gi) }
    action w16_load3()  { INC_LANES_64_ON(INC_W16_LOAD, hdr.w3, gi) }

    apply {
        if (hdr.inc.format == INC_FMT_INT8) {
            widen8();
        } else if (hdr.inc.format == INC_FMT_INT4) {
            widen4();
        }
        meta.inc.index = meta.inc.base + ((bit<32>) hdr.inc.slot << 1);
        if ((hdr.inc.flags & INC_F_VERSION) != 0) {
            meta.inc.index = meta.inc.index + 1;
        }
        wcell_chunk.read(chunk, meta.inc.index);
        wcell_bitmap.read(bitmap, meta.inc.index);
        wcell_arrivals.read(arrivals, meta.inc.index);
        wcell_count.read(total, meta.inc.index);
        me = (bit<64>) 1 << meta.inc.child;

        bool completed = false;
        bool resend = false;
        /* chunk numbers are serial numbers (RFC 1982): the packet's is older than the cell's when their
           difference mod 2^32 has its top bit set, so they may wrap around 2^32 */
        bit<32> ahead = hdr.inc.chunk - chunk;
        if (arrivals != 0 && ahead[31:31] == 1) {
            /* an old chunk: this copy has moved on, everyone had that result */
            drop_as(INC_STAT_STALE);
            return;
        }
        if (ahead != 0 || arrivals == 0) {
            /* the first contribution of a new use of this copy */
            INC_WIDE_CELLS(store)
            chunk = hdr.inc.chunk;
            bitmap = me;
            arrivals = 1;
            total = hdr.inc.count;
            completed = arrivals == meta.inc.fan_in;
        } else if (arrivals == meta.inc.fan_in) {
            /* already finished: a child lost the result (or the parent lost our aggregate) */
            INC_WIDE_CELLS(load)
            resend = true;
        } else if ((bitmap & me) == 0) {
            INC_WIDE_CELLS(add)
            bitmap = bitmap | me;
            arrivals = arrivals + 1;
            total = total + hdr.inc.count;
            completed = arrivals == meta.inc.fan_in;
        } else {
            drop_as(INC_STAT_DUPLICATE);
            return;
        }
        wcell_chunk.write(meta.inc.index, chunk);
        wcell_bitmap.write(meta.inc.index, bitmap);
        wcell_arrivals.write(meta.inc.index, arrivals);
        wcell_count.write(meta.inc.index, total);

        if (completed || resend) {
            emit_aggregate();
            bool completed_twice = completed && (hdr.inc.flags & INC_F_TWICE) != 0;  /* aggregation.p4 */
            if (resend) {
                hdr.inc.flags = hdr.inc.flags | INC_F_RETRANSMIT;
                wide_stats.count(INC_STAT_RESENT);
            } else {
                wide_stats.count(INC_STAT_COMPLETED);
            }
            if (meta.inc.is_root == 1) {
                hdr.inc.flags = hdr.inc.flags | INC_F_RESULT;
                if (resend) {
                    std_meta.egress_spec = std_meta.ingress_port;
                } else if (completed_twice) {
                    std_meta.mcast_grp = meta.inc.repair_grp;  /* each child switch twice */
                } else {
                    std_meta.mcast_grp = meta.inc.mcast_grp;
                }
            } else if (completed_twice) {
                std_meta.mcast_grp = meta.inc.repair_grp;  /* the parent twice */
            } else {
                std_meta.egress_spec = meta.inc.parent_port;
            }
        } else {
            drop_as(INC_STAT_ABSORBED);
        }
    }
}

#endif
