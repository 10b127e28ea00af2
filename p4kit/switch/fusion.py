"""Register arrays that an action uses lane by lane, fused into rows and run as one list operation.

Why: a program that keeps a vector per register index (INC keeps 64 lanes per slot) must declare
one register array per lane, and its actions repeat the same few primitives once per lane:

    lane0.read(acc, i); acc = acc + hdr.v0; lane0.write(i, acc); hdr.v0 = acc;
    lane1.read(acc, i); acc = acc + hdr.v1; lane1.write(i, acc); hdr.v1 = acc;   ... x 64

Generated one primitive at a time that is 256 statements and some 130 ns per lane. Here such a run
is recognised in the BMv2 JSON of ANY program (nothing is keyed to a name) and becomes

    row = FUSED[i]; v = [(r + f) & 0xFFFFFFFF for r, f in zip(row, h[1:65])]; FUSED[i] = v; h[1:65] = v

which is one C-level loop. The storage changes with it: the K registers become one list of rows
(row i holds every lane's cell i), so one index reads all lanes at once. `FusedColumn` gives each
original register its list-like view for everything else (the control plane, other actions), so
the program and the control plane see K ordinary registers.

What counts as a lane run (`find_lane_runs`): K >= 4 consecutive segments of L <= 6 primitives that
are equal except that segment k names register R_k where segment 0 names R_0, and field f_k of one
header where segment 0 names f_0, with
- only register_read, register_write and assign; one register and one lane field per segment;
- the lane fields consecutive in their header, of one width, unsigned; the registers distinct, of
  one size and width; the index the same everywhere and free of lane fields;
- lanes independent: every other field a segment writes (a temporary) is written before it is read
  in that segment; fields it only reads are the same for every lane.
Each segment's effect is then evaluated symbolically (`LaneProgram`) over two per-lane inputs, the
register cell `_lr` and the packet's lane field `_lf`, into one element expression per output.
An expression this module does not translate leaves the run to the ordinary per-lane code.

Packing (`packable_headers`): when every field of the lane header is a lane of such runs and is read
nowhere else (except whole, in order, in a calculation), the header is held as [valid, one integer
of its bytes] and the rows as integers too. Parsing is then `int.from_bytes`, deparsing `to_bytes`,
a checksum adds the integer as it is (2**16 == 1 mod 0xFFFF), and a lane-wise add mod 2**w is one
expression on the two integers: ((a & L) + (b & L)) ^ ((a ^ b) & H), with L each lane's low w-1
bits and H its top bit. Other lane operations unpack, run the list form and pack again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from p4kit.switch.program import Program

MIN_LANES = 4
MAX_SEGMENT = 6
_OPS = frozenset({"register_read", "register_write", "assign", "modify_field"})


@dataclass
class LaneRun:
    """K segments of `seg` primitives starting at primitive `start` of an action."""

    start: int
    seg: int
    count: int
    registers: tuple[str, ...]  # R_0 .. R_{K-1}
    header: str  # instance holding the lane fields
    fields: tuple[str, ...]  # f_0 .. f_{K-1}, consecutive in the header
    template: list[dict]  # segment 0


def _canon(v: Any) -> Any:
    """The primitive with every register and field name replaced by a placeholder."""
    if isinstance(v, dict):
        t = v.get("type")
        if t == "register_array":
            return {"type": t, "value": "$R"}
        if t == "field" and isinstance(v.get("value"), list) and len(v["value"]) == 2:
            return {"type": t, "value": [v["value"][0], "$F"]}
        return {k: _canon(x) for k, x in v.items() if k != "source_info"}
    if isinstance(v, list):
        return [_canon(x) for x in v]
    return v


def _pairs(a: Any, b: Any, out: set) -> bool:
    """Whether `b` is `a` with register names and field names (same header) substituted; the
    substitutions go to `out` as ("R", a, b) and ("F", (h, fa), (h, fb))."""
    if isinstance(a, dict) and isinstance(b, dict):
        t = a.get("type")
        if t == "register_array" and b.get("type") == t:
            if a["value"] != b["value"]:
                out.add(("R", a["value"], b["value"]))
            return True
        if t == "field" and b.get("type") == t and len(a.get("value", ())) == 2:
            (ha, fa), (hb, fb) = a["value"], b["value"]
            if ha != hb:
                return False
            if fa != fb:
                out.add(("F", (ha, fa), (hb, fb)))
            return True
        keys = {k for k in a if k != "source_info"}
        if keys != {k for k in b if k != "source_info"}:
            return False
        return all(_pairs(a[k], b[k], out) for k in keys)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_pairs(x, y, out) for x, y in zip(a, b, strict=True))
    return a == b


def _segment_subst(prims: list[dict], s0: int, sk: int, seg: int) -> tuple[tuple, tuple] | None:
    """The (register, field) substitution turning segment s0 into segment sk, when it is exactly one
    register and one field of one header."""
    out: set = set()
    for i in range(seg):
        if not _pairs(prims[s0 + i], prims[sk + i], out):
            return None
    regs = [p for p in out if p[0] == "R"]
    flds = [p for p in out if p[0] == "F"]
    if len(regs) != 1 or len(flds) != 1:
        return None
    return regs[0][1:], flds[0][1:]


def find_lane_runs(prog: Program, prims: list[dict]) -> list[LaneRun]:
    """The lane runs of one action body (see the module docstring), left to right."""
    canon = [json.dumps(_canon(p), sort_keys=True) for p in prims]
    runs: list[LaneRun] = []
    n = len(prims)
    s = 0
    while s < n:
        best: LaneRun | None = None
        for seg in range(1, MAX_SEGMENT + 1):
            if s + MIN_LANES * seg > n:
                break
            if any(prims[s + i].get("op") not in _OPS for i in range(seg)):
                continue
            regs: list[str] = []
            flds: list[tuple[str, str]] = []
            k = 1
            while s + (k + 1) * seg <= n and canon[s + k * seg : s + (k + 1) * seg] == canon[s : s + seg]:
                sub = _segment_subst(prims, s, s + k * seg, seg)
                if sub is None:
                    break
                (r0, rk), (f0, fk) = sub
                if not regs:
                    regs, flds = [r0], [f0]
                if r0 != regs[0] or f0 != flds[0] or rk in regs or fk in flds:
                    break
                regs.append(rk)
                flds.append(fk)
                k += 1
            if k >= MIN_LANES and (best is None or k * seg > best.count * best.seg):
                run = _checked_run(prog, prims, s, seg, k, regs, flds)
                if run is not None:
                    best = run
        if best is None:
            s += 1
        else:
            runs.append(best)
            s += best.count * best.seg
    return runs


def _checked_run(
    prog: Program, prims: list[dict], s: int, seg: int, k: int, regs: list[str], flds: list[tuple[str, str]]
) -> LaneRun | None:
    header = flds[0][0]
    inst = prog.header_by_name.get(header)
    if inst is None or any(h != header for h, _ in flds):
        return None
    positions = [inst.htype.index.get(f) for _, f in flds]
    if None in positions or positions != list(range(positions[0], positions[0] + k)):  # type: ignore[operator]
        return None
    infos = [inst.htype.fields[p] for p in positions]  # type: ignore[index]
    if len({f.width for f in infos}) != 1 or any(f.signed or f.width == 0 for f in infos):
        return None
    arrays = [prog.registers.get(r) for r in regs]
    if any(a is None for a in arrays) or len({(a.size, a.bitwidth) for a in arrays}) != 1:  # type: ignore[union-attr]
        return None
    run = LaneRun(s, seg, k, tuple(regs), header, tuple(f for _, f in flds), prims[s : s + seg])
    return run if _lanes_independent(prog, run) else None


def _refs(v: Any) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if isinstance(v, dict):
        if v.get("type") == "field" and isinstance(v.get("value"), list) and len(v["value"]) == 2:
            out.append((v["value"][0], v["value"][1]))
        for k, x in v.items():
            if k != "source_info":
                out += _refs(x)
    elif isinstance(v, list):
        for x in v:
            out += _refs(x)
    return out


def _lanes_independent(prog: Program, run: LaneRun) -> bool:
    """Whether each lane's segment only reads its own lane field, its own register cell, values
    the same for every lane, and temporaries it wrote itself first (so the lanes can run at once)."""
    lane = (run.header, run.fields[0])
    others = {(run.header, f) for f in run.fields[1:]}
    dsts: list[tuple[str, str]] = []
    index: Any = None
    for p in run.template:
        ps = p.get("parameters", [])
        op = p.get("op")
        if op == "register_write":
            idx, srcs, dst = ps[1], [ps[2]], None
        elif op == "register_read":
            idx, srcs, dst = ps[2], [], ps[0]
        else:
            idx, srcs, dst = None, [ps[1]], ps[0]
        if idx is not None:
            if index is not None and idx != index:
                return False
            index = idx
        if dst is not None:
            if dst.get("type") != "field":
                return False
            key = (dst["value"][0], dst["value"][1])
            inst = prog.header_by_name.get(key[0])
            pos = inst.htype.index.get(key[1]) if inst is not None else None
            if pos is None or inst.htype.fields[pos].signed or inst.htype.fields[pos].width == 0:  # type: ignore[union-attr]
                return False
            dsts.append(key)
    if index is None:
        return False
    written = set(dsts) - {lane}
    if set(_refs(index)) & (written | {lane} | others) or set(_refs(run.template)) & others:
        return False
    seen: set[tuple[str, str]] = set()
    for p in run.template:
        ps = p.get("parameters", [])
        op = p.get("op")
        srcs = [ps[2]] if op == "register_write" else [] if op == "register_read" else [ps[1]]
        if any(r in written and r not in seen for r in _refs(srcs)):
            return False  # a temporary read before this lane wrote it: the previous lane's value
        if op != "register_write":
            seen.add((ps[0]["value"][0], ps[0]["value"][1]))
    return True


def fusable_groups(prog: Program) -> dict[int, list[LaneRun]]:
    """Lane runs of every action whose registers can be fused: a register belongs to one register
    tuple only (the same tuple may serve several actions: store, add, max, load)."""
    by_action: dict[int, list[LaneRun]] = {}
    owner: dict[str, tuple[str, ...]] = {}
    bad: set[tuple[str, ...]] = set()
    for a in prog.actions_by_id.values():
        if any(p.get("op") in ("_jump", "_jump_if_zero") for p in a.primitives):
            continue
        runs = find_lane_runs(prog, a.primitives)
        if runs:
            by_action[a.id] = runs
        for run in runs:
            for r in run.registers:
                if owner.setdefault(r, run.registers) != run.registers:
                    bad.add(owner[r])
                    bad.add(run.registers)
    return {
        aid: kept for aid, runs in by_action.items() if (kept := [r for r in runs if r.registers not in bad])
    }


# ------------------------------------------------------------------------------------- packing
@dataclass(frozen=True)
class Packed:
    """A header held as [valid, one integer of all its fields] (big-endian, field 0 most significant)."""

    header: str
    lanes: int
    width: int  # of each lane (8/16/32/64)

    @property
    def nbytes(self) -> int:
        return self.lanes * self.width // 8

    @property
    def lane_mask(self) -> int:
        return (1 << self.width) - 1

    def repeated(self, pattern: int) -> int:
        """`pattern` in every lane."""
        out = 0
        for _ in range(self.lanes):
            out = (out << self.width) | pattern
        return out


_HEADER_USES_OK = {"extract", "add_header", "remove_header", "valid"}


def packable_headers(prog: Program, groups: dict[int, list[LaneRun]]) -> dict[str, Packed]:
    """Lane headers that can live packed: every field is a lane of fused runs covering the whole
    header, and the fields are read nowhere else except as the whole header, in order, in a
    calculation (a checksum over them reads the packed integer as it is)."""
    candidates: dict[str, Packed] = {}
    runs_by_header: dict[str, list[LaneRun]] = {}
    for runs in groups.values():
        for run in runs:
            runs_by_header.setdefault(run.header, []).append(run)
    for header, runs in runs_by_header.items():
        inst = prog.header_by_name.get(header)
        if inst is None or inst.metadata:
            continue
        names = tuple(f.name for f in inst.htype.fields)
        widths = {f.width for f in inst.htype.fields}
        if len(widths) != 1 or next(iter(widths)) not in (8, 16, 32, 64):
            continue
        if any(run.fields != names for run in runs):
            continue
        if any(prog.registers[run.registers[0]].bitwidth != next(iter(widths)) for run in runs):
            continue  # rows and header must have lanes of one width
        candidates[header] = Packed(header, len(names), next(iter(widths)))
    if not candidates:
        return {}
    # The fused rows of a register tuple are one integer per row, combined with every header its runs
    # use: they are packed when all those headers are, with one layout (INC's chunks widened from
    # int8 store one header's lanes or another's into the same cells), else none is.
    tuples: dict[tuple[str, ...], set[str]] = {}
    for runs in groups.values():
        for run in runs:
            tuples.setdefault(run.registers, set()).add(run.header)

    def drop_mixed_tuples() -> None:
        changed = True
        while changed:
            changed = False
            for headers in tuples.values():
                layouts = {(candidates[h].lanes, candidates[h].width) for h in headers if h in candidates}
                if len(layouts) > 1 or (layouts and not headers <= candidates.keys()):
                    for h in headers:
                        changed |= candidates.pop(h, None) is not None

    drop_mixed_tuples()
    bad: set[str] = set()
    covered: dict[int, set[int]] = {}  # action id -> primitive indices inside fused runs
    for aid, runs in groups.items():
        covered[aid] = {i for r in runs for i in range(r.start, r.start + r.seg * r.count)}
    for a in prog.actions_by_id.values():
        seen: set[str] = set()
        _scan_action(a, covered.get(a.id, set()), candidates, seen)
        bad |= seen - _unpackable(prog, groups, a, covered.get(a.id, set()), candidates, seen)
    for c in prog.calculations.values():
        _scan_calc(prog, c.get("input", []), candidates, bad)
    j = prog.json
    for key in ("pipelines", "checksums", "learn_lists", "field_lists", "parse_vsets"):
        _scan(j.get(key, []), candidates, bad, key)
    for parser in j.get("parsers", []):
        for st in parser.get("parse_states", []):
            for op in st.get("parser_ops", []):
                if op.get("op") == "extract" and all(
                    x.get("type") == "regular" for x in op.get("parameters", [])
                ):
                    continue
                _scan(op, candidates, bad, op.get("op", ""))
            _scan(st.get("transition_key", []), candidates, bad, "select")
    for h in bad:
        candidates.pop(h, None)
    drop_mixed_tuples()  # a header found unfit leaves the others of its tuples unpacked too
    return candidates


def _scan_action(a: Any, skip: set[int], cands: dict[str, Packed], seen: set[str]) -> None:
    """The candidates an action's primitives outside its fused runs refer to (see _scan)."""
    for i, p in enumerate(a.primitives):
        if i not in skip:
            _scan(p, cands, seen, p.get("op", ""))


def _unpackable(
    prog: Program, groups: dict[int, list[LaneRun]], a: Any, skip: set[int], cands: dict, seen: set[str]
) -> set[str]:
    """Of the packed headers an action reads or writes field by field outside its runs (`seen`),
    those its body may work on in the list form: codegen unpacks them in place at the start and
    packs them again at the end, and runs the action's lane runs lane by lane (their headers are
    unpacked too). Allowed when the action never refers to such a header whole, calls no
    calculation (one would read the integer) and the headers' fields are unsigned (the list form's
    values unpack as they are). INC's widening of int8 chunks into four headers is such an action:
    the usual add and store stay packed."""
    if not seen or any(isinstance(x, dict) and x.get("type") == "calculation" for x in _walk(a.primitives)):
        return set()
    whole: set[str] = set()
    for i, p in enumerate(a.primitives):
        if i not in skip and p.get("op") not in _HEADER_USES_OK:  # setValid is fine on either form
            for x in _walk(p):
                if x.get("type") in ("header", "regular") and x.get("value") in cands:
                    whole.add(x["value"])
    mine = seen | {r.header for r in groups.get(a.id, []) if r.header in cands}
    if whole & mine or any(f.signed for h in mine for f in prog.header_by_name[h].htype.fields):
        return set()
    return mine


def unpacking_actions(
    prog: Program, groups: dict[int, list[LaneRun]], packed: dict[str, Packed]
) -> dict[int, set[str]]:
    """Action id -> the packed headers its body works on unpacked (see _unpackable)."""
    covered = {
        aid: {i for r in runs for i in range(r.start, r.start + r.seg * r.count)}
        for aid, runs in groups.items()
    }
    out: dict[int, set[str]] = {}
    for a in prog.actions_by_id.values():
        seen: set[str] = set()
        _scan_action(a, covered.get(a.id, set()), packed, seen)
        if seen:
            out[a.id] = seen | {r.header for r in groups.get(a.id, []) if r.header in packed}
    return out


def _walk(v: Any) -> Any:
    """Every dict inside `v` (JSON values and expressions), depth first."""
    if isinstance(v, dict):
        yield v
        for k, x in v.items():
            if k != "source_info":
                yield from _walk(x)
    elif isinstance(v, list):
        for x in v:
            yield from _walk(x)


def _scan(v: Any, cands: dict[str, Packed], bad: set[str], ctx: str) -> None:
    """Mark candidates referred to in `v` other than as allowed (a field anywhere; a whole header
    outside extract, setValid/setInvalid and isValid)."""
    if isinstance(v, dict):
        t = v.get("type")
        val = v.get("value")
        if t == "field" and isinstance(val, list) and val and val[0] in cands:
            if len(val) < 2 or val[1] not in ("$valid$", "_valid"):
                bad.add(val[0])
        elif (
            t in ("header", "regular")
            and isinstance(val, str)
            and val in cands
            and ctx not in _HEADER_USES_OK
        ):
            bad.add(val)
        op = v.get("op")
        for k, x in v.items():
            if k != "source_info":
                _scan(x, cands, bad, op if isinstance(op, str) else ctx)
    elif isinstance(v, list):
        for x in v:
            _scan(x, cands, bad, ctx)


def _scan_calc(prog: Program, inputs: list[dict], cands: dict[str, Packed], bad: set[str]) -> None:
    """A calculation may read a packed header only whole: its fields in order, one after another."""
    i = 0
    while i < len(inputs):
        x = inputs[i]
        val = x.get("value")
        if x.get("type") == "field" and isinstance(val, list) and val and val[0] in cands:
            header = val[0]
            names = [f.name for f in prog.header_by_name[header].htype.fields]
            got = inputs[i : i + len(names)]
            if [(g.get("type"), g.get("value")) for g in got] != [("field", [header, n]) for n in names]:
                bad.add(header)
            i += len(names)
            continue
        i += 1


# ------------------------------------------------------------------------------------- storage
class FusedRows:
    """K registers of one size as `rows[i]` = every lane's cell i: a list (or the shared zero
    tuple), or, for a packed lane header, one integer of all lanes (lane 0 most significant)."""

    def __init__(
        self,
        names: tuple[str, ...],
        size: int,
        columns: list[list[int]] | None = None,
        packed: Packed | None = None,
    ) -> None:
        self.names = names
        self.size = size
        self.packed = packed
        nonzero = bool(columns) and any(any(c) for c in columns)  # type: ignore[union-attr]
        if packed is not None:
            self.zero: Any = 0
            self.rows: list[Any] = [0] * size
            if nonzero:
                for i, cells in enumerate(zip(*columns, strict=True)):  # type: ignore[misc]
                    row = 0
                    for v in cells:
                        row = (row << packed.width) | v
                    self.rows[i] = row
            return
        self.zero = (0,) * len(names)
        if nonzero:
            self.rows = [list(t) for t in zip(*columns, strict=True)]  # type: ignore[misc]
        else:
            self.rows = [self.zero] * size


class FusedColumn:
    """One register of a fused group, as the list of its cells (what SwitchState.registers holds)."""

    __slots__ = ("fused", "lane", "mask", "shift")

    def __init__(self, fused: FusedRows, lane: int) -> None:
        self.fused = fused
        self.lane = lane
        pk = fused.packed
        self.shift = (pk.lanes - 1 - lane) * pk.width if pk is not None else 0
        self.mask = pk.lane_mask if pk is not None else 0

    def __len__(self) -> int:
        return self.fused.size

    def _get(self, row: Any) -> int:
        return (row >> self.shift) & self.mask if self.fused.packed is not None else row[self.lane]

    def __iter__(self) -> Iterator[int]:
        return (self._get(row) for row in self.fused.rows)

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self._get(row) for row in self.fused.rows[i]]
        return self._get(self.fused.rows[i])

    def __setitem__(self, i: int | slice, value: Any) -> None:
        rows = self.fused.rows
        if isinstance(i, slice):
            for idx, v in zip(range(*i.indices(len(rows))), value, strict=True):
                self[idx] = v
            return
        if self.fused.packed is not None:
            sh, m = self.shift, self.mask
            rows[i] = (rows[i] & ~(m << sh)) | ((value & m) << sh)
            return
        row = rows[i]
        if type(row) is tuple:
            row = list(row)
            rows[i] = row
        row[self.lane] = value

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, (list, FusedColumn)) else NotImplemented

    __hash__ = None  # type: ignore[assignment]


def fuse_state(
    prog: Program,
    registers: dict[str, Any],
    groups: dict[int, list[LaneRun]],
    packed: dict[str, Packed] | None = None,
) -> dict[tuple, FusedRows]:
    """Turn the registers of every fused tuple into one FusedRows (keeping their values); already
    fused ones (a recompile: tracing turned on or off) are kept as they are. Rows of runs over a
    packed header are packed too (the same whether or not the code is traced)."""
    fused: dict[tuple, FusedRows] = {}
    for runs in groups.values():
        for run in runs:
            if run.registers in fused:
                continue
            first = registers[run.registers[0]]
            if isinstance(first, FusedColumn) and first.fused.names == run.registers:
                fused[run.registers] = first.fused
                continue
            columns = [list(registers[r]) for r in run.registers]
            pk = (packed or {}).get(run.header)
            rows = FusedRows(run.registers, prog.registers[run.registers[0]].size, columns, pk)
            for lane, r in enumerate(run.registers):
                registers[r] = FusedColumn(rows, lane)
            fused[run.registers] = rows
    return fused


__all__ = [
    "FusedColumn",
    "FusedRows",
    "LaneRun",
    "find_lane_runs",
    "fusable_groups",
    "fuse_state",
    "unpacking_actions",
]
