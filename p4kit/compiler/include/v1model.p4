/*
 * v1model.p4 -- the v1model architecture (the P4_14 "switch" model expressed
 * in P4_16), as p4kit provides it.
 *
 * Written for the Tributary project. The declarations (names, generic
 * parameters, parameter directions, enum members, annotations and constants)
 * are those of the v1model.p4 that p4c ships, because real programs and the
 * BMv2 simple_switch target depend on every one of them; the text and the
 * comments are our own.
 *
 * SPDX-License-Identifier: Apache-2.0
 */

#ifndef _V1_MODEL_P4_
#define _V1_MODEL_P4_

/* Version selection. A program may `#define V1MODEL_VERSION 20200408` before
 * including this file to get the newer declarations: the PortId_t typedef and
 * an index type parameter on counter, meter and register. Without it the
 * original 2018 declarations (bit<32> indices) are used. */
#ifndef V1MODEL_VERSION
#define V1MODEL_VERSION 20180101
#endif

#include "core.p4"

match_kind {
    range,     /* key lies in [lo, hi] */
    optional,  /* key equals the entry's value, or the entry is a wildcard */
    selector   /* key feeds the hash of an action_selector */
}

/* Lets a program test, in P4 itself, which version of this file it got. */
const bit<32> __v1model_version = V1MODEL_VERSION;

#if V1MODEL_VERSION >= 20200408
typedef bit<9>  PortId_t;
#endif

/* Per-packet metadata that simple_switch reads and writes. The @alias names
 * are the target's own field names (BMv2 JSON "field_aliases"): the compiler
 * maps each field to that intrinsic field of the switch. */
@metadata @name("standard_metadata")
struct standard_metadata_t {
#if V1MODEL_VERSION >= 20200408
    PortId_t ingress_port;   /* port the packet arrived on */
    PortId_t egress_spec;    /* set in ingress: output port (511 drops) */
    PortId_t egress_port;    /* in egress: the port actually used */
#else
    bit<9>   ingress_port;
    bit<9>   egress_spec;
    bit<9>   egress_port;
#endif
    bit<32>  instance_type;  /* normal, clone, resubmit, recirculate, replica */
    bit<32>  packet_length;  /* bytes, as received */

    /* Queueing information, valid in egress. */
    @alias("queueing_metadata.enq_timestamp")
    bit<32> enq_timestamp;   /* microseconds, when the packet was queued */
    @alias("queueing_metadata.enq_qdepth")
    bit<19> enq_qdepth;      /* queue depth in packets when queued */
    @alias("queueing_metadata.deq_timedelta")
    bit<32> deq_timedelta;   /* microseconds spent in the queue */
    @alias("queueing_metadata.deq_qdepth")
    bit<19> deq_qdepth;      /* queue depth in packets when dequeued */

    /* Intrinsic information of the switch. */
    @alias("intrinsic_metadata.ingress_global_timestamp")
    bit<48> ingress_global_timestamp;  /* microseconds, start of ingress */
    @alias("intrinsic_metadata.egress_global_timestamp")
    bit<48> egress_global_timestamp;   /* microseconds, start of egress */
    @alias("intrinsic_metadata.mcast_grp")
    bit<16> mcast_grp;       /* set in ingress: multicast group, 0 = none */
    @alias("intrinsic_metadata.egress_rid")
    bit<16> egress_rid;      /* in egress: replica id of a multicast copy */

    bit<1>  checksum_error;  /* 1 when a verify_checksum* call failed */
    error   parser_error;    /* outcome of the parser */
    @alias("intrinsic_metadata.priority")
    bit<3>  priority;        /* egress queue priority, when enabled */
}

enum CounterType {
    packets,
    bytes,
    packets_and_bytes
}

enum MeterType {
    packets,
    bytes
}

/* An array of `size` counters, indexed from 0. */
extern counter
#if V1MODEL_VERSION >= 20200408
<I>
#endif
{
    counter(bit<32> size, CounterType type);
    /* Add this packet (and/or its bytes) to cell `index`; an index beyond
     * the array changes nothing. */
#if V1MODEL_VERSION >= 20200408
    void count(in I index);
#else
    void count(in bit<32> index);
#endif
}

/* One counter per entry of the table it is attached to (table property
 * `counters = NAME;`). Entries that match are counted automatically; the
 * count() call is accepted but adds nothing. */
extern direct_counter {
    direct_counter(CounterType type);
    void count();
}

/* Colour encoding written by meters. */
#define V1MODEL_METER_COLOR_GREEN  0
#define V1MODEL_METER_COLOR_YELLOW 1
#define V1MODEL_METER_COLOR_RED    2

/* An array of `size` two-rate three-colour meters (RFC 2698), indexed from 0. */
extern meter
#if V1MODEL_VERSION >= 20200408
<I>
#endif
{
    meter(bit<32> size, MeterType type);
    /* Run meter `index` on this packet and write its colour (see the
     * V1MODEL_METER_COLOR_* values) to `result`, a bit<W> with W >= 2. */
#if V1MODEL_VERSION >= 20200408
    void execute_meter<T>(in I index, out T result);
#else
    void execute_meter<T>(in bit<32> index, out T result);
#endif
}

/* One meter per entry of the table it is attached to (table property
 * `meters = NAME;`); read() gives the colour of the matched entry. */
extern direct_meter<T> {
    direct_meter(MeterType type);
    void read(out T result);
}

/* An array of `size` cells of type T that keep their values across packets.
 * Each action's register accesses are atomic with respect to other packets
 * on simple_switch. */
extern register<T
#if V1MODEL_VERSION >= 20200408
                , I
#endif
                >
{
    register(bit<32> size);
    /* Cell `index` into `result`; an index beyond the array gives an
     * unspecified value. */
    @noSideEffects
#if V1MODEL_VERSION >= 20200408
    void read(out T result, in I index);
#else
    void read(out T result, in bit<32> index);
#endif
    /* `value` into cell `index`; an index beyond the array changes nothing. */
#if V1MODEL_VERSION >= 20200408
    void write(in I index, in T value);
#else
    void write(in bit<32> index, in T value);
#endif
}

/* Shared action data for tables (table property `implementation = NAME;`). */
extern action_profile {
    action_profile(bit<32> size);
}

/* A random value in lo..hi (both included) into `result`; lo and hi may be
 * run-time values. Unspecified when lo > hi. */
extern void random<T>(out T result, in T lo, in T hi);

/* Send `data` to the control plane. When T is a named struct, its name names
 * the digest in P4Info. `receiver` is kept for P4_14 compatibility. */
extern void digest<T>(in bit<32> receiver, in T data);

enum HashAlgorithm {
    crc32,
    crc32_custom,
    crc16,
    crc16_custom,
    random,
    identity,
    csum16,
    xor16
}

/* Sets egress_spec to the drop port and mcast_grp to 0. Later code may still
 * change either field and so cancel the drop. */
@deprecated("Please use mark_to_drop(standard_metadata) instead.")
extern void mark_to_drop();
@pure
extern void mark_to_drop(inout standard_metadata_t standard_metadata);

/* result = base + (H(data) % max) when max >= 1, else base. */
@pure
extern void hash<O, T, D, M>(out O result, in HashAlgorithm algo, in T base, in D data, in M max);

/* An action profile whose member is picked per packet by hashing the
 * table's `selector` keys (table property `implementation = NAME;`). */
extern action_selector {
    action_selector(HashAlgorithm algorithm, bit<32> size, bit<32> outputWidth);
}

enum CloneType {
    I2E,  /* clone from ingress to egress */
    E2E   /* clone from egress to egress */
}

@deprecated("Please use verify_checksum/update_checksum instead.")
extern Checksum16 {
    Checksum16();
    bit<16> get<D>(in D data);
}

/* Compare `checksum` with the checksum of `data` (a tuple of bit/int/varbit
 * fields) when `condition` holds; on a mismatch standard_metadata's
 * checksum_error becomes 1. `algo` must be a compile-time constant. */
extern void verify_checksum<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

/* When `condition` holds, write the checksum of `data` to `checksum`. */
@pure
extern void update_checksum<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* As verify_checksum, with the unparsed rest of the packet (the payload)
 * appended to `data`. */
extern void verify_checksum_with_payload<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

/* As update_checksum, with the payload appended to `data`. */
@noSideEffects
extern void update_checksum_with_payload<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* Send a copy of the packet to the egress of clone session `session`. */
extern void clone(in CloneType type, in bit<32> session);

/* Run ingress again on the original packet, after this ingress. */
@deprecated("Please use 'resubmit_preserving_field_list' instead")
extern void resubmit<T>(in T data);
/* As resubmit; user metadata fields annotated @field_list(index) keep their
 * values in the resubmitted packet. */
extern void resubmit_preserving_field_list(bit<8> index);

/* Feed the deparsed packet back to the parser, after this egress. */
@deprecated("Please use 'recirculate_preserving_field_list' instead")
extern void recirculate<T>(in T data);
extern void recirculate_preserving_field_list(bit<8> index);

@deprecated("Please use 'clone_preserving_field_list' instead")
extern void clone3<T>(in CloneType type, in bit<32> session, in T data);
extern void clone_preserving_field_list(in CloneType type, in bit<32> session, bit<8> index);

/* Cut the outgoing packet to at most `length` bytes. */
extern void truncate(in bit<32> length);

/* Checks for verification tools and debug builds: simple_switch stops with
 * an error when an assert fails; assume is taken as true by tools. */
extern void assert(in bool check);
extern void assume(in bool check);

/* Write a message to the switch's log. In the second form, each `{}` in
 * `msg` is replaced by the next field of `data` (a struct or tuple). */
extern void log_msg(string msg);
extern void log_msg<T>(string msg, in T data);

/* The six programmable blocks of a v1model switch. H is the struct of
 * headers, M the struct of user metadata. */
parser Parser<H, M>(packet_in b,
                    out H parsedHdr,
                    inout M meta,
                    inout standard_metadata_t standard_metadata);

/* May only call verify_checksum / verify_checksum_with_payload. */
control VerifyChecksum<H, M>(inout H hdr,
                             inout M meta);

@pipeline
control Ingress<H, M>(inout H hdr,
                      inout M meta,
                      inout standard_metadata_t standard_metadata);

@pipeline
control Egress<H, M>(inout H hdr,
                     inout M meta,
                     inout standard_metadata_t standard_metadata);

/* May only call update_checksum / update_checksum_with_payload. */
control ComputeChecksum<H, M>(inout H hdr,
                              inout M meta);

@deparser
control Deparser<H>(packet_out b, in H hdr);

package V1Switch<H, M>(Parser<H, M> p,
                       VerifyChecksum<H, M> vr,
                       Ingress<H, M> ig,
                       Egress<H, M> eg,
                       ComputeChecksum<H, M> ck,
                       Deparser<H> dep);

#endif /* _V1_MODEL_P4_ */
