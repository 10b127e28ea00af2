"""BMv2 JSON to C: the native data plane's code generator.

Why C: the Python data plane (codegen.py) costs about 30 ns a statement, so an INC contribution
(a parse of five headers, two checksums, four tables, 64 lanes of register arithmetic, three
multicast replicas) costs 10-13 us however few statements it is written in. The same work compiled
is a few hundred nanoseconds. This module writes one C function per parser, action, control,
checksum and the deparser, with the same semantics as codegen.py (which is the reference: the tests
run both on the same packets and compare every output and every register).

What it covers is what the common programs use; anything else raises ``Unsupported`` with the
reason, and the switch keeps the Python data plane for that program (``native.plan``; the list is
docs/switch.md's, "The native data plane"):
- headers and metadata with unsigned fields of at most 64 bits (no unions, varbits);
- header stacks, indexed at run time only in actions and conditions (``guarded``);
- a parser of extracts, sets and verifies, selecting on fields and expressions, loops bounded;
- exact, lpm, ternary, range, optional and valid keys, direct counters, const default actions;
- assignments, header validity and copies, registers, counters, drops, exit, assert/assume,
  actions with jumps, hash();
- csum16 checksums over fields and the payload, CRC and the other hashes.py checksums.

Expressions are evaluated on 64-bit unsigned integers. That is exact for +, -, *, <<, &, |, ^, ~
(they commute with reduction mod 2**64, so any later mask gives BMv2's arbitrary-precision result),
but not for comparisons, >>, / and %, which need the true value: each sub-expression carries a
bound on its width and whether it may be negative (p4c masks after every arithmetic operation, so
the bound is nearly always known), and an operand without a known value below 2**64 is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from p4kit.switch.codegen import (
    MAX_ACTION_LOOPS,
    MAX_PARSER_STATES,
    CodeGen,
    _has_cycle,
    _hexint,
    _mask,
    fixed_call,
)
from p4kit.switch.program import HeaderInst, Program, TableInfo
from p4kit.switch.tables import TableState

ABI_H = (Path(__file__).with_name("abi.h")).read_text()
RUNTIME_C = (Path(__file__).with_name("runtime.c")).read_text().replace("/* ABI_H */", ABI_H)

# What the native data plane does not do: a program reading any of these takes the Python one.
_QUEUE_FIELDS = ("enq_timestamp", "enq_qdepth", "deq_timedelta", "deq_qdepth", "priority")
_MAX_WIDTH = 64


class Unsupported(Exception):
    """The program uses something the native data plane does not implement (the message says what)."""


@dataclass
class CExpr:
    """A C expression of type uint64_t; `bits` bounds its true value when it is non-negative (None:
    it may reach 2**64 or more), `neg`: it may be negative (held mod 2**64)."""

    code: str
    bits: int | None
    neg: bool = False

    @property
    def exact(self) -> bool:
        """The uint64_t value is the true value."""
        return self.bits is not None and self.bits <= 64 and not self.neg


@dataclass
class HRef:
    """A header as C lvalues: its validity byte and its fields (a stack element at a run-time index
    is addressed from the stack's first element)."""

    valid: str
    fields: list[str]
    htype: Any


@dataclass
class NativeProgram:
    """What the Python side needs besides the C source: the numbering the source uses."""

    source: str
    name: str
    tables: list[str]  # table id -> name
    registers: list[str]  # register index -> name
    counters: list[str]  # indirect counter index -> name
    hashes: list[str] = field(default_factory=list)  # hash slot -> calculation name
    table_kinds: dict[str, int] = field(default_factory=dict)


_unwrap = CodeGen.unwrap  # p4c wraps some expressions twice: one reading of that for both generators


def _lit(n: int) -> str:
    return f"UINT64_C({n & _mask(64)})"


class CGen:
    def __init__(self, prog: Program) -> None:
        self.prog = prog
        self.out: list[str] = []
        self.tmp_n = 0
        # flat field numbering: F[fidx[(header id, position)]]
        self.fidx: dict[tuple[int, int], int] = {}
        n = 0
        for h in prog.headers:
            for pos in range(len(h.htype.fields)):
                self.fidx[(h.id, pos)] = n
                n += 1
        self.nfields = n
        sm = prog.header_by_name.get("standard_metadata")
        if sm is None:
            raise Unsupported("the program has no standard_metadata")
        self.sm = sm
        self.table_ids = {name: i for i, name in enumerate(prog.tables)}
        self.reg_ids = {name: i for i, name in enumerate(prog.registers)}
        self.ctr_ids = {
            name: i for i, (name, c) in enumerate((k, c) for k, c in prog.counters.items() if not c.is_direct)
        }
        self.ctr_names = [k for k, c in prog.counters.items() if not c.is_direct]
        self.calc_fns: dict[str, str] = {}
        self.hash_ids: dict[str, int] = {}  # calculations by a hash (not csum16): their parameter slot
        self.side: list[str] = []  # functions written while another is being written
        self.arg_widths: dict[int, int] = {}
        self.parser_loops = False
        self.guards: list[list[str]] = []  # run-time stack indices' range checks, innermost last
        self.pre: list[str] = []  # their index temporaries, emitted before the guarded code

    # ------------------------------------------------------------------ checks
    def check_program(self) -> None:
        p, j = self.prog, self.prog.json
        if p.unions or p.union_stacks:
            raise Unsupported("header unions")
        for st in p.stacks.values():
            ids = st.header_ids
            nf = len(st.htype.fields)
            if ids != list(range(ids[0], ids[0] + len(ids))) or any(
                nf and self.fidx[(h, 0)] != self.fidx[(ids[0], 0)] + k * nf for k, h in enumerate(ids)
            ):
                raise Unsupported(f"a header stack whose elements are not laid out in a row ({st.name})")
        if p.parse_vsets:
            raise Unsupported("parser value sets")
        if p.meters:
            raise Unsupported("meters")
        if p.action_profiles:
            raise Unsupported("action profiles or selectors")
        if j.get("extern_instances"):
            raise Unsupported("extern instances")
        for h in p.headers:
            for f in h.htype.fields:
                if f.width == 0:
                    raise Unsupported(f"a varbit field ({h.name}.{f.name})")
                if f.width > _MAX_WIDTH:
                    raise Unsupported(f"a field wider than 64 bits ({h.name}.{f.name}: {f.width})")
                if f.signed:
                    raise Unsupported(f"a signed field ({h.name}.{f.name})")
        for r in p.registers.values():
            if r.bitwidth > _MAX_WIDTH:
                raise Unsupported(f"a register wider than 64 bits ({r.name})")
        for t in p.tables.values():
            if t.support_timeout:
                raise Unsupported(f"idle timeouts (table {t.name})")
            if t.direct_meters:
                raise Unsupported(f"direct meters (table {t.name})")
            if t.action_profile:
                raise Unsupported(f"an action profile (table {t.name})")
            for k in t.keys:
                if k.match_type not in ("exact", "lpm", "ternary", "range", "optional", "valid"):
                    raise Unsupported(f"match kind {k.match_type} (table {t.name})")
        text = json.dumps(
            {k: v for k, v in j.items() if k not in ("header_types", "headers", "field_aliases")}
        )
        for f in _QUEUE_FIELDS:
            if f'["standard_metadata", "{f}"]' in text:
                raise Unsupported(f"standard_metadata.{f} (the traffic manager's fields)")

    # ------------------------------------------------------------------ helpers
    def emit(self, ind: int, line: str) -> None:
        self.out.append("    " * ind + line)

    def tmp(self, base: str = "t") -> str:
        self.tmp_n += 1
        return f"{base}{self.tmp_n}"

    def hdr(self, name: str) -> HeaderInst:
        h = self.prog.header_by_name.get(name)
        if h is None:
            raise Unsupported(f"unknown header '{name}'")
        return h

    def smf(self, name: str) -> str | None:
        """The C lvalue of a standard_metadata field, None when the program's has none."""
        pos = self.sm.htype.index.get(name)
        return None if pos is None else f"P->h.f[{self.fidx[(self.sm.id, pos)]}]"

    def err_code(self, name: str) -> int:
        return int(self.prog.errors.get(name, 0))

    def header_of(self, v: dict) -> HRef:
        """The header a reference names: a plain header, a stack element at a constant index, or
        one at a run-time index. The last is allowed where an index out of range has the Python
        engine's meaning (`guarded`): the whole primitive is skipped, a condition is false."""
        v = _unwrap(v)
        if v.get("type") == "header":
            return self.href(self.hdr(v["value"]))
        if v.get("type") == "expression" and v["value"].get("op") == "dereference_header_stack":
            e = v["value"]
            st = self.prog.stacks[e["left"]["value"]]
            idx = _unwrap(e["right"])
            if idx.get("type") == "hexstr":
                i = _hexint(idx["value"])
                if not 0 <= i < len(st.header_ids):
                    raise Unsupported("a header stack index out of range")
                return self.href(self.prog.headers[st.header_ids[i]])
            if not self.guards:
                raise Unsupported("a header stack indexed at run time outside an action or a condition")
            x = self.expr(idx)
            if not x.exact:
                raise Unsupported("a header stack index not known to fit 64 bits")
            ix = self.tmp("ix")
            self.pre.append(f"uint64_t {ix} = {x.code};")
            self.guards[-1].append(f"{ix} < {len(st.header_ids)}")
            nf, h0 = len(st.htype.fields), st.header_ids[0]
            f0 = self.fidx[(h0, 0)] if nf else 0
            return HRef(
                f"P->h.v[{h0} + {ix}]", [f"P->h.f[{f0} + {nf} * {ix} + {k}]" for k in range(nf)], st.htype
            )
        raise Unsupported(f"a reference to a computed header {json.dumps(v)[:60]}")

    def href(self, h: HeaderInst) -> HRef:
        return HRef(
            f"P->h.v[{h.id}]",
            [f"P->h.f[{self.fidx[(h.id, k)]}]" for k in range(len(h.htype.fields))],
            h.htype,
        )

    def guarded(self, ind: int, emit_body: Any) -> None:
        """Run `emit_body(ind)`; if it indexed a stack at run time, its index temporaries come first
        and the body runs only when every index is in range (the Python engine skips the primitive)."""
        saved_out, saved_pre = self.out, self.pre
        self.out, self.pre = [], []
        self.guards.append([])
        try:
            emit_body(ind + 1)
            body, pre, guards = self.out, self.pre, self.guards[-1]
        finally:
            self.guards.pop()
            self.out, self.pre = saved_out, saved_pre
        if not guards:
            self.out += [ln[4:] for ln in body]
            return
        self.emit(ind, "{")
        for ln in pre:
            self.emit(ind + 1, ln)
        self.emit(ind + 1, f"if ({' && '.join(guards)}) {{")
        self.out += ["    " + ln for ln in body]
        self.emit(ind + 1, "}")
        self.emit(ind, "}")

    def guarded_cond(self, v: Any) -> tuple[list[str], str]:
        """(index temporaries, C condition) of v, false when a run-time stack index in it is out of
        range (as the Python engine's _oob_cond)."""
        saved_pre = self.pre
        self.pre = []
        self.guards.append([])
        try:
            c = self.cond(v)
            pre, guards = self.pre, self.guards[-1]
        finally:
            self.guards.pop()
            self.pre = saved_pre
        return pre, (f"({' && '.join(guards)} && {c})" if guards else c)

    def stack_last(self, name: str) -> tuple[str, str, Any]:
        """(C expression of the element index, of its validity slot, the stack) for `stack.last`
        as the Python engine reads it: element next - 1, the last one while nothing was extracted."""
        st = self.prog.stacks[name]
        n = len(st.header_ids)
        i = f"(P->h.nx[{st.id}] ? P->h.nx[{st.id}] - 1 : {n - 1})"
        return i, f"P->h.v[{st.header_ids[0]} + {i}]", st

    def field_ref(self, v: dict) -> tuple[str, int, bool]:
        """(C lvalue, width, is a validity bit) of a field reference."""
        v = _unwrap(v)
        t = v.get("type")
        if t == "field":
            hname, fname = v["value"][0], v["value"][1]
            h = self.hdr(hname)
            if fname in ("$valid$", "_valid"):
                return f"P->h.v[{h.id}]", 1, True
            pos = h.htype.index.get(fname)
            if pos is None:
                raise Unsupported(f"header '{hname}' has no field '{fname}'")
            return f"P->h.f[{self.fidx[(h.id, pos)]}]", h.htype.fields[pos].width, False
        if t == "stack_field":
            i, vslot, st = self.stack_last(v["value"][0])
            fname = v["value"][1]
            if fname in ("$valid$", "_valid"):
                return vslot, 1, True
            pos = st.htype.index[fname]
            base = self.fidx[(st.header_ids[0], pos)]
            nf = len(st.htype.fields)
            return f"P->h.f[{base} + {nf} * {i}]", st.htype.fields[pos].width, False
        if t == "expression" and v["value"].get("op") == "access_field":
            e = v["value"]
            h = self.header_of(e["left"])
            pos = int(e["right"])
            return h.fields[pos], h.htype.fields[pos].width, False
        raise Unsupported(f"cannot assign to {json.dumps(v)[:80]}")

    # ------------------------------------------------------------------ expressions
    def expr(self, v: Any) -> CExpr:
        if v is None:
            raise Unsupported("a missing expression")
        v = _unwrap(v)
        t, val = v.get("type"), v.get("value")
        if t in ("field", "stack_field"):
            code, w, _ = self.field_ref(v)
            return CExpr(f"(uint64_t){code}" if w == 1 and code.startswith("P->h.v") else code, w)
        if t == "hexstr":
            n = _hexint(val)
            return CExpr(_lit(n), n.bit_length()) if n >= 0 else CExpr(_lit(n), None, True)
        if t == "bool":
            return CExpr("UINT64_C(1)" if val else "UINT64_C(0)", 1)
        if t == "runtime_data":
            k = int(val)
            return CExpr(f"A[{k}]", self.arg_widths.get(k, 64))
        if t == "local":  # as codegen.py reads it: the action's argument list
            return CExpr(f"A[{int(val)}]", 64)
        if t == "expression":
            return self.op_expr(val)
        if t == "register":
            name = val[0]
            r = self.reg_ids.get(name)
            if r is None:
                raise Unsupported(f"unknown register '{name}'")
            i = self.expr(val[1])
            if not i.exact:
                raise Unsupported("a register index whose value is not known to fit 64 bits")
            return CExpr(f"reg_get(D, {r}, {i.code})", self.prog.registers[name].bitwidth)
        raise Unsupported(f"value type '{t}'")

    def pywidth(self, v: Any) -> int | None:
        """The width codegen.py infers for a value (it decides how a select key or a checksum
        input is padded, so it must be the same here)."""
        v = _unwrap(v)
        t, val = v.get("type"), v.get("value")
        if t in ("field", "stack_field"):
            return self.field_ref(v)[1]
        if t == "hexstr":
            n = _hexint(val)
            return n.bit_length() if n >= 0 else None
        if t == "bool":
            return 1
        if t == "runtime_data":
            return self.arg_widths.get(int(val))
        if t == "register":
            return self.prog.registers[val[0]].bitwidth
        if t != "expression":
            return None
        op, left, right = val.get("op"), val.get("left"), val.get("right")
        if op in ("valid", "valid_union", "d2b", "b2d", "not", "==", "!=", "<", ">", "<=", ">=", "and", "or"):
            return 1
        if op == "?":
            a, b = self.pywidth(left), self.pywidth(right)
            return None if a is None or b is None else max(a, b)
        if op == "usat_cast":
            return _hexint(right["value"])
        if left is None or op in ("~", "two_comp_mod", "sat_cast"):
            return None
        a, b = self.pywidth(left), self.pywidth(right)
        if op == "&":
            return a if b is None else b if a is None else min(a, b)
        if op in ("|", "^"):
            return None if a is None or b is None else max(a, b)
        if op == ">>":
            return a
        if op in ("/", "%"):
            return None if a is None or b is None else (a if op == "/" else b)
        return None

    def cond(self, v: Any) -> str:
        """A C int expression: the boolean value of v."""
        e = self.expr(v)
        if not e.exact:
            raise Unsupported("a condition whose value is not known to fit 64 bits")
        return f"({e.code} != 0)"

    def op_expr(self, e: dict) -> CExpr:
        op = e.get("op")
        left, right = e.get("left"), e.get("right")
        if op == "valid":
            return CExpr(f"(uint64_t){self.header_of(right).valid}", 1)
        if op == "access_field":
            code, w, _ = self.field_ref({"type": "expression", "value": e})
            return CExpr(code, w)
        if op == "size_stack":  # the number of valid elements, as BMv2 counts them: next
            return CExpr(f"(uint64_t)P->h.nx[{self.prog.stacks[right['value']].id}]", 32)
        if op == "last_stack_index":
            sid = self.prog.stacks[right["value"]].id
            return CExpr(f"((uint64_t)P->h.nx[{sid}] - 1)", None, True)
        if op == "d2b":
            return CExpr(f"(uint64_t){self.cond(right)}", 1)
        if op == "b2d":
            return CExpr(f"(uint64_t){self.cond(right)}", 1)
        if op == "not":
            return CExpr(f"(uint64_t)(!{self.cond(right)})", 1)
        if op in ("and", "or"):
            a, b = self.cond(left), self.cond(right)
            return CExpr(f"(uint64_t)({a} {'&&' if op == 'and' else '||'} {b})", 1)
        if op == "?":
            pre, c = self.guarded_cond(e["cond"]) if self.guards else ([], self.cond(e["cond"]))
            self.pre += pre
            a, b = self.expr(left), self.expr(right)
            bits = None if a.bits is None or b.bits is None else max(a.bits, b.bits)
            return CExpr(f"({c} ? {a.code} : {b.code})", bits, a.neg or b.neg)
        if op == "~":
            r = self.expr(right)
            return CExpr(f"(~{r.code})", None, True)
        if op in ("-", "+") and left is None:
            r = self.expr(right)
            return CExpr(f"({op}{r.code})", None if op == "-" else r.bits, op == "-" or r.neg)
        if op in ("two_comp_mod", "sat_cast", "usat_cast"):
            raise Unsupported(f"signed arithmetic ({op})")
        if op in ("+", "-", "*", "&", "|", "^", "<<", ">>", "==", "!=", "<", ">", "<=", ">=", "/", "%"):
            a, b = self.expr(left), self.expr(right)
            return self.binop(op, a, b)
        raise Unsupported(f"expression operator '{op}'")

    def binop(self, op: str, a: CExpr, b: CExpr) -> CExpr:
        if op in ("==", "!=", "<", ">", "<=", ">="):
            if not (a.exact and b.exact):
                raise Unsupported(f"a comparison ({op}) of values not known to fit 64 bits")
            return CExpr(f"(uint64_t)({a.code} {op} {b.code})", 1)
        if op == "+":
            bits = None if a.bits is None or b.bits is None else max(a.bits, b.bits) + 1
            return CExpr(f"({a.code} + {b.code})", bits, a.neg or b.neg)
        if op == "-":
            return CExpr(f"({a.code} - {b.code})", None, True)
        if op == "*":
            bits = None if a.bits is None or b.bits is None else a.bits + b.bits
            return CExpr(f"({a.code} * {b.code})", bits, a.neg or b.neg)
        if op == "&":
            nonneg = [x.bits for x in (a, b) if not x.neg and x.bits is not None]
            if nonneg:
                return CExpr(f"({a.code} & {b.code})", min(nonneg))
            return CExpr(f"({a.code} & {b.code})", None, a.neg or b.neg)
        if op in ("|", "^"):
            if a.exact and b.exact:
                return CExpr(f"({a.code} {op} {b.code})", max(a.bits or 0, b.bits or 0))
            return CExpr(f"({a.code} {op} {b.code})", None, True)
        if op == "<<":
            if not b.exact:
                raise Unsupported("a shift by an amount not known to fit 64 bits")
            k = _const(b.code)
            bits = None if a.bits is None or k is None else a.bits + k
            return CExpr(f"shl64({a.code}, {b.code})", bits, a.neg)
        if op == ">>":
            if not (a.exact and b.exact):
                raise Unsupported("a right shift of a value not known to fit 64 bits")
            return CExpr(f"shr64({a.code}, {b.code})", a.bits)
        if op in ("/", "%"):
            if not (a.exact and b.exact):
                raise Unsupported(f"{op} of values not known to fit 64 bits")
            k = _const(b.code)
            if not k:
                raise Unsupported(f"{op} by a value that is not a nonzero constant")
            return CExpr(f"({a.code} {op} {b.code})", a.bits if op == "/" else b.bits)
        raise Unsupported(f"operator {op}")

    def store(self, ind: int, dst: dict, src: CExpr) -> None:
        target, w, validity = self.field_ref(dst)
        if validity:
            if not src.exact:
                raise Unsupported("a validity bit set from a value not known to fit 64 bits")
            self.emit(ind, f"{target} = ({src.code}) != 0;")
            return
        if (src.bits is not None and src.bits <= w and not src.neg) or w == 64:
            self.emit(ind, f"{target} = {src.code};")
        else:
            self.emit(ind, f"{target} = ({src.code}) & {_lit(_mask(w))};")

    # ------------------------------------------------------------------ primitives
    def primitive(self, ind: int, p: dict) -> None:
        op = p.get("op")
        ps = p.get("parameters", [])
        if op in ("assign", "modify_field"):
            self.store(ind, ps[0], self.expr(ps[1]))
        elif op in ("add_to_field", "subtract_from_field"):
            cur, val = self.expr(ps[0]), self.expr(ps[1])
            self.store(ind, ps[0], self.binop("+" if op == "add_to_field" else "-", cur, val))
        elif op == "assign_header":
            hd, hs = self.header_of(ps[0]), self.header_of(ps[1])
            if len(hd.fields) != len(hs.fields):
                raise Unsupported("a copy between headers of different types")
            for a, b in zip(hd.fields, hs.fields, strict=True):
                self.emit(ind, f"{a} = {b};")
            self.emit(ind, f"{hd.valid} = {hs.valid};")
        elif op in ("add_header", "remove_header"):
            self.emit(ind, f"{self.header_of(ps[0]).valid} = {1 if op == 'add_header' else 0};")
        elif op in ("push", "pop"):
            self.stack_shift(ind, self.prog.stacks[ps[0]["value"]], self.expr(ps[1]), op == "push")
        elif op == "assign_header_stack":
            d, src = self.prog.stacks[ps[0]["value"]], self.prog.stacks[ps[1]["value"]]
            for a, b in zip(d.header_ids, src.header_ids, strict=False):
                self.copy_header(ind, self.prog.headers[a], self.prog.headers[b])
            self.emit(ind, f"P->h.nx[{d.id}] = P->h.nx[{src.id}];")
        elif op in ("mark_to_drop", "drop"):
            es, mg = self.smf("egress_spec"), self.smf("mcast_grp")
            if es is not None:
                self.emit(ind, f"{es} = D->drop_port;")
            if mg is not None:
                self.emit(ind, f"{mg} = 0;")
        elif op == "exit":
            self.emit(ind, "return 1;")
        elif op in ("no_op", "_no_op"):
            pass
        elif op == "count":
            name = ps[0]["value"]
            c = self.ctr_ids.get(name)
            if c is None:
                raise Unsupported(f"count on counter '{name}'")
            i = self.expr(ps[1])
            if not i.exact:
                raise Unsupported("a counter index not known to fit 64 bits")
            iv = self.tmp("i")
            self.emit(ind, f"{{ uint64_t {iv} = {i.code};")
            self.emit(
                ind + 1,
                f"if ({iv} < (uint64_t)D->ct_n[{c}]) {{ D->ctp[{c}][{iv}] += 1; "
                f"D->ctb[{c}][{iv}] += P->plen; }} }}",
            )
        elif op == "register_read":
            name = ps[1]["value"]
            r = self.reg_ids.get(name)
            if r is None:
                raise Unsupported(f"register_read of '{name}'")
            i = self.expr(ps[2])
            if not i.exact:
                raise Unsupported("a register index not known to fit 64 bits")
            self.store(ind, ps[0], CExpr(f"reg_get(D, {r}, {i.code})", self.prog.registers[name].bitwidth))
        elif op == "register_write":
            name = ps[0]["value"]
            r = self.reg_ids.get(name)
            if r is None:
                raise Unsupported(f"register_write of '{name}'")
            i, v = self.expr(ps[1]), self.expr(ps[2])
            if not i.exact:
                raise Unsupported("a register index not known to fit 64 bits")
            w = self.prog.registers[name].bitwidth
            iv = self.tmp("i")
            self.emit(ind, f"{{ uint64_t {iv} = {i.code};")
            self.emit(
                ind + 1,
                f"if ({iv} < (uint64_t)D->reg_n[{r}]) D->reg[{r}][{iv}] = ({v.code}) & {_lit(_mask(w))}; }}",
            )
        elif op == "modify_field_with_hash_based_offset":
            base, size = self.expr(ps[1]), self.expr(ps[3])
            if not (base.exact and size.exact):
                raise Unsupported("a hash's base or size not known to fit 64 bits")
            fn = self.calc(ps[2]["value"])
            h, sz = self.tmp("h"), self.tmp("s")
            self.emit(ind, f"{{ uint64_t {h} = {fn}(D, P), {sz} = {size.code};")
            self.store(ind + 1, ps[0], CExpr(f"({base.code} + ({sz} ? {h} % {sz} : {h}))", None))
            self.emit(ind, "}")
        elif op in ("assert", "assume"):
            self.emit(ind, f"if (!{self.cond(ps[0])}) return {2 if op == 'assert' else 3};")
        else:
            raise Unsupported(f"primitive '{op}'")

    def copy_header(self, ind: int, hd: HeaderInst, hs: HeaderInst) -> None:
        nf = len(hd.htype.fields)
        if nf:
            self.emit(
                ind, f"memmove(&P->h.f[{self.fidx[(hd.id, 0)]}], &P->h.f[{self.fidx[(hs.id, 0)]}], {nf * 8});"
            )
        self.emit(ind, f"P->h.v[{hd.id}] = P->h.v[{hs.id}];")

    def stack_shift(self, ind: int, st: Any, n: CExpr, push: bool) -> None:
        """push_front(n) / pop_front(n) as the Python engine does them: elements move by n (their
        fields and validity), the ones left behind only turn invalid, and next moves within 0..size."""
        if not n.exact:
            raise Unsupported("a push or pop count not known to fit 64 bits")
        size, nf = len(st.header_ids), len(st.htype.fields)
        h0, f0 = st.header_ids[0], self.fidx[(st.header_ids[0], 0)] if nf else 0
        k = self.tmp("n")
        self.emit(ind, f"{{ uint64_t {k} = {n.code};")
        if push:
            self.emit(ind + 1, f"for (int i_ = {size - 1}; i_ >= 0; i_--) {{")
            self.emit(ind + 2, f"if ((uint64_t)i_ >= {k}) {{")
            src = f"i_ - (int){k}"
        else:
            self.emit(ind + 1, f"for (int i_ = 0; i_ < {size}; i_++) {{")
            self.emit(ind + 2, f"if ({k} < {size} && (uint64_t)i_ + {k} < {size}) {{")
            src = f"i_ + (int){k}"
        if nf:
            self.emit(
                ind + 3, f"memmove(&P->h.f[{f0} + {nf} * i_], &P->h.f[{f0} + {nf} * ({src})], {nf * 8});"
            )
        self.emit(ind + 3, f"P->h.v[{h0} + i_] = P->h.v[{h0} + {src}];")
        self.emit(ind + 2, f"}} else P->h.v[{h0} + i_] = 0;")
        self.emit(ind + 1, "}")
        nx = f"P->h.nx[{st.id}]"
        if push:
            self.emit(ind + 1, f"{nx} = {k} >= {size} - (uint64_t){nx} ? {size} : {nx} + (uint32_t){k}; }}")
        else:
            self.emit(ind + 1, f"{nx} = {k} >= (uint64_t){nx} ? 0 : {nx} - (uint32_t){k}; }}")

    # ------------------------------------------------------------------ actions
    def gen_actions(self) -> None:
        for a in self.prog.actions_by_id.values():
            self.arg_widths = {i: w for i, (_, w) in enumerate(a.params)}
            self.emit(0, f"/* action {a.name} */")
            self.emit(0, f"static int act_{a.id}(dp_t *D, pkt_t *P, const uint64_t *A) {{")
            self.emit(1, "(void)D; (void)A;")
            if any(p.get("op") in ("_jump", "_jump_if_zero") for p in a.primitives):
                self.jumping_body(a.primitives)
            else:
                for p in a.primitives:
                    self.guarded(1, lambda i, p=p: self.primitive(i, p))
            self.emit(1, "return 0;")
            self.emit(0, "}")
            self.emit(0, "")
        self.arg_widths = {}

    def jumping_body(self, prims: list[dict]) -> None:
        """BMv2's _jump/_jump_if_zero (absolute primitive offsets) as gotos; a backward jump (a P4
        loop) is bounded as codegen.py bounds it, so that no packet hangs the switch."""
        self.emit(1, "unsigned loops_ = 0; (void)loops_;")
        for k, p in enumerate(prims):
            self.emit(0, f"L{k}:;")
            op = p.get("op")
            if op not in ("_jump", "_jump_if_zero"):
                self.guarded(1, lambda i, p=p: self.primitive(i, p))
                continue
            target = _hexint(p["parameters"][-1]["value"])
            if not 0 <= target <= len(prims):
                raise Unsupported(f"a jump to {target} in an action of {len(prims)} primitives")
            pre, c = self.guarded_cond(p["parameters"][0]) if op == "_jump_if_zero" else ([], "0")
            bound = f" if (++loops_ > {MAX_ACTION_LOOPS}) return 4;" if target <= k else ""
            self.emit(1, "{")
            for ln in pre:
                self.emit(2, ln)
            self.emit(2, f"if (!{c}) {{{bound} goto L{target}; }}")
            self.emit(1, "}")
        self.emit(0, f"L{len(prims)}:;")

    # ------------------------------------------------------------------ parser
    def gen_parser(self) -> None:
        parser = self.prog.parser
        pe = self.smf("parser_error")
        self.emit(0, "static void parse(dp_t *D, pkt_t *P) {")
        self.emit(1, "(void)D;")
        self.emit(1, "const uint8_t *d = P->data; Py_ssize_t n = P->dlen, e = 0;")
        self.emit(1, "uint64_t err = 0;")
        if parser is None:
            self.emit(1, "(void)d; (void)n; (void)e; (void)err; return;")
            self.emit(0, "}")
            return
        states = parser.get("parse_states", [])
        # A parser with a loop counts its states as codegen.py does (after each state, the last
        # one included): past MAX_PARSER_STATES the packet gets ParserTimeout, so none hangs the switch.
        self.parser_loops = _has_cycle(states)
        self.emit(1, "unsigned long visits = 0; (void)visits;")
        self.arg_widths = {}
        init = parser.get("init_state")
        self.emit(1, f"goto {self.state_label(init)};")
        for st in states:
            self.emit(0, f"{self.state_label(st['name'])}:")
            for op in st.get("parser_ops", []):
                self.parser_op(1, op)
            self.transitions(1, st)
        self.emit(0, "S_accept:")
        self.emit(1, "P->off = e; (void)d; (void)n; return;")
        self.emit(0, "S_error:")
        self.emit(1, "P->off = e;")
        if pe is not None:
            self.emit(1, f"{pe} = err;")
        self.emit(1, "return;")
        self.emit(0, "}")
        self.emit(0, "")

    def state_label(self, name: str | None) -> str:
        if name is None:
            return "S_accept"
        idx = [s["name"] for s in (self.prog.parser or {}).get("parse_states", [])]
        if name not in idx:
            raise Unsupported(f"unknown parser state '{name}'")
        return f"S_{idx.index(name)}"

    def goto_state(self, nxt: str | None) -> str:
        label = self.state_label(nxt)
        if not self.parser_loops:
            return f"goto {label};"
        timeout = self.err_code("ParserTimeout")
        return f"{{ if (++visits > {MAX_PARSER_STATES}) {{ err = {timeout}; goto S_error; }} goto {label}; }}"

    def perr(self, ind: int, code: int | str) -> None:
        self.emit(ind, f"{{ err = {code}; goto S_error; }}")

    def parser_op(self, ind: int, op: dict) -> None:
        kind = op.get("op")
        ps = op.get("parameters", [])
        if kind == "extract":
            ref = ps[0]
            if ref.get("type") == "stack":
                st = self.prog.stacks[ref["value"]]
                ht, h0 = st.htype, st.header_ids[0]
                nf = len(ht.fields)
                fbase = self.fidx[(h0, 0)] if nf else 0
                i = self.tmp("x")
                self.emit(ind, f"uint32_t {i} = P->h.nx[{st.id}];")
                self.emit(ind, f"if ({i} >= {len(st.header_ids)})")
                self.perr(ind + 1, self.err_code("StackOutOfBounds"))
                slot, fslot = f"{h0} + {i}", lambda pos: f"{fbase} + {nf} * {i} + {pos}"
            elif ref.get("type") == "regular":
                h = self.hdr(ref["value"])
                ht, st = h.htype, None
                slot, fslot = str(h.id), lambda pos, h=h: str(self.fidx[(h.id, pos)])
            else:
                raise Unsupported(f"extract of a {ref.get('type')}")
            nbytes = (ht.total_width + 7) // 8
            self.emit(ind, f"if (e + {nbytes} > n)")
            self.perr(ind + 1, self.err_code("PacketTooShort"))
            bo = 0
            for pos, f in enumerate(ht.fields):
                self.emit(ind, f"P->h.f[{fslot(pos)}] = get_bits(d + e, {bo}, {f.width});")
                bo += f.width
            self.emit(ind, f"P->h.v[{slot}] = 1;")
            if st is not None:
                self.emit(ind, f"P->h.nx[{st.id}] = {i} + 1;")
            self.emit(ind, f"e += {nbytes};")
        elif kind == "set":
            self.store(ind, ps[0], self.expr(ps[1]))
        elif kind == "verify":
            c = self.cond(ps[0])
            code = self.expr(ps[1])
            self.emit(ind, f"if (!{c})")
            self.perr(ind + 1, code.code)
        elif kind == "primitive":
            for p in ps:
                if p.get("op") in ("exit", "assert", "assume"):
                    raise Unsupported(f"{p.get('op')} in a parser")
                self.primitive(ind, p)
        else:
            raise Unsupported(f"parser operation '{kind}'")

    def transitions(self, ind: int, st: dict) -> None:
        trans = st.get("transitions", [])
        if not trans:
            self.emit(ind, self.goto_state(None))
            return
        parts: list[tuple[str, int]] = []  # (C expression, byte-padded width)
        for kp in st.get("transition_key", []):
            t = kp.get("type")
            if t in ("field", "stack_field"):
                code, w, _ = self.field_ref(kp)
                parts.append((f"(uint64_t){code}", (w + 7) // 8 * 8))
            elif t == "expression":
                x = self.expr(kp)
                w = self.pywidth(kp) or 32  # codegen.py's width, so the key is split as it is there
                if w > 64:
                    raise Unsupported("a transition key part wider than 64 bits")
                parts.append((f"(({x.code}) & {_lit(_mask(w))})", (w + 7) // 8 * 8))
            else:
                raise Unsupported(f"a transition key of type {t}")
        keys = []
        for code, _w in parts:
            k = self.tmp("k")
            self.emit(ind, f"uint64_t {k} = {code}; (void){k};")
            keys.append(k)
        total = sum(w for _, w in parts)
        for tr in trans:
            nxt = tr.get("next_state")
            ttype = tr.get("type", "hexstr" if tr.get("value") not in (None, "default") else "default")
            if tr.get("value") == "default" or ttype == "default":
                self.emit(ind, self.goto_state(nxt))
                return
            if ttype != "hexstr":
                raise Unsupported(f"a transition of type {ttype}")
            v = _hexint(tr["value"])
            m = _hexint(tr["mask"]) if tr.get("mask") not in (None, "") else _mask(total)
            conds = []
            shift = total
            for k, (_, w) in zip(keys, parts, strict=True):
                shift -= w
                pv, pm = (v >> shift) & _mask(w), (m >> shift) & _mask(w)
                if pm == 0:
                    continue
                conds.append(
                    f"({k} & {_lit(pm)}) == {_lit(pv & pm)}" if pm != _mask(w) else f"{k} == {_lit(pv)}"
                )
            self.emit(ind, f"if ({' && '.join(conds) or '1'}) {self.goto_state(nxt)}")
        self.perr(ind, self.err_code("NoMatch"))

    # ------------------------------------------------------------------ checksums
    def calc(self, name: str) -> str:
        """A C function computing calculation `name`; its name."""
        if name in self.calc_fns:
            return self.calc_fns[name]
        c = self.prog.calculations.get(name)
        if c is None:
            raise Unsupported(f"unknown calculation '{name}'")
        algo = c.get("algo", "crc32")
        is_csum = algo in ("csum16", "cksum16")
        if not is_csum and algo not in (
            "crc16",
            "crc16_custom",
            "crc32",
            "crc32_custom",
            "crcCCITT",
            "xor16",
            "identity",
        ):
            raise Unsupported(f"hash algorithm {algo}")
        if not is_csum:  # its parameters come from the switch's state (set_crc*_parameters)
            self.hash_ids.setdefault(name, len(self.hash_ids))

        def finish(bits: str) -> str:  # a hash over the buffer (csum16 sums as it goes: below)
            return f"hash_bytes(&D->hashes[{self.hash_ids[name]}], b, ({bits} + 7) >> 3)"

        fn = f"calc_{len(self.calc_fns)}"
        self.calc_fns[name] = fn
        saved, self.out = self.out, []
        parts: list[tuple[str, int, int | None]] = []  # (code, width, header id whose validity gates it)
        for x in c.get("input", []):
            t = x.get("type")
            if t == "field":
                code, w, _ = self.field_ref(x)
                h = self.hdr(x["value"][0])
                parts.append((code, w, None if h.metadata else h.id))
            elif t == "header":
                h = self.hdr(x["value"])
                for pos, f in enumerate(h.htype.fields):
                    parts.append((f"P->h.f[{self.fidx[(h.id, pos)]}]", f.width, None if h.metadata else h.id))
            elif t == "hexstr":
                n = _hexint(x["value"])
                w = int(x.get("bitwidth", 0)) or max(8, n.bit_length())
                parts.append((_lit(n & _mask(w)), w, None))
            elif t == "expression":
                e = self.expr(x)
                w = int(x.get("bitwidth", 0)) or self.pywidth(x) or 32
                if w > 64:
                    raise Unsupported("a checksum input wider than 64 bits")
                parts.append((f"(({e.code}) & {_lit(_mask(w))})", w, None))
            elif t == "payload":
                continue  # below: the valid headers after the last one used, then the payload
            else:
                raise Unsupported(f"a calculation input of type {t}")
        nbytes = (sum(w for _, w, _ in parts) + 15) // 16 * 2 + 2
        self.emit(0, f"static uint64_t {fn}(dp_t *D, pkt_t *P) {{")
        self.emit(1, f"(void)D; uint8_t b[{nbytes}]; memset(b, 0, sizeof b);")
        # codegen.py skips the fields of invalid headers (as BMv2 does) unless an input is an
        # expression: then every field counts
        exprs = any(x.get("type") == "expression" for x in c.get("input", []))
        gated = not exprs and any(h is not None for _, _, h in parts)
        if any(x.get("type") == "payload" for x in c.get("input", [])):
            if exprs or not is_csum:
                raise Unsupported("a calculation over the payload with an expression or by a hash")
            self.payload_calc(parts)
        elif is_csum:  # word-aligned fields straight into the sum (runtime.c, csum_field)
            self.emit(1, "unsigned bo = 0, hi = 0; uint64_t s = 0;")
            for code, w, h in parts:
                put = f"csum_field(b, &hi, &s, bo, {w}, {code}); bo += {w};"
                self.emit(1, put if h is None or not gated else f"if (P->h.v[{h}]) {{ {put} }}")
            self.emit(1, "(void)P; return csum_finish(b, hi, s);")
        elif gated:
            self.emit(1, "unsigned bo = 0;")
            for code, w, h in parts:
                if h is None:
                    self.emit(1, f"put_bits(b, bo, {w}, {code}); bo += {w};")
                else:
                    self.emit(1, f"if (P->h.v[{h}]) {{ put_bits(b, bo, {w}, {code}); bo += {w}; }}")
            self.emit(1, f"return {finish('bo')};")
        else:
            bo = 0
            for code, w, _ in parts:
                self.emit(1, f"put_bits(b, {bo}, {w}, {code});")
                bo += w
            self.emit(1, f"(void)P; return {finish(str(bo))};")
        self.emit(0, "}")
        self.emit(0, "")
        self.side += self.out
        self.out = saved
        return fn

    def payload_calc(self, parts: list[tuple[str, int, int | None]]) -> None:
        """The body of a checksum over fields and the payload, as the Python engine's general
        calculation does it: the valid fields' bits padded to a byte, every valid header that the
        deparser emits after the last header used, then the unparsed payload."""
        order = [self.hdr(n) for n in (self.prog.deparser or {}).get("order", [])]
        used = {h for _, _, h in parts if h is not None}
        ids = [h.id for h in order]
        after = max((ids.index(h) for h in used if h in ids), default=-1)
        self.emit(1, "unsigned bo = 0;")
        for code, w, h in parts:
            if h is None:
                self.emit(1, f"put_bits(b, bo, {w}, {code}); bo += {w};")
            else:
                self.emit(1, f"if (P->h.v[{h}]) {{ put_bits(b, bo, {w}, {code}); bo += {w}; }}")
        self.emit(1, "uint64_t s = 0; size_t pos = 0;")
        self.emit(1, "csum_feed(&s, &pos, b, (bo + 7) >> 3);")
        for h in order[after + 1 :]:
            if not h.htype.fields:
                continue
            hb = (h.htype.total_width + 7) // 8
            self.emit(1, f"if (P->h.v[{h.id}]) {{")
            self.emit(2, f"uint8_t hb[{hb}]; memset(hb, 0, sizeof hb);")
            bo = 0
            for pos, f in enumerate(h.htype.fields):
                self.emit(2, f"put_bits(hb, {bo}, {f.width}, P->h.f[{self.fidx[(h.id, pos)]}]);")
                bo += f.width
            self.emit(2, "csum_feed(&s, &pos, hb, sizeof hb);")
            self.emit(1, "}")
        self.emit(
            1, "if (P->dlen > P->off) csum_feed(&s, &pos, P->data + P->off, (size_t)(P->dlen - P->off));"
        )
        self.emit(1, "return csum_fold(s);")

    def gen_checksums(self) -> None:
        verify, update = [], []
        for c in self.prog.checksums:
            fn = self.calc(c.get("calculation"))
            target, w, _ = self.field_ref({"type": "field", "value": c["target"]})
            cond = self.cond(c["if_cond"]) if c.get("if_cond") else "1"
            if c.get("verify", True):
                verify.append((fn, target, w, cond))
            if c.get("update", True):
                update.append((fn, target, w, cond))
        ce = self.smf("checksum_error")
        body_v, body_u = [], []
        for fn, target, w, cond in verify:
            if ce is None:
                continue
            body_v.append(f"    if ({cond} && ({fn}(D, P) & {_lit(_mask(w))}) != {target}) {ce} = 1;")
        for fn, target, w, cond in update:
            body_u.append(f"    if ({cond}) {target} = {fn}(D, P) & {_lit(_mask(w))};")
        self.emit(0, "static void verify_checksums(dp_t *D, pkt_t *P) {")
        self.emit(1, "(void)D; (void)P;")
        self.out += body_v
        self.emit(0, "}")
        self.emit(0, "static void update_checksums(dp_t *D, pkt_t *P) {")
        self.emit(1, "(void)D; (void)P;")
        self.out += body_u
        self.emit(0, "}")
        self.emit(0, "")

    # ------------------------------------------------------------------ controls
    def gen_pipeline(self, pname: str, pipe: dict) -> None:
        tables = {t["name"]: t for t in pipe.get("tables", [])}
        conds = {c["name"]: c for c in pipe.get("conditionals", [])}
        labels: dict[str, str] = {}
        for i, n in enumerate([*tables, *conds]):
            labels[n] = f"N{i}"

        def goto(n: str | None) -> str:
            if n is None:
                return "return;"
            if n not in labels:
                raise Unsupported(f"unknown node '{n}' in {pname}")
            return f"goto {labels[n]};"

        self.emit(0, f"static void pipe_{pname}(dp_t *D, pkt_t *P) {{")
        self.emit(1, "(void)D; (void)P;")
        self.emit(1, f"{goto(pipe.get('init_table'))}")
        for tname in tables:
            t = self.prog.tables[tname]
            self.emit(0, f"{labels[tname]}: /* table {tname} */")
            self.emit(1, "{")
            fixed = fixed_call(self.prog, t)
            if fixed is not None:
                aid, args, nxt = fixed
                argv = "{" + ", ".join(_lit(a) for a in args) + "}" if args else "{0}"
                self.emit(2, f"static const uint64_t a_[] = {argv};")
                self.emit(2, f"int r_ = act_{aid}(D, P, a_); if (r_) {{ P->stop = r_; return; }}")
                self.emit(2, goto(nxt))
                self.emit(1, "}")
                continue
            tid = self.table_ids[tname]
            self.emit(2, f"table_t *t_ = &D->tables[{tid}];")
            hit = "0"
            if t.keys:
                self.emit(2, f"uint64_t k_[{len(t.keys)}];")
                for i, k in enumerate(t.keys):
                    if k.match_type == "valid" or not isinstance(k.target, list):
                        h = self.hdr(k.target if isinstance(k.target, str) else k.target[0])
                        code = f"(uint64_t)P->h.v[{h.id}]"
                    else:
                        code, _, _ = self.field_ref({"type": "field", "value": k.target})
                    if k.mask is not None:
                        code = f"({code} & {_lit(k.mask)})"
                    self.emit(2, f"k_[{i}] = {code};")
                self.emit(2, "const ent_t *e_ = table_lookup(t_, k_);")
                self.emit(2, "int hit_ = e_ != NULL;")
                self.emit(2, "if (!hit_) e_ = &t_->dflt;")
                if t.with_counters:
                    self.emit(2, "else count_direct(e_->counter, P->plen);")
                hit = "hit_"
            else:
                self.emit(2, "const ent_t *e_ = &t_->dflt;")
            self.emit(2, "int r_ = 0;")
            self.emit(2, "switch (e_->action) {")
            names = dict(zip(t.action_ids, t.action_names, strict=False))
            for aid in names:
                self.emit(2, f"case {aid}: r_ = act_{aid}(D, P, e_->args); break;")
            self.emit(2, "default: break;")
            self.emit(2, "}")
            self.emit(2, "if (r_) { P->stop = r_; return; }")
            if t.hit_miss:
                self.emit(2, f"if ({hit}) {goto(t.next_tables.get('__HIT__'))}")
                self.emit(2, goto(t.next_tables.get("__MISS__")))
            else:
                self.emit(2, "switch (e_->action) {")
                for aid, aname in names.items():
                    nxt = t.next_tables.get(aname, t.base_default_next)
                    self.emit(2, f"case {aid}: {goto(nxt)}")
                self.emit(2, f"default: {goto(t.base_default_next)}")
                self.emit(2, "}")
            self.emit(1, "}")
        for cname, c in conds.items():
            self.emit(0, f"{labels[cname]}: /* {cname} */")
            pre, cc = self.guarded_cond(c["expression"])
            self.emit(1, "{")
            for ln in pre:
                self.emit(2, ln)
            self.emit(2, f"if ({cc}) {goto(c.get('true_next'))}")
            self.emit(1, "}")
            self.emit(1, goto(c.get("false_next")))
        self.emit(0, "}")
        self.emit(0, "")

    # ------------------------------------------------------------------ deparser
    def gen_deparser(self) -> None:
        order = [self.hdr(n) for n in (self.prog.deparser or {}).get("order", [])]
        order = [h for h in order if h.htype.fields]
        self.emit(0, "/* the packet's headers and payload out of `port` (0), or -1 on a Python error */")
        self.emit(0, "static int deparse(pkt_t *P, uint64_t port, sink_t *S) {")
        self.emit(1, "Py_ssize_t len = 0;")
        for h in order:
            self.emit(1, f"if (P->h.v[{h.id}]) len += {(h.htype.total_width + 7) // 8};")
        self.emit(1, "Py_ssize_t rest = P->dlen - P->off; if (rest < 0) rest = 0;")
        self.emit(1, "PyObject *obj;")
        self.emit(1, "uint8_t *o = out_room(S, len + rest, &obj);")
        self.emit(1, "if (o == NULL) return S->outs == NULL ? 0 : -1;")
        self.emit(1, "memset(o, 0, (size_t)len);")
        for h in order:
            self.emit(1, f"if (P->h.v[{h.id}]) {{")
            bo = 0
            for pos, f in enumerate(h.htype.fields):
                self.emit(2, f"put_bits(o, {bo}, {f.width}, P->h.f[{self.fidx[(h.id, pos)]}]);")
                bo += f.width
            self.emit(2, f"o += {(h.htype.total_width + 7) // 8};")
            self.emit(1, "}")
        self.emit(1, "if (rest) memcpy(o, P->data + P->off, (size_t)rest);")
        self.emit(1, "return out_done(S, port, len + rest, obj);")
        self.emit(0, "}")
        self.emit(0, "")

    # ------------------------------------------------------------------ the module
    def build(self, modname: str) -> NativeProgram:
        self.check_program()
        prog = self.prog
        maxkey = max((len(t.keys) for t in prog.tables.values()), default=0)
        maxargs = max((len(a.params) for a in prog.actions_by_id.values()), default=0)
        head = [
            "/* generated by p4kit (p4kit/switch/native/cgen.py) from a BMv2 JSON program */",
            f"#define NFIELDS {self.nfields}",
            f"#define NHEADERS {len(prog.headers)}",
            f"#define MAXKEY {maxkey}",
            f"#define MAXARGS {maxargs}",
            f"#define NTABLES {len(self.table_ids)}",
            f"#define NREGS {len(self.reg_ids)}",
            f"#define NCOUNTERS {len(self.ctr_ids)}",
            f"#define NSTACKS {max((st.id for st in prog.stacks.values()), default=-1) + 1}",
            "#define NHASHES HASHES_PLACEHOLDER",
            f"#define USES_TIME {int(uses_time(prog))}",
            RUNTIME_C,
            "",
            "static inline uint64_t reg_get(const dp_t *D, int r, uint64_t i) {",
            "    return i < (uint64_t)D->reg_n[r] ? D->reg[r][i] : 0;",
            "}",
            "",
        ]
        self.gen_init()
        self.gen_actions()
        self.gen_parser()
        self.gen_checksums()
        pipes = prog.json.get("pipelines", [])
        names = [p["name"] for p in pipes]
        if names[:2] != ["ingress", "egress"] and set(names) != {"ingress", "egress"}:
            raise Unsupported(f"pipelines {names}")
        for p in pipes:
            self.gen_pipeline(p["name"], p)
        self.gen_deparser()
        self.gen_run()
        self.gen_module(modname)
        head = [ln.replace("HASHES_PLACEHOLDER", str(len(self.hash_ids))) for ln in head]
        src = "\n".join(head + self.side + self.out) + "\n"
        kinds = {}
        for name, t in prog.tables.items():
            kinds[name] = _table_kind(t)
        return NativeProgram(
            source=src,
            name=modname,
            tables=list(self.table_ids),
            registers=list(self.reg_ids),
            counters=self.ctr_names,
            hashes=list(self.hash_ids),
            table_kinds=kinds,
        )

    def gen_init(self) -> None:
        self.emit(0, "static void init_headers(hdrs_t *h, uint64_t egress_spec_init) {")
        self.emit(1, "memset(h, 0, sizeof *h);")
        for h in self.prog.headers:
            if h.metadata:
                self.emit(1, f"h->v[{h.id}] = 1;")
        es = self.sm.htype.index.get("egress_spec")
        if es is not None:
            self.emit(1, f"h->f[{self.fidx[(self.sm.id, es)]}] = egress_spec_init;")
        self.emit(1, "(void)egress_spec_init;")
        self.emit(0, "}")
        self.emit(0, "")

    def gen_run(self) -> None:
        def sm(name: str) -> str | None:
            return self.smf(name)

        ip, pl, mg, es, ep = (
            sm("ingress_port"),
            sm("packet_length"),
            sm("mcast_grp"),
            sm("egress_spec"),
            sm("egress_port"),
        )
        igts, egts, rid, it = (
            sm("ingress_global_timestamp"),
            sm("egress_global_timestamp"),
            sm("egress_rid"),
            sm("instance_type"),
        )
        if es is None or ep is None:
            raise Unsupported("standard_metadata without egress_spec/egress_port")
        has_egress = any(p["name"] == "egress" for p in self.prog.json.get("pipelines", []))
        egress = "pipe_egress(D, P);" if has_egress else ""
        self.emit(0, "/* egress, checksum update and deparse of one copy; 0, or -1 on a Python error */")
        self.emit(0, "static int egress_out(dp_t *D, pkt_t *P, uint64_t port, sink_t *S) {")
        self.emit(1, "P->stop = 0;")
        self.emit(1, egress)
        self.emit(1, "if (P->stop > 1) return emit_drop(S, DROP_ASSERT, (uint64_t)P->stop);")
        self.emit(1, f"if ({es} == D->drop_port) return emit_drop(S, DROP_OUT, 0);")
        self.emit(1, "update_checksums(D, P);")
        self.emit(1, "return deparse(P, port, S);")
        self.emit(0, "}")
        self.emit(0, "")
        self.emit(
            0,
            "static int run(dp_t *D, pkt_t *P, uint64_t port, uint64_t now, sink_t *S) {",
        )
        self.emit(1, "memcpy(&P->h, &D->init, sizeof P->h);")
        self.emit(1, "P->off = 0; P->stop = 0;")
        if ip:
            self.emit(1, f"{ip} = port & 0x1FF;")
        if pl:
            self.emit(1, f"{pl} = P->plen;")
        if igts:
            self.emit(1, f"{igts} = now & UINT64_C(0xFFFFFFFFFFFF);")
        self.emit(1, "(void)now;")
        self.emit(1, "parse(D, P);")
        self.emit(1, "verify_checksums(D, P);")
        self.emit(1, "pipe_ingress(D, P);")
        self.emit(1, "if (P->stop > 1) return emit_drop(S, DROP_ASSERT, (uint64_t)P->stop);")
        if mg:
            self.emit(1, f"if ({mg}) {{")
            self.emit(2, f"uint64_t g = {mg};")
            self.emit(
                2, "if (g >= D->nmgrps || D->mgrps[g].n == 0) return emit_drop(S, DROP_NO_REPLICAS, g);"
            )
            self.emit(2, "const mgrp_t *m = &D->mgrps[g];")
            self.emit(2, "pkt_t R;")
            self.emit(2, "for (uint32_t k = 0; k < m->n; k++) {")
            self.emit(3, "pkt_t *Q = P;")
            self.emit(3, "if (k + 1 < m->n) { memcpy(&R, P, sizeof R); Q = &R; }")
            self.emit(3, "{ pkt_t *P = Q;")
            if rid:
                self.emit(4, f"{rid} = m->rid[k];")
            if it:
                self.emit(4, f"{it} = 5;")
            self.emit(4, f"{ep} = m->port[k]; {es} = 0;")
            if egts:
                self.emit(4, f"{egts} = now & UINT64_C(0xFFFFFFFFFFFF);")
            self.emit(4, "if (egress_out(D, P, m->port[k], S) < 0) return -1; }")
            self.emit(2, "}")
            self.emit(2, "return 0;")
            self.emit(1, "}")
        self.emit(1, f"uint64_t es = {es};")
        self.emit(1, "if (es == D->drop_port) return emit_drop(S, DROP_IN, 0);")
        self.emit(1, f"{ep} = es; {es} = 0;")
        if egts:
            self.emit(1, f"{egts} = now & UINT64_C(0xFFFFFFFFFFFF);")
        self.emit(1, "return egress_out(D, P, es, S);")
        self.emit(0, "}")
        self.emit(0, "")

    def gen_module(self, modname: str) -> None:
        # table kinds and key shapes, set once per data plane
        self.emit(0, "static void init_tables(dp_t *D) {")
        for name, tid in self.table_ids.items():
            t = self.prog.tables[name]
            kind = _table_kind(t)
            self.emit(1, f"D->tables[{tid}].kind = {kind}; D->tables[{tid}].nkeys = {len(t.keys)};")
            self.emit(1, f"D->tables[{tid}].dflt.action = -1;")
            lp = next((i for i, k in enumerate(t.keys) if k.match_type == "lpm"), -1)
            self.emit(1, f"D->tables[{tid}].lpm_pos = {lp};")
            for i, k in enumerate(t.keys):
                if k.match_type == "range":
                    self.emit(1, f"D->tables[{tid}].is_range[{i}] = 1;")
        self.emit(1, "(void)D;")
        self.emit(0, "}")
        self.emit(0, "")
        self.out.append(_MODULE_TAIL.replace("MODNAME", modname))


def uses_time(program: Program) -> bool:
    """Whether the program reads a timestamp anywhere: the clock is read once per batch then, and
    never otherwise."""
    skip = ("header_types", "headers", "field_aliases")
    return "global_timestamp" in str({k: v for k, v in program.json.items() if k not in skip})


def _table_kind(t: TableInfo) -> int:
    """The C lookup of the table: the kind of the Python structure set_table is handed (tables.py)."""
    return {"none": 0, "exact": 1, "lpm": 2, "list": 3}[TableState(t).kind]


def _const(code: str) -> int | None:
    if code.startswith("UINT64_C(") and code.endswith(")"):
        return int(code[9:-1])
    return None


_MODULE_TAIL = r"""
/* process_batch(port, frames, now_us) -> (outputs [(port, bytes)], drops [(code, value)]) */
static PyObject *py_process_batch(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    dp_t *D = (dp_t *)self;
    if (argc != 3 || !PyList_Check(argv[1])) {
        PyErr_SetString(PyExc_TypeError, "process_batch(port, frames: list[bytes], now_us)");
        return NULL;
    }
    uint64_t port, now;
    if (u64_of(argv[0], &port) < 0 || u64_of(argv[2], &now) < 0) return NULL;
    PyObject *frames = argv[1];
    PyObject *outs = PyList_New(0), *drops = PyList_New(0);
    if (outs == NULL || drops == NULL) goto fail;
    pkt_t P;
    sink_t S = {outs, drops, NULL, NULL, NULL, NULL};
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(frames); i++) {
        PyObject *fr = PyList_GET_ITEM(frames, i);
        if (!PyBytes_Check(fr)) {
            PyErr_SetString(PyExc_TypeError, "frames must be bytes");
            goto fail;
        }
        P.data = (const uint8_t *)PyBytes_AS_STRING(fr);
        P.dlen = PyBytes_GET_SIZE(fr);
        P.plen = (uint64_t)P.dlen;
        if (run(D, &P, port, now, &S) < 0) goto fail;
    }
    PyObject *r = PyTuple_Pack(2, outs, drops);
    Py_DECREF(outs);
    Py_DECREF(drops);
    return r;
fail:
    Py_XDECREF(outs);
    Py_XDECREF(drops);
    return NULL;
}

/* One frame through the pipeline for the native port loop (pipe_entry_t.run). */
static int pipe_run(void *dp, const uint8_t *data, int64_t len, uint64_t port, uint64_t now, sink_t *S) {
    pkt_t P;
    P.data = data;
    P.dlen = (Py_ssize_t)len;
    P.plen = (uint64_t)len;
    return run((dp_t *)dp, &P, port, now, S);
}

/* entry() -> a capsule of this data plane's pipe_entry_t; it holds a reference to the data plane */
static void entry_release(PyObject *cap) {
    PyObject *owner = (PyObject *)PyCapsule_GetContext(cap);
    Py_XDECREF(owner);
}

static PyObject *py_entry(PyObject *self, PyObject *unused) {
    (void)unused;
    dp_t *D = (dp_t *)self;
    D->entry.abi = PIPE_ABI;
    D->entry.run = pipe_run;
    D->entry.dp = D;
    D->entry.stale = &D->stale;
    D->entry.uses_time = USES_TIME;
    PyObject *cap = PyCapsule_New(&D->entry, PIPE_CAPSULE, entry_release);
    if (cap == NULL) return NULL;
    Py_INCREF(self);
    if (PyCapsule_SetContext(cap, self) < 0) {
        Py_DECREF(self);
        Py_DECREF(cap);
        return NULL;
    }
    return cap;
}

/* mark_stale(level): 1 the tables are owed a hand-over, 2 retired, 0 up to date */
static PyObject *py_mark_stale(PyObject *self, PyObject *arg) {
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred()) return NULL;
    dp_t *D = (dp_t *)self;
    if (v == 0 || v > D->stale) D->stale = (int)v;
    Py_RETURN_NONE;
}

static PyMethodDef dp_methods[] = {
    {"process_batch", (PyCFunction)(void (*)(void))py_process_batch, METH_FASTCALL, "run frames from one port"},
    {"entry", (PyCFunction)py_entry, METH_NOARGS, "the pipeline for the native port loop (a capsule)"},
    {"mark_stale", (PyCFunction)py_mark_stale, METH_O, "tables owed (1), retired (2), up to date (0)"},
    {"set_table", (PyCFunction)(void (*)(void))py_set_table, METH_FASTCALL, "replace a table's entries"},
    {"set_groups", (PyCFunction)py_set_groups, METH_O, "replace the multicast groups"},
    {"bind_arrays", (PyCFunction)(void (*)(void))py_bind_arrays, METH_FASTCALL, "register and counter cells"},
    {"configure", (PyCFunction)(void (*)(void))py_configure, METH_FASTCALL, "drop port, egress_spec init"},
    {"set_hash", (PyCFunction)(void (*)(void))py_set_hash, METH_FASTCALL, "a hash calculation's parameters"},
    {NULL, NULL, 0, NULL},
};

static PyObject *dp_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    (void)args; (void)kw;
    dp_t *D = (dp_t *)type->tp_alloc(type, 0);
    if (D == NULL) return NULL;
    init_tables(D);
    D->drop_port = 511;
    init_headers(&D->init, 0);
    return (PyObject *)D;
}

static PyTypeObject DataplaneType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "MODNAME.Dataplane",
    .tp_basicsize = sizeof(dp_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = dp_new,
    .tp_dealloc = dp_dealloc,
    .tp_methods = dp_methods,
    .tp_doc = "one switch's native data plane for this program",
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "MODNAME", NULL, -1, NULL, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_MODNAME(void) {
    if (PyType_Ready(&DataplaneType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (m == NULL) return NULL;
    Py_INCREF(&DataplaneType);
    if (PyModule_AddObject(m, "Dataplane", (PyObject *)&DataplaneType) < 0) {
        Py_DECREF(&DataplaneType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
"""
