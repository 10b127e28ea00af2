/*
 * core.p4 -- the P4_16 core library, as p4kit provides it.
 *
 * Written for the Tributary project from the P4_16 language specification
 * (section "P4 core library"). Every name, parameter direction and type
 * parameter below is the one the specification defines, so programs written
 * against p4c's core.p4 compile unchanged with p4kit, and the other way round.
 *
 * SPDX-License-Identifier: Apache-2.0
 */

#ifndef _CORE_P4_
#define _CORE_P4_

/* The error constants every architecture knows. A parser that fails sets
 * its target's parser error field to one of these (or to a program-declared
 * error: programs may add members with their own `error { ... }` blocks). */
error {
    NoError,               /* parsing succeeded */
    PacketTooShort,        /* extract or lookahead ran past the packet's end */
    NoMatch,               /* a select expression had no matching case */
    StackOutOfBounds,      /* a header stack index was out of range */
    HeaderTooShort,        /* a varbit extract asked for more than the field holds */
    ParserTimeout,         /* the parser did not finish in the target's time */
    ParserInvalidArgument  /* a parser operation got an unsupported argument
                              (e.g. a varbit size that is not whole bytes) */
}

/* The packet being parsed. Only a parser can hold one. */
extern packet_in {
    /* Copy the next bits of the packet into a fixed-size header and make it
     * valid; fails with PacketTooShort when not enough bits remain. */
    void extract<T>(out T hdr);
    /* Same for a header whose last field is a varbit: the second argument
     * says how many bits that field takes in this packet. */
    void extract<T>(out T variableSizeHeader,
                    in bit<32> variableFieldSizeInBits);
    /* Read the next bits as a T without consuming them. */
    T lookahead<T>();
    /* Skip bits without reading them. */
    void advance(in bit<32> sizeInBits);
    /* Total packet length in bytes; not every target knows it. */
    bit<32> length();
}

/* The packet being assembled by a deparser. */
extern packet_out {
    /* Append a header (only if valid), or every valid header in a stack,
     * union or struct, in field order. */
    void emit<T>(in T hdr);
}

/* Parser-only check: when `check` is false, parsing stops and the parser
 * error becomes `toSignal`. */
extern void verify(in bool check, in error toSignal);

/* The action that does nothing: a common default action for tables. */
@noWarn("unused")
action NoAction() {}

/* The match kinds every architecture must support. Architectures add more
 * (v1model adds range, optional and selector). */
match_kind {
    exact,    /* key equals the entry's value */
    ternary,  /* key equals the value under the entry's mask */
    lpm       /* longest-prefix match */
}

/* A check made at compile time: the compiler reports `message` (or a generic
 * text) when `check` is false. Returns `check`, so it can initialise a
 * constant. */
@pure
extern bool static_assert(bool check, string message);
@pure
extern bool static_assert(bool check);

#endif /* _CORE_P4_ */
