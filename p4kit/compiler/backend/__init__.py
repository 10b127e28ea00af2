"""The BMv2 back end of p4kit-p4c: lowers a checked P4_16 v1model program (the front end's AST) to BMv2
JSON (format 2.x, with the conventions of p4c's bmv2 back end) and fills the control-plane model that
P4Info is built from. Entry point: `program.lower_program`; users call `p4kit.compiler.driver`.

Modules, each with one job:
- `bmv2json`:    the JSON document being built (id spaces, unique names, p4c's key order).
- `values`:      JSON value builders (hexstr, expressions, masks, byte-padded select keys, ranges).
- `storage`:     where P4 values live in BMv2 (header instances, fields, `scalars`, stacks, unions).
- `context`:     state shared by the stages; scopes that bind declarations to storage (inlining).
- `expressions`: typed AST expressions -> JSON expressions with p4c's width conventions.
- `statements`:  statements inside actions -> primitives (inlining, predication, jumps, loops).
- `externs`:     v1model extern instances and calls (registers, counters, meters, hash, clone, ...).
- `tables`:      tables, actions, default/const entries, action profiles, direct counters/meters.
- `controls`:    control bodies -> pipeline graphs of tables and conditionals.
- `parsers`:     parser states, select transitions, value sets, sub-parsers, lookahead.
- `deparser`:    the deparser's emit order.
- `checksums`:   verify/update checksum controls -> calculations and checksums.
- `text`:        source text of key expressions (the control-plane names of match fields).
- `program`:     the top level: finds `main`, lays out headers and metadata, runs the stages.
"""
