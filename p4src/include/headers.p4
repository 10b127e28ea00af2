/* Packet headers and metadata of the Tributary switch program. */
#ifndef TRIBUTARY_HEADERS_P4
#define TRIBUTARY_HEADERS_P4

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IPPROTO_UDP    = 17;

header ethernet_h {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

header ipv4_h {
    bit<4>      version;
    bit<4>      ihl;
    bit<8>      diffserv;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

/* In-network aggregation (docs/protocol.md). Workers send UDP to INC_UDP_PORT; every switch on the
   way recognises the port and aggregates instead of routing. */
const bit<16> INC_UDP_PORT  = 47000;
/* Edge-INC streams (docs/edge-inc.md): the same header and payload on their own port, so the aggregation
   never sees them; the switches only replicate them (include/edge_multicast.p4). */
const bit<16> EDGE_UDP_PORT = 47001;
const bit<8>  INC_VERSION   = 2;
const int     INC_LANES     = 64;     /* int32 values per packet */
const bit<16> INC_UDP_LENGTH  = 288;  /* UDP header 8 + INC header 24 + 64 x 4 */
const bit<16> INC_IPV4_LENGTH = 308;  /* IPv4 header 20 + INC_UDP_LENGTH */
const bit<16> INC_WIDE_UDP_LENGTH  = 1056;  /* UDP header 8 + INC header 24 + 4 x 64 x 4 */
const bit<16> INC_WIDE_IPV4_LENGTH = 1076;  /* IPv4 header 20 + INC_WIDE_UDP_LENGTH */
const bit<16> INC_EMPTY_UDP_LENGTH  = 32;    /* UDP header 8 + INC header 24: an empty contribution */
const bit<16> INC_EMPTY_IPV4_LENGTH = 52;    /* IPv4 header 20 + INC_EMPTY_UDP_LENGTH */

/* format: how the values are laid out (docs/protocol.md, "Packed and wide formats"). A packed packet
   (workers to their switch) carries G consecutive chunks in 64 words; the first switch widens it into
   its 32-bit cells, and what leaves a switch is wide: all G chunks in one packet of 256 words. Each
   layout has header instances of its own, so the int32 path's `values` is touched by nothing else
   (a software switch keeps such a header as one integer: p4kit/switch/fusion.py). */
const bit<8>  INC_FMT_INT32  = 0;     /* 64 x int32 in `values` */
const bit<8>  INC_FMT_INT8   = 1;     /* packed: 4 chunks, word i holds lane i of chunks 0..3 as int8 */
const bit<8>  INC_FMT_INT4   = 2;     /* packed: 8 chunks, word i holds lane i of chunks 0..7 as int4 */
const bit<8>  INC_FMT_WIDE32 = 3;     /* wide: 4 chunks of 64 x int32 in w0..w3 */
const bit<8>  INC_FMT_WIDE16 = 4;     /* wide: 8 chunks of 64 x int16, two chunks per 64-word header */
/* empty: the header alone, count 0. Its sender's chunk is zero (sparse vectors, docs/protocol.md
   "Sparse vectors"): it completes the chunk like an int32 contribution and adds nothing. An aggregate
   of empties leaves empty; one with any values leaves as int32 lanes. */
const bit<8>  INC_FMT_EMPTY  = 5;

/* Results reach a worker of tenant t on UDP port WORKER_PORT_BASE + t (1 <= t <= INC_MAX_TENANT); only the
   switches send there (forwarding drops routed packets to those ports). */
const bit<16> WORKER_PORT_BASE = 48000;
const bit<16> INC_MAX_TENANT   = 16384;

/* kind */
const bit<8>  INC_KIND_SUM  = 0;      /* values are summed (two's complement, wrap-around) */
const bit<8>  INC_KIND_MAX  = 1;      /* values are max-reduced (unsigned): block exponents */

/* flags */
const bit<8>  INC_F_RESULT     = 0x01; /* travels down the tree: the finished aggregate */
const bit<8>  INC_F_RETRANSMIT = 0x02; /* a re-sent contribution or a re-sent result */
const bit<8>  INC_F_VERSION    = 0x04; /* which of the slot's two copies (shadow copy) */
const bit<8>  INC_F_URGENT     = 0x08; /* one of the call's last chunks: its loss would end the call late */
/* a contribution with RETRANSMIT or URGENT that completes a cell leaves twice over each link to another
   switch (the repair group: docs/protocol.md, "Urgent chunks and repairs twice") */
const bit<8>  INC_F_TWICE      = 0x0A; /* RETRANSMIT | URGENT */

header inc_h {
    bit<8>  version;
    bit<8>  kind;
    bit<8>  flags;
    bit<8>  sender;     /* child index at the last switch (set by the switch) */
    bit<16> tenant;     /* job id */
    bit<16> round;      /* schedule step: selects the tree of this round */
    bit<16> slot;       /* slot index within the tenant's range */
    bit<16> count;      /* contributions summed into this packet */
    bit<32> chunk;      /* chunk sequence number; compared as serial numbers (mod 2^32) */
    bit<32> epoch;      /* the job's generation: random, set by the controller; must match */
    bit<8>  exponent;   /* block exponent of float32 data (informational at the switch) */
    bit<8>  format;     /* INC_FMT_*: int32 lanes, packed int8 / int4, or their wide sums */
    bit<16> reserved1;
}

#define INC_LANE_FIELD(i) bit<32> v##i;
header inc_values_h {
    INC_LANE_FIELD(0)  INC_LANE_FIELD(1)  INC_LANE_FIELD(2)  INC_LANE_FIELD(3)
    INC_LANE_FIELD(4)  INC_LANE_FIELD(5)  INC_LANE_FIELD(6)  INC_LANE_FIELD(7)
    INC_LANE_FIELD(8)  INC_LANE_FIELD(9)  INC_LANE_FIELD(10) INC_LANE_FIELD(11)
    INC_LANE_FIELD(12) INC_LANE_FIELD(13) INC_LANE_FIELD(14) INC_LANE_FIELD(15)
    INC_LANE_FIELD(16) INC_LANE_FIELD(17) INC_LANE_FIELD(18) INC_LANE_FIELD(19)
    INC_LANE_FIELD(20) INC_LANE_FIELD(21) INC_LANE_FIELD(22) INC_LANE_FIELD(23)
    INC_LANE_FIELD(24) INC_LANE_FIELD(25) INC_LANE_FIELD(26) INC_LANE_FIELD(27)
    INC_LANE_FIELD(28) INC_LANE_FIELD(29) INC_LANE_FIELD(30) INC_LANE_FIELD(31)
    INC_LANE_FIELD(32) INC_LANE_FIELD(33) INC_LANE_FIELD(34) INC_LANE_FIELD(35)
    INC_LANE_FIELD(36) INC_LANE_FIELD(37) INC_LANE_FIELD(38) INC_LANE_FIELD(39)
    INC_LANE_FIELD(40) INC_LANE_FIELD(41) INC_LANE_FIELD(42) INC_LANE_FIELD(43)
    INC_LANE_FIELD(44) INC_LANE_FIELD(45) INC_LANE_FIELD(46) INC_LANE_FIELD(47)
    INC_LANE_FIELD(48) INC_LANE_FIELD(49) INC_LANE_FIELD(50) INC_LANE_FIELD(51)
    INC_LANE_FIELD(52) INC_LANE_FIELD(53) INC_LANE_FIELD(54) INC_LANE_FIELD(55)
    INC_LANE_FIELD(56) INC_LANE_FIELD(57) INC_LANE_FIELD(58) INC_LANE_FIELD(59)
    INC_LANE_FIELD(60) INC_LANE_FIELD(61) INC_LANE_FIELD(62) INC_LANE_FIELD(63)
}

struct headers_t {
    ethernet_h   ethernet;
    ipv4_h       ipv4;
    udp_h        udp;
    inc_h        inc;
    inc_values_h values;   /* int32: the 64 lanes */
    inc_values_h w0;       /* wide: 4 x 64 words (one chunk each for wide32, two for wide16); a */
                           /* packed packet (int8 / int4, as a worker sends it) is its w0 alone */
    inc_values_h w1;
    inc_values_h w2;
    inc_values_h w3;
}

struct inc_metadata_t {
    bit<32> base;        /* first register index of this tenant and round */
    bit<16> nslots;
    bit<16> fan_in;      /* children whose contributions make a slot complete */
    bit<1>  is_root;
    bit<9>  parent_port;
    bit<16> mcast_grp;   /* children of this switch in the tree */
    bit<16> repair_grp;  /* twice over each link to a switch: a root's children, or the parent */
    bit<8>  child;       /* index of the ingress port among the children */
    bit<32> index;       /* register index: base + 2 * slot + version */
    bit<32> groups;      /* chunks in this packet: 1, or 4 / 8 for the packed and wide formats */
    bit<32> epoch;       /* the job generation the tenant entry expects */
    bit<32> switch_ip;   /* this switch's INC address: the source of aggregates sent to the parent */
}

struct metadata_t {
    bit<1>         routed;
    bit<16>        zero;   /* stays 0: what a valid UDP checksum sums to, with the checksum included */
    inc_metadata_t inc;
}

#endif
