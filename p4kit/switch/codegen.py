"""BMv2 JSON -> specialised Python source, compiled once per pipeline.

Why: walking JSON dicts per packet costs tens of microseconds; straight-line Python that indexes
header lists directly costs a few. Every parser state, action, table, conditional, checksum and the
deparser becomes one small function; control flow nodes return the next node's function.

Packet representation used by the generated code (see engine.Pkt):
  H          list of header instances; each is a list ``[valid, f0, f1, ...]`` of ints
             (metadata instances are always valid). Extraction replaces the whole list.
  P.data     the packet bytes as received; P.off is the byte offset where parsing stopped, so the
             deparser appends ``P.data[P.off:]`` (the unparsed payload).
  P.nx       next-index of each header stack.
Unsigned fields hold values in [0, 2**w); signed fields hold Python ints in two's-complement range.

With ``trace=True`` the same functions are generated with calls to ``TR(msg)``; with ``trace=False``
no trace code exists at all.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass, field
from typing import Any

from p4kit.switch import fusion, regions, replicas
from p4kit.switch.errors import PipelineLoadError
from p4kit.switch.program import HeaderInst, HeaderType, Program, TableInfo
from p4kit.switch.state import SwitchState


class ParserError(Exception):
    """Raised by generated parser code; ``code`` is the P4 error's numeric value."""

    def __init__(self, code: int, name: str) -> None:
        super().__init__(name)
        self.code = code
        self.name = name


class _NotLane(Exception):
    """A lane run whose segment cannot be written as one list operation (fusion.py)."""


class ExitControl(Exception):
    """``exit`` statement: leave the current control (ingress or egress) immediately."""


class AssertionFailed(Exception):
    """assert()/assume() false: simple_switch aborts; p4kit drops the packet with this reason.
    Also raised for a header stack index out of bounds in a control (BMv2 fails there too)."""


class StackIndexOutOfRange(AssertionFailed):
    """A header stack index computed at run time is out of range. A primitive that meets one does
    nothing and a condition that meets one is false (p4c's HSIndexSimplifier turns `hs[i]... = e`
    into one statement per index under `if (i == k)`, and `if (c(hs[i]))` into `if (i == k &&
    c(hs[k]))` chains ending in the else branch); elsewhere (a table key) the packet is dropped
    with this reason."""


def stack_at(ids: tuple[int, ...], idx: int) -> int:
    if 0 <= idx < len(ids):
        return ids[idx]
    raise StackIndexOutOfRange(f"header stack index {idx} out of bounds (size {len(ids)})")


def oob_cond(cond: Any) -> bool:
    """A predicated condition (an `if` inside an action) that reads a header stack at a run-time
    index out of range is false, as a control's `if` is (see StackIndexOutOfRange)."""
    try:
        return bool(cond())
    except StackIndexOutOfRange:
        return False


def sign_extend(v: int, w: int) -> int:
    return v - (1 << w) if v >> (w - 1) & 1 else v


@dataclass
class Compiled:
    """The result of compiling a program: a namespace of functions plus lookup tables."""

    source: str
    ns: dict
    action_fns: dict[int, Any] = field(default_factory=dict)
    table_next: dict[str, dict[str, Any]] = field(default_factory=dict)


def _mask(w: int) -> int:
    return (1 << w) - 1


def _hexint(v: Any) -> int:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    s = str(v).strip()
    neg = s.startswith("-")
    if neg:
        s = s[1:]
    n = int(s, 16) if s.lower().startswith("0x") else int(s, 0) if s[:2].lower() in ("0b", "0o") else int(s)
    return -n if neg else n


_NATIVE = {8: "B", 16: "H", 32: "I", 64: "Q"}
MAX_ACTION_LOOPS = 1_000_000  # backward jumps per action call before the packet is dropped


@dataclass
class _Group:
    """A run of fields starting and ending on byte boundaries, and the struct pieces covering it."""

    fields: list[tuple[int, int, int]]  # (field index, width, shift inside the group)
    width: int
    pieces: list[int]  # piece widths (8/16/32/64), most significant first


def struct_layout(widths: list[int]) -> tuple[str, list[_Group]]:
    """Split a header into byte-aligned groups of fields, each covered by native struct pieces.

    Why: ``struct.unpack_from``/``pack`` with small native ints is much faster than building one
    big int per header and shifting every field out of it."""
    groups: list[_Group] = []
    cur: list[tuple[int, int]] = []
    acc = 0
    for i, w in enumerate(widths):
        cur.append((i, w))
        acc += w
        if acc % 8 == 0:
            shift = acc
            flds = []
            for fi, fw in cur:
                shift -= fw
                flds.append((fi, fw, shift))
            pieces = []
            rem = acc
            while rem:
                p = next(n for n in (64, 32, 16, 8) if n <= rem)
                pieces.append(p)
                rem -= p
            groups.append(_Group(flds, acc, pieces))
            cur, acc = [], 0
    fmt = "!" + "".join(_NATIVE[p] for g in groups for p in g.pieces)
    return fmt, groups


_HREF = re.compile(r"(?<![\w.])H\[(\d+)\]")
_ARG = re.compile(r"(?<![\w.])A\[(\d+)\]")  # an action argument in a generated body
_PLAIN_FIELD = re.compile(r"^H\[\d+\]\[\d+\]$")  # a field of a header known at generation time
_LOCAL = re.compile(r"^_[a-z]+\d+$")  # a generated local variable (forwarded value, register index)
_IMMUTABLE = re.compile(r"^(-?\d+|A\[\d+\])$")  # a constant, or an action argument (a tuple's item)
# header references resolved at run time (stack indices): they may alias any forwarded field
_DYNAMIC_REF = re.compile(r'"(stack_field|header_stack|dereference_header_stack|union_stack|header_union)"')
# primitives whose effects on header fields the forwarding follows (everything else resets it)
_FORWARDING_SAFE = frozenset(
    {"assign", "modify_field", "add_to_field", "subtract_from_field", "register_read", "register_write"}
)


def _bind_header_locals(body: list[str]) -> list[str]:
    """Read each header list used more than once into a local at the top of an action body.

    Safe because nothing inside an action replaces a header list object (assignments, setValid,
    push/pop all work in place); only the parser replaces them, and it is not an action."""
    counts: dict[str, int] = {}
    for line in body:
        for m in _HREF.finditer(line):
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    hot = sorted((k for k, c in counts.items() if c > 1), key=int)
    if not hot:
        return body
    out = ["    " + "; ".join(f"_h{k} = H[{k}]" for k in hot)]
    for line in body:
        out.append(_HREF.sub(lambda m: f"_h{m.group(1)}" if m.group(1) in hot else m.group(0), line))
    return out


_SELF_BIND = re.compile(r"^_h(\d+) = _h\1$")


def localise_headers(lines: list[str], indent: str) -> list[str]:
    """A whole generated function body (a control, a checksum) with every header list it uses
    more than once read into a local `_hK` once, at its top.

    Why: `H[7][8]` is two subscripts, `_h7[8]` one, and a control reads fields dozens of times per
    packet. Safe for the same reason as `_bind_header_locals` (only the parser replaces a header list,
    and no parser runs inside a control or a calculation). The actions inlined in the body bound the
    same locals; their `_hK = H[K]` lines become no-ops and are left out."""
    counts: dict[str, int] = {}
    for line in lines:
        for m in _HREF.finditer(line):
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    hot = {k for k, c in counts.items() if c > 1}
    if not hot:
        return lines
    out = [indent + "; ".join(f"_h{k} = H[{k}]" for k in sorted(hot, key=int))]
    for i, line in enumerate(lines):
        new = _HREF.sub(lambda m: f"_h{m.group(1)}" if m.group(1) in hot else m.group(0), line)
        body = new.lstrip()
        lead = new[: len(new) - len(body)]
        parts = [part for part in body.split("; ") if not _SELF_BIND.match(part)]
        if len(parts) != len(body.split("; ")):
            if parts:
                new = lead + "; ".join(parts)
            else:  # the line only re-bound locals the body already has
                following = lines[i + 1] if i + 1 < len(lines) else ""
                if len(following) - len(following.lstrip()) >= len(lead) and following.strip():
                    continue
                new = lead + "pass"  # it was its block's only statement
        out.append(new)
    return out


MAX_PARSER_STATES = 100_000
MAX_INLINED_NODES = 256  # control nodes inlined into one control's function
MAX_INLINED_STATES = 48  # states inlined into one state's function (a DAG could blow up)
MAX_INLINE_INDENT = 40  # and never nested deeper than this (Python's limit is 100)
MAX_PATHS = 64  # parse paths enumerated to find the deparser's fast cases
MAX_DEPARSE_SHAPES = 4  # header sets the deparser packs in one call
MAX_INLINED_ACTION = 40  # lines of an action body inlined where the control calls it directly
MAX_INLINED_TABLE_ACTIONS = 3  # actions of a table whose bodies are written where its entry runs


_CONST_LOCAL = re.compile(r"^\s*(_[a-z]+\d+) = (-?\d+)$")
_CONST_RANGE = re.compile(r"^(\s*)if (-?\d+) <= (-?\d+) < (-?\d+):$")
_CONST_BELOW = re.compile(r"^(\s*)if (-?\d+) < (-?\d+):$")


def _fold_constants(body: list[str]) -> list[str]:
    """An action body inlined with constant arguments, with the locals that became constants
    replaced by their values and the bounds checks on them decided: INC's drop_as(reason) counts
    into a constant index without `_i = 5` and `if 0 <= _i < 16:`. Only locals assigned once are
    folded (a generated body's locals are its own), and only checks of that exact form."""
    consts: dict[str, str] = {}
    assigned: dict[str, int] = {}
    for ln in body:  # every store to a local: plain, augmented, or one of several targets
        for m in re.finditer(r"(?<![\w.])(_[a-z]+\d+)\s*(?:,|(?:[-+*/%&|^]|<<|>>|//|\*\*)?=(?!=))", ln):
            assigned[m.group(1)] = assigned.get(m.group(1), 0) + 1
    for ln in body:
        m = _CONST_LOCAL.match(ln)
        if m and assigned.get(m.group(1)) == 1:
            consts[m.group(1)] = m.group(2)
    if not consts:
        return body
    pattern = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, consts)) + r")(?!\w)")
    lines = [ln for ln in body if not ((m := _CONST_LOCAL.match(ln)) and m.group(1) in consts)]
    lines = [pattern.sub(lambda m: consts[m.group(1)], ln) for ln in lines]
    out: list[str] = []
    k = 0
    while k < len(lines):
        ln = lines[k]
        m = _CONST_RANGE.match(ln)
        b = _CONST_BELOW.match(ln)
        if m or b:
            lead = (m or b).group(1)
            holds = (
                int(m.group(2)) <= int(m.group(3)) < int(m.group(4))
                if m
                else int(b.group(2)) < int(b.group(3))
            )
            end = k + 1
            while end < len(lines) and len(lines[end]) - len(lines[end].lstrip()) > len(lead):
                end += 1
            if holds:  # the block, one level less indented
                out += [lead + blk[len(lead) + 4 :] for blk in lines[k + 1 : end]]
            k = end
            continue
        out.append(ln)
        k += 1
    return out or [body[0][: len(body[0]) - len(body[0].lstrip())] + "pass"]


def _has_cycle(states: list[dict]) -> bool:
    graph = {
        st["name"]: [t.get("next_state") for t in st.get("transitions", []) if t.get("next_state")]
        for st in states
    }
    color: dict[str, int] = {}

    def visit(n: str) -> bool:
        color[n] = 1
        for m in graph.get(n, []):
            if color.get(m) == 1 or (m not in color and visit(m)):
                return True
        color[n] = 2
        return False

    return any(n not in color and visit(n) for n in graph)


def _ident(prefix: str, name: str, i: int) -> str:
    safe = "".join(c if c.isalnum() else "_" for c in name)[:40]
    return f"{prefix}{i}_{safe}"


def _field_refs(v: Any) -> set[tuple[str, str]]:
    """Every (header, field) a JSON value refers to."""
    out: set[tuple[str, str]] = set()
    if isinstance(v, dict):
        if v.get("type") == "field" and isinstance(v.get("value"), list) and len(v["value"]) == 2:
            out.add((v["value"][0], v["value"][1]))
        for x in v.values():
            out |= _field_refs(x)
    elif isinstance(v, list):
        for x in v:
            out |= _field_refs(x)
    return out


def _one_to_one(ht: HeaderType, groups: list[_Group], pad: int) -> bool:
    """Whether each field of the header is exactly one native struct piece (8/16/32/64 bits,
    unsigned, byte-aligned): its header list then is [valid, *the unpacked pieces]."""
    return (
        not pad
        and len(groups) == len(ht.fields)
        and all(len(g.pieces) == 1 and len(g.fields) == 1 for g in groups)
        and not any(f.signed for f in ht.fields)
    )


def _uses(code: str, name: str) -> bool:
    return re.search(rf"(?<![\w.]){name}(?!\w)", code) is not None


class CodeGen:
    """Generates the Python module for one program; ``build()`` returns its source."""

    def __init__(self, prog: Program, state: SwitchState, trace: bool) -> None:
        self.prog = prog
        self.state = state
        self.trace = trace
        self.out: list[str] = []
        self.consts: dict[str, Any] = {}
        self.node_names: dict[str, str] = {}
        self.action_fn: dict[int, str] = {}
        self._tmp = 0
        self._rd_width: dict[int, int] = {}  # widths of the current action's parameters
        self._calc_done: set[str] = set()
        self.side: list[str] = []  # functions generated on demand (calculations) while inside another
        self.state_fn: dict[str, str] = {}
        self._off_in_e = False  # in parser code: whether local _e holds the parse offset
        self._off_dirty = False  # ... and P.off lags behind it (written before anything reads it)
        # In a straight-line action body: header fields whose current value a local holds (see
        # forwarding_primitive); None everywhere else.
        self._fwd: dict[str, str] | None = None
        self._dirty: dict[str, str] = {}  # forwarded fields whose header list is not yet written
        self.parse_states: dict[str, dict] = {}
        self.inline_parser = False
        self._inline_left = 0
        self._graph = regions.ControlGraph({}, None)  # of the control being generated
        self.table_next_src: dict[str, dict[str, str]] = {}
        self.table_default_next_src: dict[str, str] = {}
        sm = prog.header_by_name["standard_metadata"]
        self.sm = sm.id
        self.smf = {f.name: i + 1 for i, f in enumerate(sm.htype.fields)}
        # Lane runs of fused registers (fusion.py), per action id, and their storage.
        self.lane_runs: dict[int, list[fusion.LaneRun]] = {}
        self.fused: dict[tuple, fusion.FusedRows] = {}
        self.packed: dict[int, fusion.Packed] = {}  # header id -> layout of headers held packed
        self.unpack_in: dict[int, list[int]] = {}  # action id -> packed headers it works on as lists
        self._lane_env: dict[tuple[str, str], tuple[str, int | None]] | None = None
        self._lane_block: set[tuple[str, str]] = set()
        self._lane_pre: list[str] = []
        self.action_body: dict[int, list[str]] = {}  # short straight-line bodies, for inlining
        # csum calculations a replica can run with the multicast's memo: name -> (inputs, headers
        # checked for validity, the slow path's spec)
        self._csum_replica_fns: dict[str, tuple[list[dict], list[int], str | None]] = {}
        self._memo_used = False  # whether the last csum body put terms in the memo
        # headers a multicast replica owns (replicas.py), None when it copies every header
        self.replica_owned: frozenset[int] | None = None if trace else replicas.replica_owned_headers(prog)

    # ------------------------------------------------------------------ helpers
    def emit(self, ind: int, line: str) -> None:
        self.out.append("    " * ind + line)

    def tmp(self, base: str = "t") -> str:
        self._tmp += 1
        return f"_{base}{self._tmp}"

    def const(self, name: str, value: Any) -> str:
        self.consts[name] = value
        return name

    def hdr(self, name: str) -> HeaderInst:
        h = self.prog.header_by_name.get(name)
        if h is None:
            raise PipelineLoadError(f"unknown header '{name}'")
        return h

    def err_code(self, name: str) -> int:
        return self.prog.errors.get(name, 0)

    def error_name(self, code: int) -> str:
        for n, c in self.prog.errors.items():
            if c == code:
                return n
        return str(code)

    # ------------------------------------------------------------------ expressions
    def header_expr(self, v: dict) -> tuple[str, HeaderType]:
        """Python expression evaluating to a header instance list, and its type."""
        v = self.unwrap(v)
        t = v.get("type")
        if t == "header":
            h = self.hdr(v["value"])
            return f"H[{h.id}]", h.htype
        if t == "stack_field":  # not a header; handled in field expressions
            raise PipelineLoadError("stack_field used as a header")
        if t == "expression":
            e = v["value"]
            op = e.get("op")
            if op == "dereference_header_stack":
                st = self.prog.stacks[e["left"]["value"]]
                ids = self.const(f"SID{st.id}", tuple(st.header_ids))
                idx, _ = self.expr(e["right"])
                if e["right"].get("type") == "hexstr" and 0 <= _hexint(e["right"]["value"]) < len(
                    st.header_ids
                ):
                    return f"H[{st.header_ids[_hexint(e['right']['value'])]}]", st.htype
                return f"H[_stack_at({ids}, {idx})]", st.htype
            if op == "access_union_header":  # union member: resolve statically when possible
                raise PipelineLoadError("header unions in expressions are not supported")
        raise PipelineLoadError(f"unsupported header reference {v!r}")

    @staticmethod
    def unwrap(v: dict) -> dict:
        """p4c sometimes wraps an expression twice: {"type": "expression", "value": {"type": ...}}."""
        while (
            isinstance(v, dict)
            and v.get("type") == "expression"
            and isinstance(v.get("value"), dict)
            and "op" not in v["value"]
            and "type" in v["value"]
        ):
            v = v["value"]
        return v

    def field_lvalue(self, v: dict) -> tuple[str, int, bool]:
        """(assignable Python target, width, signed) of a field reference; width 1 for $valid$."""
        v = self.unwrap(v)
        t = v.get("type")
        if t == "field":
            hname, fname = v["value"][0], v["value"][1]
            h = self.hdr(hname)
            if fname in ("$valid$", "_valid"):
                return f"H[{h.id}][0]", 1, False
            pos = h.htype.index.get(fname)
            if pos is None:
                raise PipelineLoadError(f"header '{hname}' has no field '{fname}'")
            f = h.htype.fields[pos]
            return f"H[{h.id}][{pos + 1}]", f.width, f.signed
        if t == "stack_field":
            st = self.prog.stacks[v["value"][0]]
            ids = self.const(f"SID{st.id}", tuple(st.header_ids))
            pos = st.htype.index[v["value"][1]]
            f = st.htype.fields[pos]
            return f"H[{ids}[P.nx[{st.id}] - 1]][{pos + 1}]", f.width, f.signed
        if t == "expression" and v["value"].get("op") == "access_field":
            e = v["value"]
            hexpr, ht = self.header_expr(e["left"])
            pos = int(e["right"])
            f = ht.fields[pos]
            return f"{hexpr}[{pos + 1}]", f.width, f.signed
        raise PipelineLoadError(f"cannot assign to {v!r}")

    def expr(self, v: Any) -> tuple[str, int | None]:
        """(Python expression, known maximum unsigned width or None) of a BMv2 value."""
        if v is None:
            raise PipelineLoadError("missing expression")
        t = v.get("type")
        val = v.get("value")
        if t == "field" and self._lane_env is not None:
            return self._lane_field(v)
        if t == "field" or t == "stack_field":
            target, w, signed = self.field_lvalue(v)
            if self._fwd is not None and target in self._fwd:
                return self._fwd[target], None if signed else w
            return target, None if signed else w
        if t == "hexstr":
            n = _hexint(val)
            return (str(n), n.bit_length()) if n >= 0 else (f"({n})", None)
        if t == "bool":
            return ("1" if val else "0"), 1
        if t == "runtime_data":
            return f"A[{int(val)}]", self._rd_width.get(int(val))
        if t == "local":
            return f"A[{int(val)}]", None
        if t == "header":
            h = self.hdr(val)
            return f"H[{h.id}]", None
        if t == "lookahead":
            off, width = int(val[0]), int(val[1])
            return f"_lookahead(P, {off}, {width})", width
        if t == "expression":
            if isinstance(val, dict) and "op" not in val and "type" in val:
                return self.expr(val)  # p4c wraps some expressions twice
            return self.op_expr(val)
        if t == "string":
            return repr(val), None
        if t == "register":  # [register array, index expression]
            name = val[0]
            cells = self.state.registers.get(name)
            if cells is None:
                raise PipelineLoadError(f"unknown register '{name}'")
            rn = self.const(_ident("RG", name, len(self.consts)), cells)
            idx, _ = self.expr(val[1])
            return f"_reg_get({rn}, {idx})", self.prog.registers[name].bitwidth
        if t in ("header_stack", "register_array", "counter_array", "meter_array", "calculation", "extern"):
            return repr(val), None
        raise PipelineLoadError(f"unsupported value type '{t}'")

    def op_expr(self, e: dict) -> tuple[str, int | None]:
        op = e["op"]
        left, right = e.get("left"), e.get("right")
        if op == "valid":
            if right.get("type") == "header":
                return f"H[{self.hdr(right['value']).id}][0]", 1
            hx, _ = self.header_expr(right)
            return f"{hx}[0]", 1
        if op == "valid_union":
            ids = self.prog.unions[right["value"]]
            return "(" + " or ".join(f"H[{i}][0]" for i in ids) + ")", 1
        if op == "d2b":
            r, _ = self.expr(right)
            return f"({r} != 0)", 1
        if op == "b2d":
            r, _ = self.expr(right)
            if r in ("0", "1", "False", "True"):  # a constant (p4c's `bool x = false`)
                return ("1" if r in ("1", "True") else "0"), 1
            return f"(1 if {r} else 0)", 1
        if op == "not":
            r, _ = self.expr(right)
            return f"(not {r})", 1
        if op == "?":
            c, _ = self.expr(e["cond"])
            a, wa = self.expr(left)
            b, wb = self.expr(right)
            w = None if wa is None or wb is None else max(wa, wb)
            if c in ("0", "1", "False", "True"):  # a constant condition (p4c's `bool x = false`)
                return (a, wa) if c in ("1", "True") else (b, wb)
            if "_stack_at(" in c:  # out of range: false, as for a control's `if` (_oob_false)
                c = f"_oob_cond(lambda: {c})"
            return f"({a} if {c} else {b})", w
        if op == "two_comp_mod":
            a, _ = self.expr(left)
            w = _hexint(right["value"])
            return f"_sx(({a}) & {_mask(w)}, {w})", None
        if op == "sat_cast":
            a, _ = self.expr(left)
            w = _hexint(right["value"])
            return f"_sat({a}, {-(1 << (w - 1))}, {(1 << (w - 1)) - 1})", None
        if op == "usat_cast":
            a, _ = self.expr(left)
            w = _hexint(right["value"])
            return f"_sat({a}, 0, {_mask(w)})", w
        if op == "last_stack_index":
            st = self.prog.stacks[right["value"]]
            return f"(P.nx[{st.id}] - 1)", None
        if op == "size_stack":  # BMv2: the number of valid headers in the stack
            st = self.prog.stacks[right["value"]]
            return f"P.nx[{st.id}]", None
        if op == "access_field":
            target, w, signed = self.field_lvalue({"type": "expression", "value": e})
            return target, None if signed else w
        if op == "dereference_header_stack":
            hx, _ = self.header_expr({"type": "expression", "value": e})
            return hx, None
        if op == "~":
            r, _ = self.expr(right)
            return f"(~{r})", None
        if op in ("-", "+") and left is None:
            r, _ = self.expr(right)
            return f"({op}{r})", None
        binops = {
            "+": "+",
            "-": "-",
            "*": "*",
            "<<": "<<",
            ">>": ">>",
            "&": "&",
            "|": "|",
            "^": "^",
            "==": "==",
            "!=": "!=",
            "<": "<",
            ">": ">",
            "<=": "<=",
            ">=": ">=",
            "and": "and",
            "or": "or",
            "/": "//",
            "%": "%",
        }
        if op in binops:
            a, wa = self.expr(left)
            b, wb = self.expr(right)
            w: int | None = None
            if op in ("==", "!=", "<", ">", "<=", ">=", "and", "or"):
                w = 1
            elif op == "&":
                w = wa if wb is None else wb if wa is None else min(wa, wb)
            elif op in ("|", "^") and wa is not None and wb is not None:
                w = max(wa, wb)
            elif op == ">>" and wa is not None:
                w = wa
            elif op in ("/", "%") and wa is not None and wb is not None:
                w = wa if op == "/" else wb
            return f"({a} {binops[op]} {b})", w
        raise PipelineLoadError(f"unsupported expression operator '{op}'")

    def store(self, ind: int, dst: dict, src_code: str, src_w: int | None) -> None:
        target, w, signed = self.field_lvalue(dst)
        if target.endswith("][0]") and w == 1 and dst.get("value", [None, None])[-1] in ("$valid$", "_valid"):
            self._forget(target)
            self.emit(ind, f"{target} = 1 if {src_code} else 0")
            return
        if signed:
            value = f"_sx(({src_code}) & {_mask(w)}, {w})"
        elif (src_w is not None and src_w <= w) or w == 0:
            value = src_code
        else:
            value = f"({src_code}) & {_mask(w)}"
        if self._fwd is not None and ind == 1 and _PLAIN_FIELD.match(target):
            if _LOCAL.match(value) or _IMMUTABLE.match(value):
                local = value  # a local, a constant or an action argument needs no local of its own
            else:
                local = self.tmp("f")
                self.emit(ind, f"{local} = {value}")
            self._fwd[target] = local
            self._dirty[target] = local  # written back at the next barrier or the end of the action
            return
        self._forget(target)
        self.emit(ind, f"{target} = {value}")

    def _forget(self, target: str) -> None:
        """A field is written where forwarding does not follow it: drop what a local knows of it (of
        every field, when the target's header is only known at run time: pending write-backs go
        first then, since the target may be any of them)."""
        if self._fwd is None:
            return
        if _PLAIN_FIELD.match(target):
            self._fwd.pop(target, None)
            self._dirty.pop(target, None)  # this write supersedes the pending one
        else:
            self._flush(1)
            self._fwd.clear()

    def _flush(self, ind: int) -> None:
        """Write the forwarded fields' values back into their header lists."""
        for target, local in self._dirty.items():
            self.emit(ind, f"{target} = {local}")
        self._dirty = {}

    def forwarding_primitive(self, p: dict) -> None:
        """One primitive of a straight-line action body, with store-to-load forwarding: a field
        assigned at the top level of the body is read back from the local that holds its value, and
        a register index read once is reused, until something that may change fields in ways not
        followed here (any other primitive) runs. INC's lane updates (64 read-add-writes of one
        metadata temporary at one index) halve their header-list accesses this way."""
        if p.get("op") not in _FORWARDING_SAFE or _DYNAMIC_REF.search(json.dumps(p)):
            self._flush(1)
            self._fwd = None  # this primitive sees and changes the header lists as they are
            self.primitive(1, p)
            self._fwd = {}
            return
        self.primitive(1, p)

    def _cache_read(self, ind: int, code: str, local: str) -> None:
        """`local` was just assigned the field `code` at the top level of an action: later reads use it."""
        if self._fwd is not None and ind == 1 and _PLAIN_FIELD.match(code):
            self._fwd[code] = local

    def _index_local(self, ind: int, idx: str) -> str:
        """A local holding a register index: the index expression itself when it is one already."""
        if _LOCAL.match(idx):
            return idx
        i = self.tmp("i")
        self.emit(ind, f"{i} = {idx}")
        self._cache_read(ind, idx, i)
        return i

    # ------------------------------------------------------------------ primitives
    def primitive(self, ind: int, p: dict, oob_noop: bool = True) -> None:
        """One primitive's code; with `oob_noop`, one that indexes a header stack at run time is
        skipped when the index is out of range (see StackIndexOutOfRange)."""
        start = len(self.out)
        self._primitive(ind + 1, p)
        body = self.out[start:]
        if oob_noop and any("_stack_at(" in line for line in body):
            self.out.insert(start, "    " * ind + "try:")
            self.emit(ind, "except StackIndexOutOfRange:")
            self.emit(ind + 1, "pass")
        else:
            self.out[start:] = [line[4:] for line in body]

    def _primitive(self, ind: int, p: dict) -> None:
        op = p["op"]
        ps = p.get("parameters", [])
        if op in ("assign", "modify_field"):
            code, w = self.expr(ps[1])
            self.store(ind, ps[0], code, w)
        elif op in ("add_to_field", "subtract_from_field"):
            current, _ = self.expr(ps[0])  # through expr: a forwarded field's value is in a local
            code, _ = self.expr(ps[1])
            sign = "+" if op == "add_to_field" else "-"
            self.store(ind, ps[0], f"{current} {sign} {code}", None)
        elif op == "assign_header":
            dx, _ = self.header_expr(ps[0])
            sx, _ = self.header_expr(ps[1])
            self.emit(ind, f"{dx}[:] = {sx}")
        elif op == "assign_union":
            d, s = self.prog.unions[ps[0]["value"]], self.prog.unions[ps[1]["value"]]
            for a, b in zip(d, s, strict=False):
                self.emit(ind, f"H[{a}][:] = H[{b}]")
        elif op == "assign_header_stack":
            d, s = self.prog.stacks[ps[0]["value"]], self.prog.stacks[ps[1]["value"]]
            for a, b in zip(d.header_ids, s.header_ids, strict=False):
                self.emit(ind, f"H[{a}][:] = H[{b}]")
            self.emit(ind, f"P.nx[{d.id}] = P.nx[{s.id}]")
        elif op in ("add_header", "remove_header"):
            hx, _ = self.header_expr(ps[0])
            if op == "add_header":
                self.emit(ind, f"{hx}[0] = 1")
                if ps[0].get("type") == "header":
                    h = self.hdr(ps[0]["value"])
                    if h.union:
                        for other in self.prog.unions[h.union]:
                            if other != h.id:
                                self.emit(ind, f"H[{other}][0] = 0")
            else:
                self.emit(ind, f"{hx}[0] = 0")
        elif op in ("push", "pop"):
            st = self.prog.stacks[ps[0]["value"]]
            n, _ = self.expr(ps[1])
            fn = "_stack_push" if op == "push" else "_stack_pop"
            ids = self.const(f"SID{st.id}", tuple(st.header_ids))
            self.emit(ind, f"{fn}(P, H, {ids}, {st.id}, {n})")
        elif op in ("mark_to_drop", "drop"):
            self.emit(ind, f"H[{self.sm}][{self.smf['egress_spec']}] = DROP_PORT")
            self.emit(ind, f"H[{self.sm}][{self.smf['mcast_grp']}] = 0")
        elif op == "exit":
            self.emit(ind, "raise ExitControl()")
        elif op in ("no_op", "_no_op"):
            self.emit(ind, "pass")
        elif op == "count":
            c = self.state.counters.get(ps[0]["value"])
            if c is None:
                raise PipelineLoadError(f"count on unknown counter '{ps[0]['value']}'")
            cn = self.const(_ident("CT", c.name, len(self.consts)), c)
            idx, _ = self.expr(ps[1])
            if re.fullmatch(r"\d+", idx):  # a constant index: checked here, once
                if int(idx) < c.size:
                    self.emit(ind, f"{cn}.packets[{idx}] += 1")
                    self.emit(ind, f"{cn}.bytes[{idx}] += P.plen")
                else:
                    self.emit(ind, "pass  # index out of range: nothing counted")
                return
            i = self.tmp("i")
            self.emit(ind, f"{i} = {idx}")
            self.emit(ind, f"if 0 <= {i} < {c.size}:")
            self.emit(ind + 1, f"{cn}.packets[{i}] += 1")
            self.emit(ind + 1, f"{cn}.bytes[{i}] += P.plen")
        elif op == "execute_meter":
            name = ps[0]["value"]
            cells = self.state.meters.get(name)
            if cells is None:
                raise PipelineLoadError(f"execute_meter on unknown meter '{name}'")
            mn = self.const(_ident("MT", name, len(self.consts)), cells)
            units = "P.plen" if self.prog.meters[name].meter_type == "bytes" else "1"
            i = self.tmp("i")
            idx, _ = self.expr(ps[1])
            self.emit(ind, f"{i} = {idx}")
            self.store(
                ind, ps[2], f"({mn}[{i}].execute({units}, NOW_US()) if 0 <= {i} < {len(cells)} else 0)", 2
            )
        elif op == "register_read":
            name = ps[1]["value"]
            cells = self.state.registers[name]
            rn = self.const(_ident("RG", name, self.prog.registers[name].id), cells)
            idx, iw = self.expr(ps[2])
            i = self._index_local(ind, idx)
            check = f"{i} < {len(cells)}" if iw is not None else f"0 <= {i} < {len(cells)}"
            self.store(ind, ps[0], f"({rn}[{i}] if {check} else 0)", self.prog.registers[name].bitwidth)
        elif op == "register_write":
            name = ps[0]["value"]
            cells = self.state.registers[name]
            width = self.prog.registers[name].bitwidth
            rn = self.const(_ident("RG", name, self.prog.registers[name].id), cells)
            idx, iw = self.expr(ps[1])
            val, vw = self.expr(ps[2])
            i = self._index_local(ind, idx)
            # A known non-negative index needs no lower bound; a value known to fit needs no mask.
            self.emit(ind, f"if {i} < {len(cells)}:" if iw is not None else f"if 0 <= {i} < {len(cells)}:")
            self.emit(
                ind + 1,
                f"{rn}[{i}] = {val}"
                if vw is not None and vw <= width
                else f"{rn}[{i}] = ({val}) & {_mask(width)}",
            )
        elif op == "modify_field_with_hash_based_offset":
            calc = ps[2]["value"]
            base, _ = self.expr(ps[1])
            size, _ = self.expr(ps[3])
            fn = self.calc_fn(calc)
            h, s = self.tmp("hv"), self.tmp("s")  # not _h<n>: those name header lists
            self.emit(ind, f"{h} = {fn}(P, H)")
            self.emit(ind, f"{s} = {size}")
            self.store(ind, ps[0], f"({base} + ({h} % {s} if {s} else {h}))", None)
        elif op == "modify_field_rng_uniform":
            lo, _ = self.expr(ps[1])
            hi, _ = self.expr(ps[2])
            self.store(ind, ps[0], f"_rand({lo}, {hi})", None)
        elif op in ("clone_ingress_pkt_to_egress", "clone_egress_pkt_to_egress"):
            sess, _ = self.expr(ps[0])
            fl = self.expr(ps[1])[0] if len(ps) > 1 else "0"
            self.emit(ind, f"P.clone = ({sess}, {fl})")
            self.emit(ind, "P.special = 1")
        elif op == "resubmit":
            fl = self.expr(ps[0])[0] if ps else "0"
            self.emit(ind, f"P.resubmit = {fl}")
            self.emit(ind, "P.special = 1")
        elif op == "recirculate":
            fl = self.expr(ps[0])[0] if ps else "0"
            self.emit(ind, f"P.recirc = {fl}")
            self.emit(ind, "P.special = 1")
        elif op == "truncate":
            n, _ = self.expr(ps[0])
            self.emit(ind, f"P.trunc = {n}")
            self.emit(ind, "P.special = 1")
        elif op == "generate_digest":
            lid, _ = self.expr(ps[1])
            self.emit(ind, f"P.learn = {lid}")
            self.emit(ind, "P.special = 1")
        elif op == "log_msg":
            fmt = ps[0]["value"]
            args = []
            if len(ps) > 1:
                for a in ps[1].get("value", []):
                    args.append(self.expr(a)[0])
            self.emit(ind, f"LOG({fmt!r}, ({', '.join(args)}{',' if len(args) == 1 else ''}))")
        elif op in ("assert", "assume"):
            c, _ = self.expr(ps[0])
            self.emit(ind, f"if not {c}:")
            self.emit(ind + 1, f"raise AssertionFailed({op + ' failed'!r})")
        elif op == "assign_VL":
            dx, _ = self.field_lvalue(ps[0])[:2]
            sx, _ = self.expr(ps[1])
            self.emit(ind, f"{dx} = {sx}")
        else:
            raise PipelineLoadError(f"unsupported primitive '{op}'")

    # ------------------------------------------------------------------ calculations
    def calc_parts(self, inputs: list[dict]) -> tuple[list[tuple[str, int]], bool]:
        """(Python expression, width) of each bit-field of a calculation's inputs, and whether the
        packet's payload follows them."""
        parts: list[tuple[str, int]] = []
        payload = False
        skip = 0
        for x in inputs:
            t = x.get("type")
            if skip:  # the rest of a packed header's fields (fusion.packable_headers: all, in order)
                skip -= 1
                continue
            if t in ("field", "header") and self.packed:
                h = self.prog.header_by_name.get(x["value"][0] if t == "field" else x["value"])
                pk = self.packed.get(h.id) if h is not None else None
                if pk is not None:
                    parts.append((f"H[{h.id}][1]", pk.lanes * pk.width))
                    skip = pk.lanes - 1 if t == "field" else 0
                    continue
            if t == "field":
                target, w, signed = self.field_lvalue(x)
                parts.append((f"({target} & {_mask(w)})" if signed else target, w))
            elif t == "hexstr":
                w = int(x.get("bitwidth", 0)) or max(8, _hexint(x["value"]).bit_length())
                parts.append((str(_hexint(x["value"]) & _mask(w)), w))
            elif t == "header":
                h = self.hdr(x["value"])
                for i, f in enumerate(h.htype.fields):
                    parts.append((f"H[{h.id}][{i + 1}]", f.width))
            elif t == "payload":
                payload = True
            elif t == "expression":
                code, w = self.expr(x)
                w = int(x.get("bitwidth", 0)) or w or 32
                parts.append((f"(({code}) & {_mask(w)})", w))
            else:
                raise PipelineLoadError(f"unsupported calculation input {x!r}")
        return parts, payload

    def concat(self, inputs: list[dict]) -> tuple[list[str], int, bool]:
        """Python lines building ``_v`` = the inputs' bits concatenated, its width, and whether the
        payload follows."""
        parts, payload = self.calc_parts(inputs)
        total = sum(w for _, w in parts)
        terms = []
        shift = total
        for code, w in parts:
            shift -= w
            terms.append(f"({code} << {shift})" if shift else code)
        return [" | ".join(terms) if terms else "0"], total, payload

    def calc_fn(self, name: str) -> str:
        fname = _ident("CALC", name, 0)
        if fname in self._calc_done:
            return fname
        calc = self.prog.calculations.get(name)
        if calc is None:
            raise PipelineLoadError(f"unknown calculation '{name}'")
        self._calc_done.add(fname)
        saved, self.out = self.out, self.side
        fwd, self._fwd = self._fwd, None  # another function: the action's locals do not exist there
        try:
            self._emit_hash_fn(fname, calc.get("input", []), calc.get("algo", "crc32"), name)
        finally:
            self.side, self.out = self.out, saved
            self._fwd = fwd
        return fname

    def _calc_spec(self, inputs: list[dict]) -> list[tuple[int | None, int, int, int]] | None:
        """(header id | None, list position, width, constant) per input bit-field, for the slow path
        that skips invalid headers; None when an input is an expression."""
        spec: list[tuple[int | None, int, int, int]] = []
        skip = 0
        for x in inputs:
            t = x.get("type")
            if skip:
                skip -= 1
                continue
            if t in ("field", "header") and self.packed:
                h = self.prog.header_by_name.get(x["value"][0] if t == "field" else x["value"])
                pk = self.packed.get(h.id) if h is not None else None
                if pk is not None:
                    spec.append((h.id, 1, pk.lanes * pk.width, 0))
                    skip = pk.lanes - 1 if t == "field" else 0
                    continue
            if t == "field":
                hid, pos, info = self.prog.field_ref(x["value"][0], x["value"][1])
                # a varbit's width is the negated list slot where the extract stored it
                vslot = -(len(self.prog.headers[hid].htype.fields) + 1)
                spec.append((hid, pos, 1 if info is None else (info.width or vslot), 0))
            elif t == "header":
                h = self.hdr(x["value"])
                vslot = -(len(h.htype.fields) + 1)
                spec += [(h.id, i + 1, f.width or vslot, 0) for i, f in enumerate(h.htype.fields)]
            elif t == "hexstr":
                w = int(x.get("bitwidth", 0)) or max(8, _hexint(x["value"]).bit_length())
                spec.append((None, 0, w, _hexint(x["value"]) & _mask(w)))
            elif t == "payload":
                continue
            else:
                return None
        return spec

    def _emit_hash_fn(self, fname: str, inputs: list[dict], algo: str, key: str) -> None:
        """A calculation. BMv2 skips the fields of invalid headers, and `payload` adds every valid
        header after the last one used plus the unparsed payload; those cases take a generic slow
        path, while the common case (all headers valid, no payload) is straight-line code."""
        is_csum = algo in ("csum16", "cksum16")
        payload = any(x.get("type") == "payload" for x in inputs)
        spec = self._calc_spec(inputs)
        hids = sorted(
            {hid for hid, _, _, _ in spec or [] if hid is not None and not self.prog.headers[hid].metadata}
        )
        self.emit(0, f"def {fname}(P, H):")
        first = len(self.out)
        varbits = spec is not None and any(w < 0 for _, _, w, _ in spec)  # widths known per packet
        if spec is not None and (payload or hids or varbits):
            order = [self.hdr(n).id for n in (self.prog.deparser or {}).get("order", [])]
            after = -1
            for hid in hids:
                if hid in order:
                    after = max(after, order.index(hid))
            spec_name = self.const(f"CSPEC_{fname}", (tuple(spec), payload, after, is_csum, key))
            call = f"_calc_slow(P, H, {spec_name})"
            if payload or varbits:
                self.emit(1, f"return {call}")
                self.emit(0, "")
                return
            self.emit(1, f"if not ({' and '.join(f'H[{h}][0]' for h in hids)}):")
            self.emit(2, f"return {call}")
        if is_csum and spec is not None:
            self._emit_csum16_body(inputs)
            if not self.trace and self.replica_owned is not None:
                self._csum_replica_fns[fname] = (inputs, hids, spec_name if hids else None)
        else:
            lines, total, _ = self.concat(inputs)
            self.emit(1, f"_v = {lines[0]}")
            if is_csum:
                self.emit(1, f"return _csum16_int(_v, {total})")
            else:
                pad = (-total) % 8
                nbytes = (total + pad) // 8
                self.emit(1, f"_b = ({'_v << ' + str(pad) if pad else '_v'}).to_bytes({nbytes}, 'big')")
                self.emit(1, f"return HF[{key!r}](_b)")
        if not self.trace:
            self.out[first:] = localise_headers(self.out[first:], "    ")
        self.emit(0, "")

    def _emit_csum16_body(self, inputs: list[dict], memo: int | None = None) -> None:
        """Internet checksum without building the bit string: since 2**16 == 1 (mod 0xFFFF), the
        ones'-complement sum equals the sum of each field shifted by (its offset mod 16), mod 0xFFFF.
        A run of a header's fields whose widths are multiples of 16 shares one shift, so it is summed
        as one slice of the header's list (`sum(h[a:b])` runs in C: 64 lanes cost one call).

        With `memo` (a slot of the multicast's list M), the terms over headers no replica writes
        (replicas.py) are summed once, by the first replica, and reused by the others."""
        parts, _ = self.calc_parts(inputs)  # no payload here: calculations with one take _calc_slow
        total = sum(w for _, w in parts)
        shift = total + (-total) % 16
        terms: list[tuple[str, int | None]] = []  # (code, packed header id whose residue it is)
        const = 0
        packed = {f"H[{hid}][1]": hid for hid in self.packed}
        for code, w, run in self._csum_runs(inputs, parts):
            shift -= w
            sh = shift % 16
            pk = None
            if run is not None and run[2] - run[1] > 2:
                code = f"sum(H[{run[0]}][{run[1]}:{run[2]}])"
            elif code.isdigit():  # a constant input (p4c's zero byte of the UDP pseudo header)
                const += int(code) << sh
                continue
            elif code in packed:
                pk = packed[code]
            terms.append((f"({code} << {sh})" if sh else code, pk))
        shared_ids = None if memo is None or self.replica_owned is None else self.replica_owned

        def shared(code: str, pk: int | None) -> bool:
            if shared_ids is None:
                return False
            ids = {int(m) for m in re.findall(r"H\[(\d+)\]", code)}
            return bool(ids) and not (ids & shared_ids) and (pk is None or pk not in shared_ids)

        inv = [t for t in terms if shared(*t)]
        self._memo_used = bool(inv)
        own = [t for t in terms if not shared(*t)]
        out: list[str] = []
        if inv:
            self.emit(1, f"_m = M[{memo}]")
            self.emit(1, "if _m is None:")
            inv_codes = [self._packed_residue(c, pk, 2) if pk is not None else c for c, pk in inv]
            self.emit(2, f"_m = M[{memo}] = {' + '.join(inv_codes + ([str(const)] if const else []))}")
            const = 0
            out.append("_m")
        out = [self._packed_residue(c, pk, 1) if pk is not None else c for c, pk in own] + out
        if const:
            out.append(str(const))
        self.emit(1, f"_s = {' + '.join(out) if out else '0'}")
        self.emit(1, "_r = _s % 65535")
        self.emit(1, "if _r == 0 and _s:")
        self.emit(2, "_r = 65535")
        self.emit(1, "return 65535 - _r")

    def _packed_residue(self, code: str, hid: int, ind: int = 1) -> str:
        """Emit the packed header's integer reduced mod 0xFFFF, for a checksum; return its local.

        Why: the integer has the header's thousands of bits, and `%` on it is the costliest step of a
        checksum over it. Ints are immutable, so one that `is` the integer seen last has the same
        residue: the replicas of a multicast, which share the header, reduce it once. A nonzero
        integer whose residue is 0 counts as 0xFFFF, so the sum stays nonzero exactly when the
        unreduced one would (the end-around rule at the end needs that)."""
        cache = self.const(f"PKM{hid}", [None, 0])
        v, r = self.tmp("pv"), self.tmp("pr")
        self.emit(ind, f"{v} = {code}")
        self.emit(ind, f"if {v} is {cache}[0]:")
        self.emit(ind + 1, f"{r} = {cache}[1]")
        self.emit(ind, "else:")
        self.emit(ind + 1, f"{r} = {v} % 65535 or (65535 if {v} else 0)")
        self.emit(ind + 1, f"{cache}[0] = {v}; {cache}[1] = {r}")
        return r

    def _csum_runs(
        self, inputs: list[dict], parts: list[tuple[str, int]]
    ) -> list[tuple[str, int, tuple[int, int, int] | None]]:
        """The calculation's parts with runs of consecutive fields of one header merged when their
        widths are multiples of 16: (code, total width, (header id, first list position, end) or None)."""
        refs: list[tuple[int, int] | None] = []  # (header id, list position) of an unsigned header field
        skip = 0
        for x in inputs:
            t = x.get("type")
            if skip:
                skip -= 1
                continue
            if t in ("field", "header") and self.packed:
                h = self.prog.header_by_name.get(x["value"][0] if t == "field" else x["value"])
                pk = self.packed.get(h.id) if h is not None else None
                if pk is not None:
                    refs.append(None)  # one part: the packed integer itself
                    skip = pk.lanes - 1 if t == "field" else 0
                    continue

            if t == "field":
                try:
                    hid, pos, info = self.prog.field_ref(x["value"][0], x["value"][1])
                except PipelineLoadError:
                    info = None
                ok = info is not None and info.width % 16 == 0 and not info.signed and pos > 0
                refs.append((hid, pos) if ok else None)
            elif t == "header":
                h = self.hdr(x["value"])
                refs += [
                    (h.id, i + 1) if f.width % 16 == 0 and not f.signed else None
                    for i, f in enumerate(h.htype.fields)
                ]
            elif t != "payload":
                refs.append(None)
        out: list[tuple[str, int, tuple[int, int, int] | None]] = []
        k = 0
        while k < len(parts):
            ref = refs[k]
            end = k + 1
            if ref is not None:
                while end < len(parts) and refs[end] == (ref[0], ref[1] + end - k):
                    end += 1
            if end - k > 2:
                out.append((parts[k][0], sum(w for _, w in parts[k:end]), (ref[0], ref[1], ref[1] + end - k)))
            else:
                out += [(code, w, None) for code, w in parts[k:end]]
            k = end
        return out

    def gen_serializers(self) -> None:
        """SER[header id](h) -> bytes, for calculations that include the payload."""
        self.emit(0, "SER = {}")
        for name in (self.prog.deparser or {}).get("order", []):
            h = self.hdr(name)
            ht = h.htype
            if not ht.fields or any(f.width == 0 for f in ht.fields):
                continue
            pk = self.packed.get(h.id)
            if pk is not None:
                self.emit(0, f"SER[{h.id}] = lambda _h: _h[1].to_bytes({pk.nbytes}, 'big')")
                continue
            terms = []
            pad = (-ht.total_width) % 8
            shift = ht.total_width + pad
            for i, f in enumerate(ht.fields):
                shift -= f.width
                x = f"(_h[{i + 1}] & {_mask(f.width)})"
                terms.append(f"({x} << {shift})" if shift else x)
            self.emit(
                0,
                f"SER[{h.id}] = lambda _h: ({' | '.join(terms)}).to_bytes({(ht.total_width + pad) // 8}, 'big')",
            )
        self.emit(0, "")

    # ------------------------------------------------------------------ build
    def build(self) -> str:
        self.emit(0, "# generated by p4kit.switch.codegen -- do not edit")
        self.gen_new_headers()
        self.gen_parser()
        self.gen_actions()
        for pipe in self.prog.json.get("pipelines", []):
            self.gen_pipeline(pipe)
        self.gen_checksums()
        self.gen_deparser()
        self.gen_learn_and_field_lists()
        self.gen_selectors()
        self.gen_serializers()
        egress = next((p for p in self.prog.json.get("pipelines", []) if p.get("name") == "egress"), None)
        self.emit(0, f"HAS_EGRESS = {bool(egress and egress.get('init_table'))}")
        self.emit(0, f"HAS_VERIFY = {any(c.get('verify', True) for c in self.prog.checksums)}")
        self.emit(0, f"HAS_UPDATE = {any(c.get('update', True) for c in self.prog.checksums)}")
        return "\n".join(self.out + self.side) + "\n"

    def gen_new_headers(self) -> None:
        parts = []
        for h in self.prog.headers:
            n = len(h.htype.fields)
            init = self.state.egress_spec_init
            if h.name == "standard_metadata" and init and "egress_spec" in h.htype.index:
                vals = ["0"] * n  # --egress-spec-init-to-drop: egress_spec starts as the drop port
                vals[h.htype.index["egress_spec"]] = str(init)
                parts.append(f"[1, {', '.join(vals)}]")
                continue
            if h.id in self.packed:
                parts.append("[0, 0]")  # [valid, all fields as one integer]
                continue
            parts.append(f"[{1 if h.metadata else 0}{', 0' * n}]")
        self.emit(0, "def NEW_HEADERS():")
        self.emit(1, f"return [{', '.join(parts)}]")
        self.emit(0, "")
        self.consts["NEW_HEADERS_EXPR"] = f"[{', '.join(parts)}]"  # for callers that inline it

    # ---- parser
    def gen_parser(self) -> None:
        parser = self.prog.parser
        if parser is None:
            self.emit(0, "def PARSE(P, H):")
            self.emit(1, "return None")
            self.emit(0, "")
            return
        for i, st in enumerate(parser.get("parse_states", [])):
            self.state_fn[st["name"]] = _ident("S", st["name"], i)
            self.parse_states[st["name"]] = st
        self.inline_parser = not _has_cycle(parser.get("parse_states", []))
        for st in parser.get("parse_states", []):
            self.gen_state(st)
        init = parser.get("init_state")
        self.emit(0, "def PARSE(P, H):")
        self.emit(1, f"s = {self.state_fn.get(init, 'None')}")
        if _has_cycle(parser.get("parse_states", [])):
            # A parse graph with a cycle may loop without consuming input: bound the number of
            # states visited so that no packet can hang the switch (ParserTimeout, as P4 names it).
            self.emit(1, "n = 0")
            self.emit(1, "while s is not None:")
            self.emit(2, "s = s(P, H)")
            self.emit(2, "n += 1")
            self.emit(2, f"if n > {MAX_PARSER_STATES}:")
            self.emit(3, f"raise _perr({self.err_code('ParserTimeout')})")
        else:
            self.emit(1, "while s is not None:")
            self.emit(2, "s = s(P, H)")
            self.consts["PARSE_START"] = None  # the start state's function, bound after exec
            self.emit(0, "")
            self.emit(0, f"PARSE_START = {self.state_fn.get(init, 'None')}")
        self.emit(0, "")

    def gen_state(self, st: dict) -> None:
        """A state's function. In an acyclic parser the states it leads to are inlined into it (up to
        a budget), so a usual packet walks its whole parse path in one call."""
        fn = self.state_fn[st["name"]]
        self.emit(0, f"def {fn}(P, H):")
        self.emit(1, "_d = P.data; _n = P.dlen")  # neither changes while a packet is parsed
        self._inline_left = MAX_INLINED_STATES
        self._off_in_e = self._off_dirty = False
        self.gen_state_body(1, st)
        self.emit(0, "")

    def gen_state_body(self, ind: int, st: dict) -> None:
        if self.trace:
            self.emit(ind, f"TR('parser: state {st['name']}')")
        for op in st.get("parser_ops", []):
            self.parser_op(ind, op)
        self.gen_transitions(ind, st)

    def goto_state(self, ind: int, nxt: str | None) -> None:
        """Continue with state `nxt`: its code inline when allowed, else return its function.
        Inlining is safe because every path through a state's code ends in return or raise, so
        the code after an inlined branch (the next transition test) runs only when it was not taken."""
        st = self.parse_states.get(nxt) if nxt else None
        if st is not None and self.inline_parser and self._inline_left > 0 and ind < MAX_INLINE_INDENT:
            self._inline_left -= 1
            known = self._off_in_e, self._off_dirty
            self.gen_state_body(ind, st)
            self._off_in_e, self._off_dirty = known  # what follows is the including state's other branches
        else:
            self.sync_off(ind)
            self.emit(ind, f"return {self.state_fn.get(nxt, 'None') if nxt else 'None'}")

    def sync_off(self, ind: int) -> None:
        """Write the parse offset the extracts kept in _e back to P.off, if it lags (before a
        return, a raise, or an operation that reads P.off): the extracts of one parse path write it
        once, not once per header."""
        if self._off_dirty:
            self.emit(ind, "P.off = _e")

    def raise_perr(self, ind: int, code: Any) -> None:
        """`raise _perr(code)` with P.off where the error happened (the payload starts there)."""
        self.sync_off(ind)
        self.emit(ind, f"raise _perr({code})")

    def parser_op(self, ind: int, op: dict) -> None:
        kind = op["op"]
        ps = op.get("parameters", [])
        if kind != "extract" or ps[0].get("type") not in ("regular", "stack", "union_stack"):
            self.sync_off(ind)  # the op may read P.off (lookahead, a varbit, an error's position)
            self._off_dirty = False
        if kind not in ("extract", "set", "verify"):
            self._off_in_e = False  # the op may move P.off
        if kind == "extract":
            self.gen_extract(ind, ps[0])
        elif kind == "extract_VL":
            ref = ps[0]
            bits, _ = self.expr(ps[1])
            err = self.err_code("HeaderTooShort")
            if ref.get("type") == "stack":
                st = self.prog.stacks[ref["value"]]
                ht, label = st.htype, st.name + "[]"
                ids = self.const(f"SID{st.id}", tuple(st.header_ids))
                i = self.tmp("n")
                self.emit(ind, f"{i} = P.nx[{st.id}]")
                self.emit(ind, f"if {i} >= {len(st.header_ids)}:")
                self.emit(ind + 1, f"raise _perr({self.err_code('StackOutOfBounds')})")
                slot = f"{ids}[{i}]"
            else:
                h = self.hdr(ref["value"])
                ht, label, slot = h.htype, h.name, str(h.id)
            layout = self.const(
                f"HTL_{ht.name}".replace(".", "_").replace("$", "_"), [(f.width, f.signed) for f in ht.fields]
            )
            vmax = sum(f.varbit_max for f in ht.fields if f.width == 0)
            self.emit(ind, f"_extract_vl(P, H, {slot}, {bits}, {layout}, {vmax}, _perr({err}))")
            if ref.get("type") == "stack":
                self.emit(ind, f"P.nx[{st.id}] = {i} + 1")
            if self.trace:
                self.emit(ind, f"TR('parser: extract {label} (varbit) ' + repr(H[{slot}][1:]))")
        elif kind == "set":
            code, w = self.expr(ps[1])
            self.store(ind, ps[0], code, w)
        elif kind == "verify":
            c, _ = self.expr(ps[0])
            e, _ = self.expr(ps[1])
            self.emit(ind, f"if not {c}:")
            self.emit(ind + 1, f"raise _perr({e})")
        elif kind == "shift":  # deprecated: a number of bytes
            n, _ = self.expr(ps[0])
            b = self.tmp("b")
            self.emit(ind, f"{b} = {n}")
            self.emit(ind, f"if P.off + {b} > P.dlen:")
            self.emit(ind + 1, f"raise _perr({self.err_code('PacketTooShort')})")
            self.emit(ind, f"P.off += {b}")
        elif kind == "advance":
            n, _ = self.expr(ps[0])
            b = self.tmp("b")
            self.emit(ind, f"{b} = {n}")
            self.emit(ind, f"if {b} & 7:")  # BMv2: advance by whole bytes only
            self.emit(ind + 1, f"raise _perr({self.err_code('ParserInvalidArgument')})")
            self.emit(ind, f"if P.off + ({b} >> 3) > P.dlen:")
            self.emit(ind + 1, f"raise _perr({self.err_code('PacketTooShort')})")
            self.emit(ind, f"P.off += {b} >> 3")
        elif kind == "primitive":
            for p in ps:
                self.primitive(ind, p, oob_noop=False)
        else:
            raise PipelineLoadError(f"unsupported parser operation '{kind}'")

    def gen_extract(self, ind: int, ref: dict) -> None:
        t = ref.get("type")
        if t == "regular":
            h = self.hdr(ref["value"])
            pk = self.packed.get(h.id)
            if pk is not None:  # one integer of the header's bytes (fusion.Packed)
                if not self._off_in_e:
                    self.emit(ind, "_e = P.off")
                self.emit(ind, f"if _e + {pk.nbytes} > _n:")
                self.raise_perr(ind + 1, self.err_code("PacketTooShort"))
                self.emit(ind, f"H[{h.id}] = [1, _fb(_d[_e:_e + {pk.nbytes}], 'big')]")
                self.emit(ind, f"_e += {pk.nbytes}")
                self._off_in_e = self._off_dirty = True
                return
            self._extract_into(ind, f"H[{h.id}]", h.htype, h.name)
        elif t == "stack":
            st = self.prog.stacks[ref["value"]]
            ids = self.const(f"SID{st.id}", tuple(st.header_ids))
            i = self.tmp("n")
            self.emit(ind, f"{i} = P.nx[{st.id}]")
            self.emit(ind, f"if {i} >= {len(st.header_ids)}:")
            self.raise_perr(ind + 1, self.err_code("StackOutOfBounds"))
            self._extract_into(ind, f"H[{ids}[{i}]]", st.htype, st.name + "[]")
            self.emit(ind, f"P.nx[{st.id}] = {i} + 1")
        elif t == "union_stack":  # BMv2: the next union of the stack, one member; the others invalid
            us = self.prog.union_stacks[ref["value"][0]]
            member = ref["value"][1]
            ids = self.const(f"USID{us.id}_{member}", tuple(e[member] for e in us.elems))
            others = self.const(
                f"USOTH{us.id}_{member}",
                tuple(tuple(h for m, h in e.items() if m != member) for e in us.elems),
            )
            i = self.tmp("n")
            self.emit(ind, f"{i} = P.nx[{us.id}]")
            self.emit(ind, f"if {i} >= {len(us.elems)}:")
            self.raise_perr(ind + 1, self.err_code("StackOutOfBounds"))
            ht = self.prog.headers[us.elems[0][member]].htype
            self._extract_into(ind, f"H[{ids}[{i}]]", ht, f"{us.name}[].{member}")
            self.emit(ind, f"for _u in {others}[{i}]:")
            self.emit(ind + 1, "H[_u][0] = 0")
            self.emit(ind, f"P.nx[{us.id}] = {i} + 1")
        else:
            raise PipelineLoadError(f"unsupported extract target {ref!r}")

    def _extract_into(self, ind: int, target: str, ht: HeaderType, label: str) -> None:
        if any(f.width == 0 for f in ht.fields):
            raise PipelineLoadError(f"header type '{ht.name}' has a varbit field: use extract_VL")
        total = ht.total_width
        pad = (-total) % 8  # BMv2 rounds a header up to whole bytes; the padding bits are ignored
        n = (total + pad) // 8
        fmt, groups = struct_layout([f.width for f in ht.fields] + ([pad] if pad else []))
        st = self.const(f"ST_{ht.name}".replace(".", "_").replace("$", "_"), struct.Struct(fmt))
        # _e holds the offset when the previous operation of this parse path was an extract
        if not self._off_in_e:
            self.emit(ind, "_e = P.off")
        self.emit(ind, f"if _e + {n} > _n:")
        self.raise_perr(ind + 1, self.err_code("PacketTooShort"))
        if _one_to_one(ht, groups, pad):  # every field is one struct piece: no locals needed
            self.emit(ind, f"{target} = [1, *{st}.unpack_from(_d, _e)]")
            self.emit(ind, f"_e += {n}")
            self._off_in_e = self._off_dirty = True
            if self.trace:
                names = [f.name for f in ht.fields]
                self.emit(ind, f"TR('parser: extract {label} ' + _fmt_fields({names!r}, {target}))")
            return
        npieces = sum(len(g.pieces) for g in groups)
        pv = [f"_p{i}" for i in range(npieces)]
        self.emit(ind, f"{', '.join(pv)}{',' if npieces == 1 else ''} = {st}.unpack_from(_d, _e)")
        vals: list[str] = [""] * len(ht.fields)
        k = 0
        for g in groups:
            names = pv[k : k + len(g.pieces)]
            k += len(g.pieces)
            if len(names) == 1:
                gexpr = names[0]
            else:
                terms = []
                rem = g.width
                for nm, pw in zip(names, g.pieces, strict=False):
                    rem -= pw
                    terms.append(f"({nm} << {rem})" if rem else nm)
                gexpr = "(" + " | ".join(terms) + ")"
                if len(g.fields) > 1:
                    tmpv = self.tmp("g")
                    self.emit(ind, f"{tmpv} = {gexpr}")
                    gexpr = tmpv
            for fi, fw, sh in g.fields:
                if fi >= len(ht.fields):
                    continue
                if len(g.fields) == 1:
                    x = gexpr
                else:
                    x = f"({gexpr} >> {sh})" if sh else gexpr
                    if sh + fw < g.width:
                        x = f"({x} & {_mask(fw)})"
                if ht.fields[fi].signed:
                    x = f"_sx({x}, {fw})"
                vals[fi] = x
        self.emit(ind, f"{target} = [1, {', '.join(vals)}]" if vals else f"{target} = [1]")
        self.emit(ind, f"_e += {n}")
        self._off_in_e = self._off_dirty = True
        if self.trace:
            names = [f.name for f in ht.fields]
            self.emit(ind, f"TR('parser: extract {label} ' + _fmt_fields({names!r}, {target}))")

    def gen_transitions(self, ind: int, st: dict) -> None:
        trans = st.get("transitions", [])
        keyparts = st.get("transition_key", [])
        if not trans:
            self.sync_off(ind)
            self.emit(ind, "return None")
            return
        if any(kp.get("type") == "lookahead" for kp in keyparts):
            self.sync_off(ind)  # a lookahead reads from P.off
            self._off_dirty = False
        if keyparts:
            terms = []
            total = 0
            parts = []
            for kp in keyparts:
                code, w = self.key_part(kp)
                parts.append((code, w))
            for code, w in reversed(parts):
                terms.append(f"({code} << {total})" if total else code)
                total += w
            self.emit(ind, f"_k = {' | '.join(reversed(terms))}")
        for tr in trans:
            nxt = tr.get("next_state")
            ttype = tr.get("type", "hexstr" if tr.get("value") not in (None, "default") else "default")
            if tr.get("value") == "default" or ttype == "default":
                self.goto_state(ind, nxt)
                return
            if ttype == "parse_vset":
                vs = self.const(_ident("VS", tr["value"], len(self.consts)), self.state.vsets[tr["value"]])
                if tr.get("mask"):
                    m = _hexint(tr["mask"])
                    self.emit(ind, f"if any(_k & {m} == _v & {m} for _v in {vs}):")
                else:
                    self.emit(ind, f"if _k in {vs}:")
            else:
                v = _hexint(tr["value"])
                if tr.get("mask") not in (None, ""):
                    m = _hexint(tr["mask"])
                    self.emit(ind, f"if _k & {m} == {v & m}:")
                else:
                    self.emit(ind, f"if _k == {v}:")
            self.goto_state(ind + 1, nxt)
        self.raise_perr(ind, self.err_code("NoMatch"))

    def key_part(self, kp: dict) -> tuple[str, int]:
        t = kp.get("type")
        if t == "lookahead":
            off, w = int(kp["value"][0]), int(kp["value"][1])
            return f"_lookahead(P, {off}, {w})", (w + 7) // 8 * 8
        if t in ("field", "stack_field"):
            target, w, signed = self.field_lvalue(kp)
            code = f"({target} & {_mask(w)})" if signed else target
            return code, (w + 7) // 8 * 8
        if t == "expression":
            code, w = self.expr(kp)
            w = w or 32
            return f"(({code}) & {_mask(w)})", (w + 7) // 8 * 8
        raise PipelineLoadError(f"unsupported transition key {kp!r}")

    # ---- actions
    def gen_actions(self) -> None:
        for a in self.prog.actions_by_id.values():
            fn = _ident("A", a.name, a.id)
            self.action_fn[a.id] = fn
            self._rd_width = {i: w for i, (_, w) in enumerate(a.params)}
            self.emit(0, f"def {fn}(P, H, A):")
            n0 = len(self.out)
            if any(p.get("op") in ("_jump", "_jump_if_zero") for p in a.primitives):
                self.gen_jumping_body(a.primitives)
            elif self.trace:
                for p in a.primitives:
                    self.primitive(1, p)
            else:
                self._fwd, self._dirty = {}, {}
                # an action working on packed headers unpacked runs its lanes one by one
                runs = {} if a.id in self.unpack_in else {r.start: r for r in self.lane_runs.get(a.id, [])}
                try:
                    k = 0
                    while k < len(a.primitives):
                        run = runs.get(k)
                        if run is not None and self.gen_lane_run(run):
                            k += run.seg * run.count
                            continue
                        self.forwarding_primitive(a.primitives[k])
                        k += 1
                    self._flush(1)
                finally:
                    self._fwd, self._dirty = None, {}
            if len(self.out) == n0:
                self.emit(1, "pass")
                if not self.trace:
                    self.action_body[a.id] = ["    pass"]
            else:
                if a.id in self.unpack_in:
                    self.out[n0:] = self._unpacked_body(self.unpack_in[a.id], self.out[n0:])
                self.out[n0:] = _bind_header_locals(self.out[n0:])
                body = self.out[n0:]
                if (
                    a.id not in self.unpack_in
                    and not self.trace
                    and len(body) <= MAX_INLINED_ACTION
                    and not any(re.search(r"\b(return|break|continue)\b", ln) for ln in body)
                ):
                    self.action_body[a.id] = body
            self.emit(0, "")
            self._rd_width = {}

    def _unpacked_body(self, hids: list[int], body: list[str]) -> list[str]:
        """An action body that reads or writes a packed header's fields one by one, run on the list
        form of the header (fusion.unpacking_actions): unpacked in place first, packed again however
        the body ends (an exit too), so every other piece of code keeps seeing the integer."""
        pre, post = [], []
        for hid in hids:
            pk = self.packed[hid]
            fmt = self.const(f"PKU{hid}", struct.Struct("!" + _NATIVE[pk.width] * pk.lanes))
            pre.append(f"    H[{hid}][1:] = {fmt}.unpack(H[{hid}][1].to_bytes({pk.nbytes}, 'big'))")
            post.append(f"        H[{hid}][1:] = [_fb({fmt}.pack(*H[{hid}][1:]), 'big')]")
        return [*pre, "    try:", *("    " + ln for ln in body), "    finally:", *post]

    # ---- fused lane runs (fusion.py)
    def _lane_field(self, v: dict) -> tuple[str, int | None]:
        """A field read inside a lane segment: the lane's symbolic value, or a value the same for
        every lane (read once, before the list operation)."""
        key = (v["value"][0], v["value"][1])
        if key in self._lane_env:  # type: ignore[operator]
            return self._lane_env[key]  # type: ignore[index]
        if key in self._lane_block:
            raise _NotLane(f"{key} is read before the segment writes it")
        env, self._lane_env = self._lane_env, None
        try:
            code, w = self.expr(v)
        finally:
            self._lane_env = env
        local = self.tmp("lb")
        self._lane_pre.append(f"{local} = {code}")
        return local, w

    def gen_lane_run(self, run: fusion.LaneRun) -> bool:
        """A lane run as list operations over the fused rows; False (nothing emitted) when a
        segment's effect cannot be expressed per lane."""
        fused = self.fused.get(run.registers)
        if fused is None:
            return False
        h = self.hdr(run.header)
        first = h.htype.index[run.fields[0]] + 1
        end = first + run.count
        fw = h.htype.fields[first - 1].width
        reg = self.prog.registers[run.registers[0]]
        rw = reg.bitwidth
        lane = (run.header, run.fields[0])
        writes: set[tuple[str, str]] = set()
        index: dict | None = None
        for p in run.template:
            ps = p.get("parameters", [])
            dst = ps[0] if p["op"] != "register_write" else None
            if dst is not None:
                if dst.get("type") != "field":
                    return False
                writes.add((dst["value"][0], dst["value"][1]))
            idx = ps[2] if p["op"] == "register_read" else ps[1] if p["op"] == "register_write" else None
            if idx is not None:
                if index is not None and idx != index:
                    return False
                index = idx
        if index is None:
            return False
        refs = _field_refs(index)
        others = {(run.header, f) for f in run.fields[1:]}
        if refs & (writes | {lane} | others) or _field_refs(run.template) & others:
            return False
        self._flush(1)
        fwd, self._fwd = self._fwd, None  # the lists are current; the run reads and writes them
        self._lane_env = {lane: ("_lf", fw)}
        self._lane_block = writes - {lane}
        self._lane_pre = []
        reg_cur: tuple[str, int | None] = ("_lr", rw)
        try:
            idx_code, iw = self.expr(index)
            for p in run.template:
                ps = p["parameters"]
                if p["op"] == "register_read":
                    self._lane_assign(ps[0], reg_cur)
                elif p["op"] == "register_write":
                    code, w = self.expr(ps[2])
                    reg_cur = (code if w is not None and w <= rw else f"(({code}) & {_mask(rw)})", rw)
                else:
                    self._lane_assign(ps[0], self.expr(ps[1]))
        except (_NotLane, PipelineLoadError) as exc:
            self._fwd = fwd
            if h.id in self.packed:  # fusion.packable_headers promised this run could be generated
                raise PipelineLoadError(f"lane run over packed header '{run.header}': {exc}") from exc
            return False
        finally:
            env, self._lane_env = self._lane_env, None
        pk = self.packed.get(h.id)
        if pk is not None:
            self._emit_packed_run(run, fused, pk, h.id, idx_code, iw, reg_cur[0], env, lane)
        else:
            self._emit_lane_run(run, fused, h.id, first, end, idx_code, iw, reg_cur[0], env, lane)
        self._fwd = {}  # what forwarding knew before the run is gone
        return True

    def _lane_assign(self, dst: dict, value: tuple[str, int | None]) -> None:
        key = (dst["value"][0], dst["value"][1])
        _, _, info = self.prog.field_ref(*key)
        if info is None or info.signed or info.width == 0:
            raise _NotLane(f"{key} is not an unsigned field")
        code, w = value
        masked = code if w is not None and w <= info.width else f"(({code}) & {_mask(info.width)})"
        self._lane_env[key] = (masked, info.width)  # type: ignore[index]
        self._lane_block.discard(key)

    def _emit_packed_run(
        self,
        run: fusion.LaneRun,
        fused: fusion.FusedRows,
        pk: fusion.Packed,
        hid: int,
        idx_code: str,
        iw: int | None,
        reg_out: str,
        env: dict,
        lane: tuple[str, str],
    ) -> None:
        """A lane run over a packed header and packed rows (one integer each, lane 0 most
        significant). A lane-wise add mod 2**w is one SWAR expression: the low w-1 bits of each
        lane add without reaching the next lane, and the top bits are put back with an xor. Bitwise
        operations act on all lanes at once. Anything else unpacks both into lists, runs the same
        list comprehension as unpacked lanes do, and packs the result again."""
        field_out = env[lane][0]
        temps = {k: code for k, (code, _) in env.items() if k != lane}
        rows = self.const(_ident("FG", run.registers[0], len(self.consts)), fused.rows)
        m = pk.lane_mask
        low = self.const(f"PKL{len(self.consts)}", pk.repeated(m >> 1))
        top = self.const(f"PKH{len(self.consts)}", pk.repeated(1 << (pk.width - 1)))
        fmt = self.const(f"PKS{len(self.consts)}", struct.Struct("!" + _NATIVE[pk.width] * pk.lanes))
        for line in self._lane_pre:
            self.emit(1, line)
        i = self.tmp("li")
        self.emit(1, f"{i} = {idx_code}")
        ok = f"{i} < {fused.size}" if iw is not None else f"0 <= {i} < {fused.size}"
        r, f = self.tmp("lr"), self.tmp("lf")
        exprs = [reg_out, field_out, *temps.values()]
        if any(_uses(c, "_lr") for c in exprs):
            self.emit(1, f"{r} = {rows}[{i}] if {ok} else 0")
        if any(_uses(c, "_lf") for c in exprs):
            self.emit(1, f"{f} = H[{hid}][1]")
        unpacked: dict[str, str] = {}

        def lanes_of(packed: str) -> str:
            if packed not in unpacked:
                u = self.tmp("lu")
                self.emit(1, f"{u} = {fmt}.unpack({packed}.to_bytes({pk.nbytes}, 'big'))")
                unpacked[packed] = u
            return unpacked[packed]

        def packed(code: str) -> str:
            """The packed integer of every lane's `code`."""
            if code == "_lr":
                return r
            if code == "_lf":
                return f
            for a, b in ((r, f), (f, r)):
                x, y = ("_lr", "_lf") if a == r else ("_lf", "_lr")
                if code == f"(({x} + {y}) & {m})":
                    return f"((({a} & {low}) + ({b} & {low})) ^ (({a} ^ {b}) & {top}))"
                for op in ("^", "|", "&"):
                    if code == f"({x} {op} {y})":
                        return f"({a} {op} {b})"
            ur = lanes_of(r) if _uses(code, "_lr") else None
            uf = lanes_of(f) if _uses(code, "_lf") else None
            if ur and uf:
                comp = f"[{code} for _lr, _lf in zip({ur}, {uf})]"
            elif ur:
                comp = f"[{code} for _lr in {ur}]"
            elif uf:
                comp = f"[{code} for _lf in {uf}]"
            else:
                comp = f"[{code}] * {pk.lanes}"
            return f"_fb({fmt}.pack(*{comp}), 'big')"

        vr = vf = None
        if reg_out != "_lr":
            vr = self.tmp("lv")
            self.emit(1, f"{vr} = {packed(reg_out)}")
        if field_out != "_lf":
            if field_out == reg_out and vr is not None:
                vf = vr
            else:
                vf = self.tmp("lv")
                self.emit(1, f"{vf} = {packed(field_out)}")
        if temps:  # a temporary keeps what the last lane (the least significant) left in it
            if any(_uses(c, "_lr") for c in temps.values()):
                self.emit(1, f"_lr = {r} & {m}")
            if any(_uses(c, "_lf") for c in temps.values()):
                self.emit(1, f"_lf = {f} & {m}")
            for (hname, fname), code in temps.items():
                target, _, _ = self.field_lvalue({"type": "field", "value": [hname, fname]})
                self.emit(1, f"{target} = {code}")
        if vr is not None:
            self.emit(1, f"if {ok}:")
            self.emit(2, f"{rows}[{i}] = {vr}")
        if vf is not None:
            self.emit(1, f"H[{hid}][1] = {vf}")

    def _emit_lane_run(
        self,
        run: fusion.LaneRun,
        fused: fusion.FusedRows,
        hid: int,
        first: int,
        end: int,
        idx_code: str,
        iw: int | None,
        reg_out: str,
        env: dict,
        lane: tuple[str, str],
    ) -> None:
        field_out = env[lane][0]
        temps = {k: code for k, (code, _) in env.items() if k != lane}
        exprs = [reg_out, field_out, *temps.values()]
        reads_r = any(_uses(c, "_lr") for c in exprs)
        reads_f = any(_uses(c, "_lf") for c in exprs)
        rows = self.const(_ident("FG", run.registers[0], len(self.consts)), fused.rows)
        zero = self.const(f"FZ{len(self.consts)}", fused.zero)
        for line in self._lane_pre:  # values the same for every lane (the index may use them)
            self.emit(1, line)
        i = self.tmp("li")
        self.emit(1, f"{i} = {idx_code}")
        ok = f"{i} < {fused.size}" if iw is not None else f"0 <= {i} < {fused.size}"
        row = self.tmp("lrow")
        fl = self.tmp("lfl")
        if reads_r:
            self.emit(1, f"{row} = {rows}[{i}] if {ok} else {zero}")
        if reads_f:
            self.emit(1, f"{fl} = H[{hid}][{first}:{end}]")

        def vec(code: str) -> str:
            if code == "_lr":
                return row
            if code == "_lf":
                return fl
            r, f = _uses(code, "_lr"), _uses(code, "_lf")
            if r and f:
                return f"[{code} for _lr, _lf in zip({row}, {fl})]"
            if r:
                return f"[{code} for _lr in {row}]"
            if f:
                return f"[{code} for _lf in {fl}]"
            return f"[{code}] * {run.count}"

        vr = vf = None
        if reg_out == "_lf":
            vr = fl  # a fresh slice of the header: the row may keep it
        elif reg_out != "_lr":
            vr = self.tmp("lv")
            self.emit(1, f"{vr} = {vec(reg_out)}")
        if field_out != "_lf":
            if field_out == reg_out and vr is not None:
                vf = vr
            elif field_out == "_lr":
                vf = row
            else:
                vf = self.tmp("lv")
                self.emit(1, f"{vf} = {vec(field_out)}")
        if temps:  # a temporary keeps what the last lane left in it
            if any(_uses(c, "_lr") for c in temps.values()):
                self.emit(1, f"_lr = {row}[-1]")
            if any(_uses(c, "_lf") for c in temps.values()):
                self.emit(1, f"_lf = {fl}[-1]")
            for (hname, fname), code in temps.items():
                target, _, _ = self.field_lvalue({"type": "field", "value": [hname, fname]})
                self.emit(1, f"{target} = {code}")
        if vr is not None:
            self.emit(1, f"if {ok}:")
            self.emit(2, f"{rows}[{i}] = {vr}")
        if vf is not None:
            self.emit(1, f"H[{hid}][{first}:{end}] = {vf}")

    def gen_jumping_body(self, prims: list[dict]) -> None:
        """Actions with BMv2's _jump/_jump_if_zero (absolute primitive offsets): basic blocks in a
        loop over a program counter; falling off a block enters the next one directly."""
        n = len(prims)
        starts = {0}
        for i, p in enumerate(prims):
            if p["op"] in ("_jump", "_jump_if_zero"):
                starts.add(int(_hexint(p["parameters"][-1]["value"])))
                starts.add(i + 1)
        starts = sorted(x for x in starts if x < n)
        self.emit(1, "_pc = 0")
        self.emit(1, "_loops = 0")
        self.emit(1, "while True:")
        for bi, start in enumerate(starts):
            end = starts[bi + 1] if bi + 1 < len(starts) else n
            self.emit(2, f"if _pc == {start}:")
            for k, p in enumerate(prims[start:end], start):
                op = p["op"]
                if op in ("_jump", "_jump_if_zero"):
                    target = _hexint(p["parameters"][-1]["value"])
                    ind = 3
                    if op == "_jump_if_zero":
                        c, _ = self.expr(p["parameters"][0])
                        if "_stack_at(" in c:
                            c = f"_oob_cond(lambda: {c})"
                        self.emit(3, f"if not {c}:")
                        ind = 4
                    if target <= k:  # a backward jump (a P4 loop): bound it, a packet must not hang
                        self.emit(ind, "_loops += 1")
                        self.emit(ind, f"if _loops > {MAX_ACTION_LOOPS}:")
                        self.emit(ind + 1, "raise AssertionFailed('loop in an action did not terminate')")
                    self.emit(ind, f"_pc = {target}")
                    self.emit(ind, "continue")
                else:
                    self.primitive(3, p)
            self.emit(3, f"_pc = {end}")
        self.emit(2, f"if _pc >= {n}:")
        self.emit(3, "return")

    # ---- control flow
    def gen_pipeline(self, pipe: dict) -> None:
        pname = pipe["name"]
        for i, t in enumerate(pipe.get("tables", [])):
            self.node_names[t["name"]] = _ident("T", t["name"], t.get("id", i))
        for i, c in enumerate(pipe.get("conditionals", [])):
            self.node_names[c["name"]] = _ident("C", c["name"], c.get("id", i))
        for i, ac in enumerate(pipe.get("action_calls", []) or []):
            self.node_names[ac["name"]] = _ident("K", ac["name"], ac.get("id", i))
        for t in pipe.get("tables", []):
            self.gen_table(self.prog.tables[t["name"]])
        for c in pipe.get("conditionals", []):
            self.gen_conditional(c)
        for ac in pipe.get("action_calls", []) or []:
            self.gen_action_call(ac)
        init = pipe.get("init_table")
        self.emit(0, f"def PIPE_{pname}(P, H):")
        first = len(self.out)
        if self.trace:
            self.emit(1, f"n = {self.node(init)}")
        else:
            self.emit(1, "n = None")
        self.emit(1, "try:")
        if not self.trace:
            # the nested code runs in a loop of one turn: leaving the control early is a `break`
            self._inline_left = MAX_INLINED_NODES
            self._graph = self._control_graph(pipe, init)
            self.emit(2, "while True:")
            self.inline_node(3, init, pipe, None)
            self.emit(3, "break")
        if self.trace or any(re.match(r"\s+n = ", ln) for ln in self.out[first + 2 :]):
            self.emit(2, "while n is not None:")
            self.emit(3, "n = n(P, H)")
        else:  # every path ends in the nested code: no node is left to run one by one
            del self.out[first]
        self.emit(1, "except ExitControl:")
        if self.trace:
            self.emit(2, f"TR('{pname}: exit')")
        else:
            self.emit(2, "pass")
        if not self.trace:
            self.out[first:] = localise_headers(self.out[first:], "    ")
        # The body alone (no return in it), for the engine's fast path to inline.
        self.consts[f"PIPE_BODY_{pname}"] = "\n".join(self.out[first:])
        self.emit(0, "")

    def _successors(self, name: str, pipe: dict) -> tuple[str | None, ...]:
        """The nodes control node `name` can lead to, as the nested code follows them; none for a
        table whose actions lead to different nodes (the nested code ends there)."""
        cond = self._pipe_items(pipe, "conditionals").get(name)
        if cond is not None:
            return (cond.get("true_next"), cond.get("false_next"))
        call = self._pipe_items(pipe, "action_calls").get(name)
        if call is not None:
            return (call.get("next_node"),)
        t = self.prog.tables.get(name)
        if t is None:
            return ()
        fixed = self.fixed_call(t)
        if fixed is not None:
            return (fixed[2],)
        if t.hit_miss:
            return (t.next_tables.get("__HIT__"), t.next_tables.get("__MISS__"))
        return self._action_nexts(t)

    @staticmethod
    def _action_nexts(t: TableInfo) -> tuple[str | None, ...]:
        """The nodes a table's actions lead to (in a fixed order, the end of the control last)."""
        nexts = {t.next_tables.get(a, t.base_default_next) for a in t.action_names}
        nexts.add(t.base_default_next)
        return tuple(sorted(nexts, key=lambda n: (n is None, n or "")))

    def _control_graph(self, pipe: dict, init: str | None) -> regions.ControlGraph:
        names = [*self._pipe_items(pipe, "conditionals"), *self._pipe_items(pipe, "action_calls")]
        names += [t["name"] for t in pipe.get("tables", [])]
        return regions.ControlGraph({n: self._successors(n, pipe) for n in names}, init)

    def _join(self, branches: list[str | None], stop: str | None) -> str | None:
        """Where the nested code of `branches` stops: their join, or `stop` when they have none."""
        m = self._graph.merge(branches, stop)
        return stop if m is None else m

    def _inline_block(self, ind: int, name: str | None, pipe: dict, stop: str | None) -> None:
        """`inline_node` as the body of a block: `pass` when it emits nothing."""
        n0 = len(self.out)
        self.inline_node(ind, name, pipe, stop)
        if len(self.out) == n0:
            self.emit(ind, "pass")

    def inline_node(self, ind: int, name: str | None, pipe: dict, stop: str | None) -> None:
        """Emit control node `name` and its successors up to `stop` (where the code goes on after
        the enclosing block), so a usual packet crosses a control without a call per node. Branches
        are nested up to their join (regions.py), and the join follows them once. The end of the
        control is a `break` out of the loop around the code; where the next node is not known here
        (a table whose actions lead to different nodes, or the inlining budget spent) ``n`` is set to
        the node function to continue with, and the loop after the code runs it."""
        if name == stop:
            return
        if name is None:
            self.emit(ind, "break")
            return
        if self._inline_left <= 0 or ind >= MAX_INLINE_INDENT:
            self.emit(ind, f"n = {self.node(name)}")
            self.emit(ind, "break")
            return
        self._inline_left -= 1
        cond = self._pipe_items(pipe, "conditionals").get(name)
        if cond is not None:
            code, _ = self.expr(cond["expression"])
            code = self._oob_false(ind, code)
            t_next, f_next = cond.get("true_next"), cond.get("false_next")
            join = self._join([t_next, f_next], stop)
            self.emit(ind, f"if {code}:")
            self._inline_block(ind + 1, t_next, pipe, join)
            if f_next != join:
                self.emit(ind, "else:")
                self._inline_block(ind + 1, f_next, pipe, join)
            self.inline_node(ind, join, pipe, stop)
            return
        call = self._pipe_items(pipe, "action_calls").get(name)
        if call is not None:
            self.call_action(ind, int(call["action_id"]), ())
            self.inline_node(ind, call.get("next_node"), pipe, stop)
            return
        t = self.prog.tables[name]
        fixed = self.fixed_call(t)
        if fixed is not None:
            aid, args, nxt = fixed
            self.call_action(ind, aid, args)
            self.inline_node(ind, nxt, pipe, stop)
            return
        if t.hit_miss:
            nexts: tuple[str | None, ...] = (t.next_tables.get("__HIT__"), t.next_tables.get("__MISS__"))
        else:
            nexts = self._action_nexts(t)
        join = nexts[0] if len(nexts) == 1 else self._join(list(nexts), stop)

        def leave(i: int, outcome: str) -> None:
            if t.hit_miss:
                self.inline_node(i, t.next_tables.get(outcome), pipe, join)

        tsn = _ident("TS", t.name, t.id)
        dispatch = not t.hit_miss and len(nexts) > 1
        self.table_code(ind, t, tsn, leave, need_next=dispatch)
        if dispatch:
            # a switch on the action that ran: the next node its entry is bound to, then the join
            for k, nxt in enumerate(nexts):
                if k < len(nexts) - 1:
                    self.emit(ind, f"{'if' if k == 0 else 'elif'} _nxt is {self.node(nxt)}:")
                else:
                    self.emit(ind, "else:")
                self._inline_block(ind + 1, nxt, pipe, join)
        self.inline_node(ind, join, pipe, stop)

    def call_action(self, ind: int, aid: int, args: tuple[int, ...]) -> None:
        """A call of an action whose arguments are known here: its body inline when it is short
        (a call costs as much as a few statements), else the call."""
        body = self.action_body.get(aid)
        if body is None:
            self.emit(ind, f"{self.action_fn[aid]}(P, H, {args!r})")
            return
        # the arguments are constants here: A[i] becomes the value itself
        body = [
            _ARG.sub(lambda m: repr(args[int(m.group(1))]) if int(m.group(1)) < len(args) else m.group(0), ln)
            for ln in body
        ]
        if any(_ARG.search(ln) for ln in body):
            self.emit(ind, f"A = {args!r}")
        for ln in _fold_constants(body):
            self.emit(ind, ln[4:])

    @staticmethod
    def _pipe_items(pipe: dict, kind: str) -> dict[str, dict]:
        return {c["name"]: c for c in pipe.get(kind, []) or []}

    def node(self, name: str | None) -> str:
        if name is None:
            return "None"
        n = self.node_names.get(name)
        if n is None:
            raise PipelineLoadError(f"unknown control flow node '{name}'")
        return n

    def _oob_false(self, ind: int, code: str) -> str:
        """A condition that indexes a header stack at run time is false when the index is out of
        range, as p4c's HSIndexSimplifier makes it (`if (i == 0 && c[0]) ... else if (i == 1 &&
        c[1]) ... else <else branch>`): evaluated first into a local, which the `if` then reads."""
        if "_stack_at(" not in code:
            return code
        c = self.tmp("c")
        self.emit(ind, "try:")
        self.emit(ind + 1, f"{c} = bool({code})")
        self.emit(ind, "except StackIndexOutOfRange:")
        self.emit(ind + 1, f"{c} = False")
        return c

    def gen_conditional(self, c: dict) -> None:
        fn = self.node_names[c["name"]]
        code, _ = self.expr(c["expression"])
        t, f = self.node(c.get("true_next")), self.node(c.get("false_next"))
        self.emit(0, f"def {fn}(P, H):")
        code = self._oob_false(1, code)
        if self.trace:
            self.emit(1, f"_c = bool({code})")
            self.emit(1, f"TR('condition {c['name']}: ' + ('true' if _c else 'false'))")
            self.emit(1, f"return {t} if _c else {f}")
        else:
            self.emit(1, f"return {t} if {code} else {f}")
        self.emit(0, "")

    def gen_action_call(self, ac: dict) -> None:
        fn = self.node_names[ac["name"]]
        aid = int(ac["action_id"])
        self.emit(0, f"def {fn}(P, H):")
        if self.trace:
            self.emit(1, f"TR('action {self.prog.actions_by_id[aid].name}')")
        self.emit(1, f"{self.action_fn[aid]}(P, H, ())")
        self.emit(1, f"return {self.node(ac.get('next_node'))}")
        self.emit(0, "")

    def key_code(self, t: TableInfo) -> list[str]:
        codes = []
        for k in t.keys:
            if k.match_type == "valid" or not isinstance(k.target, list):
                h = self.hdr(k.target if isinstance(k.target, str) else k.target[0])
                code = f"H[{h.id}][0]"
            else:
                target, w, signed = self.field_lvalue({"type": "field", "value": k.target})
                code = f"({target} & {_mask(w)})" if signed else target
            if k.mask is not None:
                code = f"({code} & {k.mask})"
            codes.append(code)
        return codes

    def gen_table(self, t: TableInfo) -> None:
        ts = self.state.tables[t.name]
        fn = self.node_names[t.name]
        tsn = self.const(_ident("TS", t.name, t.id), ts)
        if self._gen_fixed_call(t, fn):
            self._table_nexts(t)
            return
        self.emit(0, f"def {fn}(P, H):")
        hm = t.hit_miss

        def ret(ind: int, outcome: str) -> None:
            if hm:
                self.emit(ind, f"return {self.node(t.next_tables.get(outcome))}")
            else:
                self.emit(ind, "return _nxt")

        self.table_code(1, t, tsn, ret)
        self.emit(0, "")
        self._table_nexts(t)

    def table_code(self, ind: int, t: TableInfo, tsn: str, leave: Any, need_next: bool = True) -> None:
        """Look up, count, meter and run one table; `leave(ind, "__HIT__" | "__MISS__")` emits what
        follows each outcome (``_nxt`` holds the next node chosen by the action that ran, when
        `need_next`)."""
        ts = self.state.tables[t.name]
        keys = self.key_code(t)
        kn = [f"_k{i}" for i in range(len(keys))]
        knames = [k.name for k in t.keys]
        for name, code in zip(kn, keys, strict=False):
            self.emit(ind, f"{name} = {code}")
        if ts.kind == "none":
            self.emit(ind, f"e = {tsn}.default")
            if self.trace:
                self.emit(ind, f"TR('table {t.name}: (keyless)')")
            self.gen_run(ind, t, tsn, need_next)
            leave(ind, "__MISS__")
            return
        self.gen_lookup(ind, ts, tsn, kn)
        fmt_key = f"_fmt_key({knames!r}, ({', '.join(kn)}{',' if len(kn) == 1 else ''}))"
        self.emit(ind, "if e is None:")
        self.emit(ind + 1, f"e = {tsn}.default")
        if self.trace:
            self.emit(ind + 1, f"TR('table {t.name}: miss' + {fmt_key})")
        self.gen_run(ind + 1, t, tsn, need_next)
        leave(ind + 1, "__MISS__")
        self.emit(ind, "else:")
        if self.trace:
            self.emit(ind + 1, f"TR('table {t.name}: hit' + {fmt_key})")
        if t.support_timeout:
            self.emit(ind + 1, "e.hit_ns = NOW_NS()")
        if t.with_counters:
            self.emit(ind + 1, "_c = e.counter")
            self.emit(ind + 1, "_c[0] += 1")
            self.emit(ind + 1, "_c[1] += P.plen")
        if t.direct_meters:
            minfo = self.prog.meters.get(t.direct_meters)
            if minfo is not None and minfo.result_target:
                units = "P.plen" if minfo.meter_type == "bytes" else "1"
                self.store(
                    ind + 1,
                    {"type": "field", "value": minfo.result_target},
                    f"e.meter.execute({units}, NOW_US())",
                    2,
                )
        self.gen_run(ind + 1, t, tsn, need_next)
        leave(ind + 1, "__HIT__")

    def _table_nexts(self, t: TableInfo) -> None:
        """Next node per action (what entries bind to)."""
        nxt: dict[str, str] = {}
        for a in t.action_names:
            nxt[a] = self.node(t.next_tables[a]) if a in t.next_tables else self.node(t.base_default_next)
        self.table_next_src[t.name] = nxt
        self.table_default_next_src[t.name] = self.node(t.base_default_next)

    def fixed_call(self, t: TableInfo) -> tuple[int, tuple[int, ...], str | None] | None:
        """fixed_call of the table, but never while tracing (the trace reports tables)."""
        return None if self.trace else fixed_call(self.prog, t)

    def _gen_fixed_call(self, t: TableInfo, fn: str) -> bool:
        """A fixed-call table (see fixed_call) as a function: the call and a constant next node."""
        fixed = self.fixed_call(t)
        if fixed is None:
            return False
        aid, args, nxt = fixed
        self.emit(0, f"def {fn}(P, H):")
        self.emit(1, f"{self.action_fn[aid]}(P, H, {args!r})")
        self.emit(1, f"return {self.node(nxt)}")
        self.emit(0, "")
        return True

    def gen_run(self, ind: int, t: TableInfo, tsn: str, need_next: bool = True) -> None:
        """Run the chosen entry's action; sets ``_nxt`` to its next node when `need_next`."""
        if t.action_profile:
            prof = self.prog.action_profiles.get(t.action_profile)
            self.emit(ind, "_m = e.member")
            self.emit(ind, "if _m is None and e.group is not None:")
            self.emit(ind + 1, "_g = e.group.members")
            if prof is not None and prof.selector is not None:
                sel = _ident("SEL", prof.name, 0)
                self.emit(ind + 1, f"_m = _g[{sel}(P, H) % len(_g)] if _g else None")
            else:
                self.emit(ind + 1, "_m = _g[0] if _g else None")
            self.emit(ind, "if _m is not None:")
            if self.trace:
                self.emit(
                    ind + 1, "TR('  -> member %d: %s' % (_m.member_id, _fmt_action(_m.action, _m.args)))"
                )
            self.emit(ind + 1, "_m.fn(P, H, _m.args)")
            if need_next:
                self.emit(ind + 1, f"_nxt = _m.nxt[{t.name!r}]")
            self.emit(ind, "elif e.fn is not None:")
            if self.trace:
                self.emit(ind + 1, "TR('  -> ' + _fmt_action(e.action, e.args))")
            self.emit(ind + 1, "e.fn(P, H, e.args)")
            if need_next:
                self.emit(ind + 1, "_nxt = e.nxt")
                self.emit(ind, "else:")
                self.emit(ind + 1, "_nxt = e.nxt")
            return
        if self.trace:
            self.emit(ind, "TR('  -> ' + _fmt_action(e.action, e.args))")
        self._run_entry_action(ind, t)
        if need_next:
            self.emit(ind, "_nxt = e.nxt")

    def _run_entry_action(self, ind: int, t: TableInfo) -> None:
        """`e.fn(P, H, e.args)`, with the short bodies of the table's first actions written in
        place (`if e.fn is A_x:`), so the usual entry costs no call."""
        aids = [] if self.trace else [a for a in dict.fromkeys(t.action_ids) if a in self.action_body]
        aids = aids[:MAX_INLINED_TABLE_ACTIONS]
        if not aids:
            self.emit(ind, "e.fn(P, H, e.args)")
            return
        self.emit(ind, "_a = e.fn")
        for k, aid in enumerate(aids):
            self.emit(ind, f"{'if' if k == 0 else 'elif'} _a is {self.action_fn[aid]}:")
            body = self.action_body[aid]
            if any(_ARG.search(ln) for ln in body):
                self.emit(ind + 1, "A = e.args")
            for ln in body:
                self.emit(ind + 1, ln[4:])
        self.emit(ind, "else:")
        self.emit(ind + 1, "_a(P, H, e.args)")

    def gen_lookup(self, ind: int, ts: Any, tsn: str, kn: list[str]) -> None:
        if ts.kind == "exact":
            key = kn[0] if len(kn) == 1 else f"({', '.join(kn)})"
            self.emit(ind, f"e = {tsn}.exact.get({key})")
        elif ts.kind == "lpm":
            lp = ts.lpm_pos
            masked = [f"{k} & _pm" if i == lp else k for i, k in enumerate(kn)]
            key = masked[0] if len(kn) == 1 else f"({', '.join(masked)})"
            self.emit(ind, "e = None")
            self.emit(ind, f"for _pm, _d in {tsn}.lpm:")
            self.emit(ind + 1, f"e = _d.get({key})")
            self.emit(ind + 1, "if e is not None:")
            self.emit(ind + 2, "break")
        else:
            names = []
            conds = []
            for i, (k, kf) in enumerate(zip(kn, ts.info.keys, strict=False)):
                a, b = f"_a{i}", f"_b{i}"
                names += [a, b]
                if kf.match_type == "range":
                    conds.append(f"{a} <= {k} <= {b}")
                else:
                    conds.append(f"{k} & {b} == {a}")
            self.emit(ind, f"for {', '.join(names)}, e in {tsn}.rows:")
            self.emit(ind + 1, f"if {' and '.join(conds)}:")
            self.emit(ind + 2, "break")
            self.emit(ind, "else:")
            self.emit(ind + 1, "e = None")

    # ---- checksums / deparser / learning
    def gen_checksums(self) -> None:
        verify, update = [], []
        for c in self.prog.checksums:
            calc = c.get("calculation")
            fn = self.calc_fn(calc)
            target, w, _ = self.field_lvalue({"type": "field", "value": c["target"]})
            cond = self.expr(c["if_cond"])[0] if c.get("if_cond") else None
            if c.get("verify", True):
                verify.append((fn, target, w, cond, c.get("name", calc)))
            if c.get("update", True):
                update.append((fn, target, w, cond, c.get("name", calc)))
        replica_fns = self._gen_replica_csums([fn for fn, *_ in update])
        ce = self.smf["checksum_error"]
        self.emit(0, "def VERIFY_CHECKSUMS(P, H):")
        first = len(self.out)
        if not verify:
            self.emit(1, "pass")
        for fn, target, w, cond, name in verify:
            ind = 1
            if cond:
                self.emit(1, f"if {cond}:")
                ind = 2
            self.emit(ind, f"if ({fn}(P, H) & {_mask(w)}) != {target}:")
            self.emit(ind + 1, f"H[{self.sm}][{ce}] = 1")
            if self.trace:
                self.emit(ind + 1, f"TR('verify checksum {name}: mismatch')")
        if not self.trace:
            self.out[first:] = localise_headers(self.out[first:], "    ")
        self.consts["VERIFY_BODY"] = "\n".join(self.out[first:])  # for the fast path to inline
        self.emit(0, "")
        self.emit(0, "def UPDATE_CHECKSUMS(P, H):")
        first = len(self.out)
        if not update:
            self.emit(1, "pass")
        for fn, target, w, cond, _name in update:
            ind = 1
            if cond:
                self.emit(1, f"if {cond}:")
                ind = 2
            self.emit(ind, f"{target} = {fn}(P, H) & {_mask(w)}")
        if not self.trace:
            self.out[first:] = localise_headers(self.out[first:], "    ")
        # the body alone (no return in it), for the fast path's replicas to inline
        body = "\n".join(self.out[first:])
        self.consts["UPDATE_BODY"] = body
        if replica_fns:  # ... where a replica's calculations share what no replica changes
            for fn in replica_fns:
                body = re.sub(rf"\b{fn}\(P, H\)", f"{fn}_R(P, H, M)", body)
            self.consts["UPDATE_BODY_R"] = body
        self.emit(0, "")

    def _gen_replica_csums(self, fns: list[str]) -> list[str]:
        """`{fn}_R(P, H, M)` for each csum calculation a checksum update uses: the terms over headers
        no replica writes go into slot k of the multicast's memo M (slots 0..MAX_DEPARSE_SHAPES-1
        are the deparser's)."""
        done: list[str] = []
        for fn in dict.fromkeys(fns):
            spec = self._csum_replica_fns.get(fn)
            if spec is None:
                continue
            inputs, hids, spec_name = spec
            slot = MAX_DEPARSE_SHAPES + len(done)
            self.emit(0, f"def {fn}_R(P, H, M):")
            first = len(self.out)
            if spec_name is not None:
                self.emit(1, f"if not ({' and '.join(f'H[{h}][0]' for h in hids)}):")
                self.emit(2, f"return _calc_slow(P, H, {spec_name})")
            self._emit_csum16_body(inputs, memo=slot)
            if not self._memo_used:  # every term may differ between replicas: the plain function
                del self.out[first - 1 :]
                continue
            self.out[first:] = localise_headers(self.out[first:], "    ")
            self.emit(0, "")
            done.append(fn)
        self.consts["REPLICA_MEMO_SLOTS"] = MAX_DEPARSE_SHAPES + len(done)
        return done

    def parse_shapes(self) -> list[frozenset[int]]:
        """The sets of headers a packet has after each path through the parser, when that is
        knowable: an acyclic parser that only extracts fixed-size, non-stack headers and changes
        no validity otherwise. At most MAX_PATHS paths; [] when the parser is not of that kind."""
        parser = self.prog.parser
        if parser is None or _has_cycle(parser.get("parse_states", [])):
            return []
        states = {st["name"]: st for st in parser.get("parse_states", [])}
        shapes: list[frozenset[int]] = []
        paths = 0

        def walk(name: str | None, have: frozenset[int]) -> bool:
            nonlocal paths
            if name is None:
                paths += 1
                if have not in shapes:
                    shapes.append(have)
                return paths <= MAX_PATHS
            st = states.get(name)
            if st is None:
                return False
            for op in st.get("parser_ops", []):
                if op["op"] in ("set", "verify"):
                    continue
                ref = (op.get("parameters") or [{}])[0]
                if op["op"] != "extract" or ref.get("type") != "regular":
                    return False
                h = self.hdr(ref["value"])
                if any(f.width == 0 for f in h.htype.fields):
                    return False
                have = have | {h.id}
            return all(walk(t.get("next_state"), have) for t in st.get("transitions", []) or [{}])

        return shapes if walk(parser.get("init_state"), frozenset()) else []

    def _pack_args(self, ind: int, h: HeaderInst, hv: str) -> list[str]:
        """struct.pack arguments for header `h` held in local `hv` (emits group temporaries)."""
        ht = h.htype
        total = ht.total_width
        pad = (-total) % 8
        _, groups = struct_layout([f.width for f in ht.fields] + ([pad] if pad else []))
        if _one_to_one(ht, groups, pad):
            return [f"*{hv}[1:]"]  # the list holds the pieces as they are packed
        args: list[str] = []
        for g in groups:
            terms = []
            for fi, fw, sh in g.fields:
                if fi >= len(ht.fields):
                    continue  # padding bits: zero
                x = f"({hv}[{fi + 1}] & {_mask(fw)})" if ht.fields[fi].signed else f"{hv}[{fi + 1}]"
                terms.append(f"({x} << {sh})" if sh else x)
            gexpr = " | ".join(terms)
            if len(g.pieces) == 1:
                args.append(gexpr if len(terms) == 1 else f"({gexpr})")
                continue
            gv = self.tmp("g")
            self.emit(ind, f"{gv} = {gexpr}")
            rem = g.width
            for pw in g.pieces:
                rem -= pw
                x = f"({gv} >> {rem})" if rem else gv
                if rem + pw < g.width:
                    x = f"({x} & {_mask(pw)})"
                args.append(x)
        return args

    def _header_struct(self, h: HeaderInst) -> tuple[str, str]:
        """(name of the header type's Struct constant, its format) as the extractor also uses it."""
        ht = h.htype
        pad = (-ht.total_width) % 8
        fmt, _ = struct_layout([f.width for f in ht.fields] + ([pad] if pad else []))
        name = self.const(f"ST_{ht.name}".replace(".", "_").replace("$", "_"), struct.Struct(fmt))
        return name, fmt

    def gen_deparser(self) -> None:
        """Emit the valid headers in deparser order, then the unparsed payload.

        Fast case first: for each set of headers a parse path yields (parse_shapes), when exactly
        those of the deparser's headers are valid the whole output is one struct.pack of them all
        (formats concatenate: '!' has no alignment) plus the payload. Anything else -- headers added
        or removed by the pipeline, stacks, varbits -- takes the general per-header code."""
        order = [self.hdr(name) for name in (self.prog.deparser or {}).get("order", [])]
        self.emit(0, "def DEPARSE(P, H):")
        emitted = [h for h in order if h.htype.fields]
        fixed = all(not any(f.width == 0 for f in h.htype.fields) for h in emitted)
        shapes = self.parse_shapes() if fixed and not self.trace else []
        if shapes and emitted:
            self.emit(1, "; ".join(f"_h{h.id} = H[{h.id}]" for h in emitted))
            for shape in shapes[:MAX_DEPARSE_SHAPES]:
                members = [h for h in emitted if h.id in shape]
                if not members:
                    continue
                cond = " and ".join(f"_h{h.id}[0]" if h.id in shape else f"not _h{h.id}[0]" for h in emitted)
                self.emit(1, f"if {cond}:")
                pieces = self._shape_pieces(2, members)
                self.emit(2, f"return {' + '.join(pieces)} + P.data[P.off:]")
        self.emit(1, "_out = []")
        for h in order:
            ht = h.htype
            if any(f.width == 0 for f in ht.fields):
                self.emit(1, f"if H[{h.id}][0]:")
                self.consts[f"HT{h.id}"] = [(f.width, f.signed) for f in ht.fields]
                self.emit(2, f"_out.append(_deparse_vl(H[{h.id}], HT{h.id}))")
                continue
            if not ht.fields:
                continue
            self.emit(1, f"_h = H[{h.id}]")
            self.emit(1, "if _h[0]:")
            pk = self.packed.get(h.id)
            if pk is not None:
                self.emit(2, f"_out.append(_h[1].to_bytes({pk.nbytes}, 'big'))")
                continue
            st, _ = self._header_struct(h)
            args = self._pack_args(2, h, "_h")
            self.emit(2, f"_out.append({st}.pack({', '.join(args)}))")
        self.emit(1, "_out.append(P.data[P.off:])")
        self.emit(1, "return b''.join(_out)")
        self.emit(0, "")
        if shapes and emitted and self.replica_owned is not None:
            self._gen_replica_deparser(emitted, shapes[:MAX_DEPARSE_SHAPES])

    def _shape_pieces(self, ind: int, members: list[HeaderInst]) -> list[str]:
        """Byte-string expressions whose concatenation is `members` deparsed (struct.pack runs,
        packed headers as their integer's bytes); group temporaries are emitted at `ind`."""
        pieces: list[str] = []
        args: list[str] = []
        fmt = "!"
        run_ids: list[str] = []
        for h in [*members, None]:
            pk = self.packed.get(h.id) if h is not None else None
            if (h is None or pk is not None) and args:
                st = self.const("SD_" + "_".join(run_ids), struct.Struct(fmt))
                pieces.append(f"{st}.pack({', '.join(args)})")
                args, fmt, run_ids = [], "!", []
            if h is None:
                break
            if pk is not None:  # a packed header is its integer's bytes
                pieces.append(f"_h{h.id}[1].to_bytes({pk.nbytes}, 'big')")
                continue
            args += self._pack_args(ind, h, f"_h{h.id}")
            fmt += self._header_struct(h)[1][1:]
            run_ids.append(str(h.id))
        return pieces

    def _gen_replica_deparser(self, emitted: list[HeaderInst], shapes: list[frozenset[int]]) -> None:
        """DEPARSE_R(P, H, M): the deparser for the replicas of one multicast. Headers after the
        last one a replica owns (replicas.py: egress may write it) are the same bytes for every
        replica, and so is the payload: the first replica packs them into M[shape], the others reuse
        them and pack only their own headers."""
        owned = self.replica_owned or frozenset()
        self.emit(0, "def DEPARSE_R(P, H, M):")
        self.emit(1, "; ".join(f"_h{h.id} = H[{h.id}]" for h in emitted))
        for si, shape in enumerate(shapes):
            members = [h for h in emitted if h.id in shape]
            if not members:
                continue
            cond = " and ".join(f"_h{h.id}[0]" if h.id in shape else f"not _h{h.id}[0]" for h in emitted)
            cut = 1 + max((i for i, h in enumerate(members) if h.id in owned), default=-1)
            self.emit(1, f"if {cond}:")
            self.emit(2, f"_t = M[{si}]")
            self.emit(2, "if _t is None:")
            shared = self._shape_pieces(3, members[cut:])
            self.emit(3, f"_t = M[{si}] = {' + '.join([*shared, 'P.data[P.off:]'])}")
            own = self._shape_pieces(2, members[:cut])
            self.emit(2, f"return {' + '.join([*own, '_t'])}")
        self.emit(1, "return DEPARSE(P, H)")
        self.emit(0, "")

    def gen_learn_and_field_lists(self) -> None:
        """LEARN[id](H) -> tuple of values; FL[id] -> list of (header id, position) to preserve."""
        self.emit(0, "LEARN = {}")
        for lid, ll in self.prog.learn_lists.items():
            vals = []
            for el in ll.get("elements", []):
                code, _ = self.expr(el)
                vals.append(code)
            fn = f"_learn{lid}"
            self.emit(0, f"def {fn}(P, H):")
            self.emit(1, f"return ({', '.join(vals)}{',' if len(vals) == 1 else ''})")
            self.emit(0, f"LEARN[{lid}] = {fn}")
        self.emit(0, "")
        fls: dict[int, list[tuple[int, int]]] = {}
        for fid, fl in self.prog.field_lists.items():
            refs = []
            for el in fl.get("elements", []):
                if el.get("type") == "field":
                    hid, pos, _ = self.prog.field_ref(el["value"][0], el["value"][1])
                    refs.append((hid, pos))
            fls[fid] = refs
        self.consts["FIELD_LISTS"] = fls

    def gen_selectors(self) -> None:
        for name, ap in self.prog.action_profiles.items():
            if ap.selector is None:
                continue
            fn = _ident("SEL", name, 0)
            self._emit_hash_fn(
                fn, ap.selector.get("input", []), ap.selector.get("algo", "crc16"), "$selector$" + name
            )


def fixed_call(prog: Program, t: TableInfo) -> tuple[int, tuple[int, ...], str | None] | None:
    """p4c turns a direct action call into a keyless table whose default entry is const: such a
    table is (action id, constant arguments, next node name) -- nothing at run time can change
    what it does. None for any other table."""
    d = t.default_entry or {}
    if t.keys or t.action_profile or not d.get("action_const"):
        return None
    aid = d.get("action_id")
    if aid is None or int(aid) not in prog.actions_by_id:
        return None
    a = prog.actions_by_id[int(aid)]
    if a.params and not d.get("action_entry_const"):
        return None
    data = d.get("action_data", [])
    if len(data) != len(a.params):
        return None
    args = tuple(_hexint(v) & _mask(w) for v, (_, w) in zip(data, a.params, strict=True))
    if t.hit_miss:
        nxt = t.next_tables.get("__MISS__")
    else:
        nxt = t.next_tables.get(a.name, t.base_default_next)
    return a.id, args, nxt


def compile_program(
    prog: Program, state: SwitchState, trace: bool, helpers: dict, fuse: bool = True
) -> Compiled:
    """Generate, compile and execute the module; return its namespace and binding tables. Without
    `fuse` the registers stay as they are in `state` (the native data plane owns their cells)."""
    gen = CodeGen(prog, state, trace)
    groups = fusion.fusable_groups(prog) if fuse else {}
    packed = fusion.packable_headers(prog, groups)
    # storage is fused (and packed) even when tracing, so that turning tracing on keeps the values
    gen.fused = fusion.fuse_state(prog, state.registers, groups, packed)
    if not trace:  # traced code keeps one primitive per lane, so each register access is logged
        gen.lane_runs = groups
        gen.packed = {prog.header_by_name[h].id: pk for h, pk in packed.items()}
        gen.unpack_in = {
            aid: sorted(prog.header_by_name[h].id for h in hs)
            for aid, hs in fusion.unpacking_actions(prog, groups, packed).items()
        }
    src = gen.build()
    ns: dict[str, Any] = dict(helpers)
    ns.update(gen.consts)
    ns["HF"] = state.hash_fns
    ns["ExitControl"] = ExitControl
    ns["AssertionFailed"] = AssertionFailed
    ns["StackIndexOutOfRange"] = StackIndexOutOfRange
    ns["_oob_cond"] = oob_cond
    ns["_stack_at"] = stack_at
    code = compile(src, f"<p4kit pipeline {prog.json.get('program', '')}>", "exec")
    exec(code, ns)
    comp = Compiled(source=src, ns=ns)
    for aid, fn in gen.action_fn.items():
        comp.action_fns[aid] = ns[fn]
    for tname, m in gen.table_next_src.items():
        resolved = {a: (None if n == "None" else ns[n]) for a, n in m.items()}
        dflt = gen.table_default_next_src[tname]
        resolved[""] = None if dflt == "None" else ns[dflt]
        comp.table_next[tname] = resolved
    return comp
