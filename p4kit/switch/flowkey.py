"""Which bits of a packet a stateless program's result depends on: the key of the cache of results.

Why: a flow's packets differ in bytes the program never looks at (the IPv4 identification, the
checksums, TCP sequence numbers, the payload bytes the parser reads past). A key of every byte the
parser can reach makes each such packet a miss. The key here holds only the bits of the fields the
pipeline reads or writes; the rest are copied from the packet into the cached output, and an
Internet checksum over them (the IPv4 header checksum after a TTL decrement) is updated from the
cached one by their difference (RFC 1624's incremental update, done mod 0xFFFF).

It is decided from the BMv2 JSON, and only for programs where the result provably is "the input
with the key's rewrites": otherwise `analyse` returns None and the cache keys every reachable byte,
as before. Conditions:
- the parser is acyclic, at most MAX_PATHS paths, only extracts of fixed-width headers (no
  advance, which drops bytes from the output), no header twice on one path;
- nothing else changes a header's validity (no setValid/setInvalid, header copies, unions,
  stacks), so the headers valid at the deparser are exactly the ones the path extracted;
- the deparser emits, on every path, the extracted headers in the order they were extracted: the
  output is the input's bytes at the same offsets, with field values changed.
Then two packets with the same key take the same path: every select key, `verify` condition and
transition is read from key bits, and the length counts up to the longest path. The same path
gives the same layout, the same read fields give the same controls' outcome (the tables and the
program are fixed between writes, which empty the cache), and every written field gets the same
value.

What is "read": every field the program names outside the deparser, the checksums and the
calculations (select keys, table keys, conditions, action operands and destinations, parser sets
and verifies), the inputs of every hash a primitive uses, and, when the program reads
standard_metadata.checksum_error, every verified checksum's inputs and target. An update_checksum
stays incremental only when it is csum16, runs exactly when its target's header is valid, and its
target is 16 bits that no checksum or hash reads; any other checksum's inputs and target are read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_PATHS = 256
VALIDITY_PRIMITIVES = frozenset(
    {"add_header", "remove_header", "assign_header", "assign_union", "assign_header_stack", "push", "pop"}
)
SKIP_SECTIONS = ("header_types", "headers", "field_aliases", "deparsers", "checksums", "calculations")


@dataclass(frozen=True)
class Checksum:
    """One incrementally updated checksum in one layout. Bit positions count from the least
    significant bit of the key integer (the first `reach` bytes, big-endian)."""

    target: int  # position of the 16-bit target field
    # (mask of input bits copied from the packet, shift): the input's contribution to the
    # ones'-complement sum is ((x & mask) << shift) mod 0xFFFF, since 2**16 == 1 (mod 0xFFFF)
    groups: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Layout:
    """One set of extracted headers: `off` bytes parsed, and which bits of them come from where."""

    off: int
    keep: int  # bits the output copies from the packet (not in the key)
    checksums: tuple[Checksum, ...]


@dataclass(frozen=True)
class KeyPlan:
    """The key is (port, min(length, reach) or the length, int(data[:reach]) & read)."""

    reach: int
    read: int
    layouts: dict[tuple[str, ...], Layout]  # by the extracted headers' names, in deparser order


def analyse(bmv2: dict) -> tuple[KeyPlan | None, str]:
    """(the plan, "") when packets may be keyed by what the program reads, else (None, why not)."""
    if bmv2.get("header_unions") or bmv2.get("header_stacks") or bmv2.get("header_union_stacks"):
        return None, "the program has header stacks or unions"
    htypes = {t["name"]: t["fields"] for t in bmv2.get("header_types", [])}
    meta = {h["name"] for h in bmv2.get("headers", []) if h.get("metadata")}
    fields = {h["name"]: htypes.get(h["header_type"], []) for h in bmv2.get("headers", [])}
    paths, why = _paths(bmv2, fields, meta)
    if paths is None:
        return None, why
    deparsers = bmv2.get("deparsers", [])
    if len(deparsers) != 1 or deparsers[0].get("primitives"):
        return None, "the deparser is not a plain list of emits"
    order = deparsers[0].get("order", [])
    for path in paths:
        if [h for h in order if h in path] != path:
            return None, "the deparser does not emit the extracted headers in their order"
    reads, whole, calcs, why = _reads(bmv2, meta)
    if why:
        return None, why
    targets = _incremental_checksums(bmv2, reads, whole, calcs, meta)
    reach = max((sum(_width(fields[h]) for h in p) for p in paths), default=0) // 8
    read = 0
    layouts: dict[tuple[str, ...], Layout] = {}
    for path in paths:
        layout, r = _layout(path, fields, reach, reads, whole, targets, meta)
        read |= r
        layouts[tuple(path)] = layout
    if all(lay.keep == 0 and not lay.checksums for lay in layouts.values()):
        return None, "the program reads every bit it parses"
    return KeyPlan(reach, read, layouts), ""


def _width(fs: list) -> int:
    return sum(f[1] for f in fs)


def _paths(bmv2: dict, fields: dict[str, list], meta: set[str]) -> tuple[list[list[str]] | None, str]:
    parsers = bmv2.get("parsers", [])
    if len(parsers) != 1:
        return None, "the program does not have exactly one parser"
    states = {st["name"]: st for st in parsers[0].get("parse_states", [])}
    paths: list[list[str]] = []
    problem: list[str] = []

    def walk(name: str | None, path: list[str], seen: tuple[str, ...]) -> None:
        if problem:
            return
        if name is None:
            if path not in paths:
                paths.append(path)
            if len(paths) > MAX_PATHS:
                problem.append(f"the parser has more than {MAX_PATHS} paths")
            return
        st = states.get(name)
        if st is None or name in seen:
            problem.append(f"the parser state {name} is unknown or loops")
            return
        path = list(path)
        for op in st.get("parser_ops", []):
            kind, ps = op.get("op"), op.get("parameters", [])
            if kind == "extract":
                h = ps[0].get("value") if ps and ps[0].get("type") == "regular" else None
                if h is None or h in meta or h in path or not all(isinstance(f[1], int) for f in fields[h]):
                    problem.append("the parser extracts a header twice, or not a fixed-size header")
                    return
                path.append(h)
            elif kind == "primitive":
                if any(p.get("op") in VALIDITY_PRIMITIVES for p in ps):
                    problem.append("the parser changes a header's validity")
                    return
            elif kind not in ("set", "verify"):
                problem.append(f"the parser uses {kind}")
                return
        for t in st.get("transitions", []) or [{}]:
            walk(t.get("next_state"), path, (*seen, name))

    walk(parsers[0].get("init_state"), [], ())
    if problem:
        return None, problem[0]
    return paths, ""


def _reads(bmv2: dict, meta: set[str]) -> tuple[set[tuple[str, str]], set[str], set[str], str]:
    """(fields named, headers named whole, calculations a primitive uses, a reason to give up)."""
    reads: set[tuple[str, str]] = set()
    whole: set[str] = set()
    calcs: set[str] = set()
    problem: list[str] = []

    def walk(v: Any, parent_op: str | None = None) -> None:
        if isinstance(v, list):
            for x in v:
                walk(x, parent_op)
            return
        if not isinstance(v, dict):
            return
        t = v.get("type")
        if t == "field" and isinstance(v.get("value"), list) and len(v["value"]) == 2:
            h, f = v["value"]
            if f == "$valid$":
                if parent_op == "assign":
                    problem.append("an action assigns a header's validity")
            elif h not in meta:
                reads.add((h, f))
            return
        if t == "header":
            if parent_op not in ("valid", "valid_union") and v.get("value") not in meta:
                whole.add(v["value"])
            return
        if t in ("stack_field", "header_stack", "union", "header_union", "union_stack", "lookahead"):
            problem.append(f"the program uses {t} values")
            return
        if t == "calculation":
            calcs.add(v.get("value"))
            return
        op = v.get("op")
        if op in VALIDITY_PRIMITIVES:
            problem.append(f"the program uses {op}")
        if "target" in v and isinstance(v["target"], list) and len(v["target"]) == 2:  # a table key
            if v["target"][0] not in meta:
                reads.add((v["target"][0], v["target"][1]))
        for key, x in v.items():
            if key != "target":
                walk(x, op if isinstance(op, str) else parent_op)

    for key, section in bmv2.items():
        if key not in SKIP_SECTIONS:
            walk(section)
    return reads, whole, calcs, problem[0] if problem else ""


def _calc_inputs(calc: dict, fields: dict[str, list]) -> list[dict] | None:
    """A calculation's inputs as fields and constants (a whole header expanded), or None."""
    out: list[dict] = []
    for x in calc.get("input", []):
        t = x.get("type")
        if t == "field":
            out.append(x)
        elif t == "header":
            out += [{"type": "field", "value": [x["value"], f[0]]} for f in fields.get(x["value"], [])]
        elif t == "hexstr":
            out.append(x)
        else:
            return None
    return out


def _incremental_checksums(
    bmv2: dict, reads: set[tuple[str, str]], whole: set[str], calcs: set[str], meta: set[str]
) -> dict[tuple[str, str], list[dict]]:
    """{target field: its calculation's inputs} of the update checksums kept incremental. Every
    other checksum's inputs and target, and the inputs of calculations primitives use, are added
    to `reads` (or `whole`)."""
    htypes = {t["name"]: t["fields"] for t in bmv2.get("header_types", [])}
    fields = {h["name"]: htypes.get(h["header_type"], []) for h in bmv2.get("headers", [])}
    by_name = {c.get("name"): c for c in bmv2.get("calculations", [])}
    reads_error = ("standard_metadata", "checksum_error") in _meta_reads(bmv2)
    used: list[tuple[list[dict] | None, tuple[str, str] | None]] = [
        (_calc_inputs(by_name.get(n, {}), fields), None) for n in calcs
    ]
    candidates: dict[tuple[str, str], list[dict]] = {}
    demoted: list[tuple[list[dict] | None, tuple[str, str]]] = []
    for c in bmv2.get("checksums", []):
        calc = by_name.get(c.get("calculation"), {})
        inputs = _calc_inputs(calc, fields)
        target = (c["target"][0], c["target"][1])
        if c.get("verify", True) and reads_error:
            demoted.append((inputs, target))
        if not c.get("update", True):
            continue
        width = next((f[1] for f in fields.get(target[0], []) if f[0] == target[1]), 0)
        cond = c.get("if_cond")
        ok = (
            calc.get("algo") in ("csum16", "cksum16")
            and inputs is not None
            and width == 16
            and target[0] not in meta
            and target not in candidates
            and (cond is None or _is_validity_of(cond, target[0]))
            and not any(_signed(fields, x) for x in inputs or [])  # the sum is over raw bits
        )
        if ok:
            candidates[target] = inputs  # type: ignore[assignment]
        else:
            demoted.append((inputs, target))
    # A target that something else reads as an input (or the same target twice) is demoted too.
    changed = True
    while changed:
        changed = False
        named: set[tuple[str, str]] = set()
        for inputs, _ in used + demoted:
            named |= _input_fields(inputs)
        for inputs in candidates.values():
            named |= _input_fields(inputs)
        for t in list(candidates):
            if t in named or t[0] in whole:
                demoted.append((candidates.pop(t), t))
                changed = True
    for inputs, target in used + demoted:
        if inputs is None:
            if target is not None:
                whole.add(target[0])
            continue
        for h, f in _input_fields(inputs):
            if h not in meta:
                reads.add((h, f))
        if target is not None and target[0] not in meta:
            reads.add(target)
    # Calculations whose inputs are not plain fields: every header they might read is read whole.
    for n in calcs:
        if _calc_inputs(by_name.get(n, {}), fields) is None:
            for x in by_name.get(n, {}).get("input", []):
                if x.get("type") == "header":
                    whole.add(x["value"])
    return candidates


def _signed(fields: dict[str, list], x: dict) -> bool:
    if x.get("type") != "field":
        return False
    h, f = x["value"]
    return any(g[0] == f and len(g) > 2 and g[2] for g in fields.get(h, []))


def _meta_reads(bmv2: dict) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()

    def walk(v: Any) -> None:
        if isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            if v.get("type") == "field" and isinstance(v.get("value"), list) and len(v["value"]) == 2:
                found.add((v["value"][0], v["value"][1]))
            for x in v.values():
                walk(x)

    for key, section in bmv2.items():
        if key not in SKIP_SECTIONS:
            walk(section)
    return found


def _input_fields(inputs: list[dict] | None) -> set[tuple[str, str]]:
    return {(x["value"][0], x["value"][1]) for x in inputs or [] if x.get("type") == "field"}


def _is_validity_of(cond: Any, header: str) -> bool:
    """True for p4c's `hdr.isValid()` condition on `header` (d2b of its $valid$, or `valid`)."""
    if isinstance(cond, dict) and cond.get("type") == "expression":
        cond = cond.get("value")
    if not isinstance(cond, dict):
        return False
    right = cond.get("right") or {}
    if cond.get("op") == "d2b":
        return right.get("type") == "field" and right.get("value") == [header, "$valid$"]
    if cond.get("op") == "valid":
        return right.get("type") == "header" and right.get("value") == header
    return False


def _layout(
    path: list[str],
    fields: dict[str, list],
    reach: int,
    reads: set[tuple[str, str]],
    whole: set[str],
    targets: dict[tuple[str, str], list[dict]],
    meta: set[str],
) -> tuple[Layout, int]:
    """The layout of one path, and the key bits it contributes."""
    total = reach * 8
    where: dict[tuple[str, str], tuple[int, int]] = {}  # field -> (position of its lsb, width)
    start = 0
    read = keep = 0
    for h in path:
        for f in fields[h]:
            name, w = f[0], f[1]
            pos = total - start - w
            start += w
            where[(h, name)] = (pos, w)
            m = ((1 << w) - 1) << pos
            if (h, name) in targets:
                if (h, name) in reads or h in whole:
                    read |= m
            elif (h, name) in reads or h in whole:
                read |= m
            else:
                keep |= m
    sums = []
    for target, inputs in targets.items():
        if target not in where:
            continue  # its header is not on this path: the update does not run
        present = []  # (width, position in the packet or None for a key-determined input)
        for x in inputs:
            if x.get("type") == "hexstr":
                present.append(
                    (int(x.get("bitwidth") or 0) or max(8, int(x["value"], 16).bit_length()), None)
                )
                continue
            h, f = x["value"]
            if h in meta:
                w = next((g[1] for g in fields.get(h, []) if g[0] == f), 0)
                present.append((w, None))
            elif (h, f) in where:  # a field of an invalid header is left out of the sum (BMv2)
                pos, w = where[(h, f)]
                present.append((w, pos if (h, f) not in reads and h not in whole else None))
        n = sum(w for w, _ in present)
        bit = n + (-n) % 16  # csum16 pads the bit string to whole 16-bit words at its end
        groups: dict[int, int] = {}
        extra: list[tuple[int, int]] = []
        for w, pos in present:
            bit -= w
            if pos is None:
                continue
            shift = (bit - pos) % 16
            m = ((1 << w) - 1) << pos
            if groups.get(shift, 0) & m:
                extra.append((m, shift))  # the same field twice: keep both terms
            else:
                groups[shift] = groups.get(shift, 0) | m
        terms = tuple((m, shift) for shift, m in sorted(groups.items())) + tuple(extra)
        sums.append(Checksum(where[target][0], terms))
    return Layout(start // 8, keep, tuple(sums)), read


__all__ = ["MAX_PATHS", "Checksum", "KeyPlan", "Layout", "analyse"]
