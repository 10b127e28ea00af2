/* In-network aggregation at one switch of a job's reduction tree (docs/protocol.md).

   Each tenant (job) owns, per round of its schedule, a range of register cells: two cells (the slot's
   two copies, chosen by the packet's version flag) per slot. A cell holds 64 int32 lanes, the chunk it
   aggregates, a bitmap of the children that contributed, their number, and the summed contribution
   count. A contribution is added at most once per child (bitmap), so duplicates and retransmissions
   never count twice; when every child has contributed, the aggregate goes to the parent (or, at the
   root, down to every child as the result). A retransmission that reaches a finished cell re-sends the
   finished aggregate, which is how lost results and lost partial aggregates are recovered at any hop.
   The second copy keeps the previous use's result while the next use of the slot fills the other. */
#ifndef TRIBUTARY_AGGREGATION_P4
#define TRIBUTARY_AGGREGATION_P4

#ifndef INC_CELLS
#define INC_CELLS 8192
#endif

/* indices of inc_stats */
const bit<32> INC_STAT_MALFORMED      = 0;
const bit<32> INC_STAT_UNKNOWN_TENANT = 1;
const bit<32> INC_STAT_NOT_A_CHILD    = 2;
const bit<32> INC_STAT_STALE          = 3;
const bit<32> INC_STAT_DUPLICATE      = 4;
const bit<32> INC_STAT_ABSORBED       = 5;
const bit<32> INC_STAT_COMPLETED      = 6;
const bit<32> INC_STAT_RESENT         = 7;
const bit<32> INC_STAT_RESULT_DOWN    = 8;

#define INC_LANE_REGISTER(i) register<bit<32>>(INC_CELLS) lane##i;
#define INC_LANES_64(M) \
    M(0)  M(1)  M(2)  M(3)  M(4)  M(5)  M(6)  M(7)  M(8)  M(9)  M(10) M(11) M(12) M(13) M(14) M(15) \
    M(16) M(17) M(18) M(19) M(20) M(21) M(22) M(23) M(24) M(25) M(26) M(27) M(28) M(29) M(30) M(31) \
    M(32) M(33) M(34) M(35) M(36) M(37) M(38) M(39) M(40) M(41) M(42) M(43) M(44) M(45) M(46) M(47) \
    M(48) M(49) M(50) M(51) M(52) M(53) M(54) M(55) M(56) M(57) M(58) M(59) M(60) M(61) M(62) M(63)

/* cell := packet */
#define INC_LANE_STORE(i) lane##i.write(meta.inc.index, hdr.values.v##i);
/* cell := cell + packet; packet := cell */
#define INC_LANE_ADD(i) \
    lane##i.read(acc, meta.inc.index); acc = acc + hdr.values.v##i; \
    lane##i.write(meta.inc.index, acc); hdr.values.v##i = acc;
/* cell := max(cell, packet); packet := cell */
#define INC_LANE_MAX(i) \
    lane##i.read(acc, meta.inc.index); \
    acc = (hdr.values.v##i > acc) ? hdr.values.v##i : acc; \
    lane##i.write(meta.inc.index, acc); hdr.values.v##i = acc;
/* packet := cell */
#define INC_LANE_LOAD(i) lane##i.read(acc, meta.inc.index); hdr.values.v##i = acc;

control Aggregation(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t std_meta) {
    counter(16, CounterType.packets_and_bytes) inc_stats;

    register<bit<32>>(INC_CELLS) cell_chunk;
    register<bit<64>>(INC_CELLS) cell_bitmap;
    register<bit<16>>(INC_CELLS) cell_arrivals;
    register<bit<16>>(INC_CELLS) cell_count;
    INC_LANES_64(INC_LANE_REGISTER)

    bit<32> acc;
    bit<32> chunk;
    bit<64> bitmap;
    bit<16> arrivals;
    bit<16> total;
    bit<64> me;

    action drop_as(bit<32> reason) {
        mark_to_drop(std_meta);
        inc_stats.count(reason);
    }

    action set_config(bit<32> base, bit<16> nslots, bit<16> fan_in, bit<1> is_root,
                      bit<9> parent_port, bit<16> mcast_grp) {
        meta.inc.base = base;
        meta.inc.nslots = nslots;
        meta.inc.fan_in = fan_in;
        meta.inc.is_root = is_root;
        meta.inc.parent_port = parent_port;
        meta.inc.mcast_grp = mcast_grp;
    }

    action unknown_tenant() {
        drop_as(INC_STAT_UNKNOWN_TENANT);
    }

    /* Per tenant and round: where its cells are and how this switch sits in the round's tree. */
    table inc_tenants {
        key = {
            hdr.inc.tenant: exact;
            hdr.inc.round: exact;
        }
        actions = { set_config; unknown_tenant; }
        default_action = unknown_tenant();
        size = 1024;
    }

    action set_child(bit<8> child) {
        meta.inc.child = child;
    }

    action not_a_child() {
        drop_as(INC_STAT_NOT_A_CHILD);
    }

    /* Per tenant and round: which ports are children of this switch, and their bitmap index. */
    table inc_children {
        key = {
            hdr.inc.tenant: exact;
            hdr.inc.round: exact;
            std_meta.ingress_port: exact;
        }
        actions = { set_child; not_a_child; }
        default_action = not_a_child();
        size = 4096;
    }

    action lanes_store() { INC_LANES_64(INC_LANE_STORE) }
    action lanes_add()   { INC_LANES_64(INC_LANE_ADD) }
    action lanes_max()   { INC_LANES_64(INC_LANE_MAX) }
    action lanes_load()  { INC_LANES_64(INC_LANE_LOAD) }

    /* The finished aggregate leaves this switch: up to the parent, or down as the result. */
    action emit_aggregate() {
        hdr.inc.count = total;
        hdr.inc.sender = meta.inc.child;
        hdr.udp.checksum = 0;
    }

    apply {
        if (!hdr.values.isValid() || hdr.inc.version != INC_VERSION || hdr.inc.kind > INC_KIND_MAX) {
            drop_as(INC_STAT_MALFORMED);
            return;
        }
        if (!inc_tenants.apply().hit) {
            return;
        }
        if ((hdr.inc.flags & INC_F_RESULT) != 0) {
            /* a finished aggregate from the parent: every child gets a copy */
            if (meta.inc.is_root == 0 && std_meta.ingress_port == meta.inc.parent_port) {
                std_meta.mcast_grp = meta.inc.mcast_grp;
                inc_stats.count(INC_STAT_RESULT_DOWN);
            } else {
                drop_as(INC_STAT_MALFORMED);
            }
            return;
        }
        if (!inc_children.apply().hit) {
            return;
        }
        if (hdr.inc.slot >= meta.inc.nslots) {
            drop_as(INC_STAT_MALFORMED);
            return;
        }
        meta.inc.index = meta.inc.base + ((bit<32>) hdr.inc.slot << 1);
        if ((hdr.inc.flags & INC_F_VERSION) != 0) {
            meta.inc.index = meta.inc.index + 1;
        }
        cell_chunk.read(chunk, meta.inc.index);
        cell_bitmap.read(bitmap, meta.inc.index);
        cell_arrivals.read(arrivals, meta.inc.index);
        cell_count.read(total, meta.inc.index);
        me = (bit<64>) 1 << meta.inc.child;

        bool completed = false;
        bool resend = false;
        if (hdr.inc.chunk < chunk) {
            /* an old chunk: this copy has moved on, everyone had that result */
            drop_as(INC_STAT_STALE);
            return;
        }
        if (hdr.inc.chunk > chunk || arrivals == 0) {
            /* the first contribution of a new use of this copy */
            lanes_store();
            chunk = hdr.inc.chunk;
            bitmap = me;
            arrivals = 1;
            total = hdr.inc.count;
            completed = arrivals == meta.inc.fan_in;
        } else if (arrivals == meta.inc.fan_in) {
            /* already finished: a child lost the result (or the parent lost our aggregate) */
            lanes_load();
            resend = true;
        } else if ((bitmap & me) == 0) {
            if (hdr.inc.kind == INC_KIND_MAX) {
                lanes_max();
            } else {
                lanes_add();
            }
            bitmap = bitmap | me;
            arrivals = arrivals + 1;
            total = total + hdr.inc.count;
            completed = arrivals == meta.inc.fan_in;
        } else {
            drop_as(INC_STAT_DUPLICATE);
            return;
        }
        cell_chunk.write(meta.inc.index, chunk);
        cell_bitmap.write(meta.inc.index, bitmap);
        cell_arrivals.write(meta.inc.index, arrivals);
        cell_count.write(meta.inc.index, total);

        if (completed || resend) {
            emit_aggregate();
            if (resend) {
                hdr.inc.flags = hdr.inc.flags | INC_F_RETRANSMIT;
                inc_stats.count(INC_STAT_RESENT);
            } else {
                inc_stats.count(INC_STAT_COMPLETED);
            }
            if (meta.inc.is_root == 1) {
                hdr.inc.flags = hdr.inc.flags | INC_F_RESULT;
                if (resend) {
                    std_meta.egress_spec = std_meta.ingress_port;
                } else {
                    std_meta.mcast_grp = meta.inc.mcast_grp;
                }
            } else {
                std_meta.egress_spec = meta.inc.parent_port;
            }
        } else {
            drop_as(INC_STAT_ABSORBED);
        }
    }
}

/* Egress: results leaving towards a host get that host's addresses, so its UDP socket accepts them. */
control Delivery(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std_meta) {
    action to_host(bit<48> mac, bit<32> ip) {
        hdr.ethernet.dst_addr = mac;
        hdr.ipv4.dst_addr = ip;
        hdr.udp.checksum = 0;
    }

    table inc_hosts {
        key = { std_meta.egress_port: exact; }
        actions = { to_host; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    apply {
        if (hdr.inc.isValid()) {
            inc_hosts.apply();
        }
    }
}

#endif
