"""P4 parsers -> a BMv2 parser: states with parser_ops, transition keys and transitions.

What does not map one-to-one is split into extra states, as p4c's midend does: an `if` in a state ends
the state with a select on a temporary, and a sub-parser call ends it with a jump into the inlined
sub-parser's states, whose `accept` continues in a new state holding the rest. Select cases become
value/mask transitions over the byte-padded concatenation of the keys; ranges are expanded into
masks, because BMv2 parsers cannot match ranges.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from p4kit.compiler import ast
from p4kit.compiler import types as T  # noqa: N812
from p4kit.compiler.backend import values as V  # noqa: N812
from p4kit.compiler.backend.aliasing import root_decl
from p4kit.compiler.backend.bmv2json import NameSpace
from p4kit.compiler.backend.context import Ctx, Scope, cp_annotations, source_info, unsupported
from p4kit.compiler.backend.controls import InstanceLoc, bind_ctor_params, declare_locals
from p4kit.compiler.backend.expressions import ExprLowering
from p4kit.compiler.backend.ordering import (
    Lazy,
    Snapshot,
    collect,
    collect_args,
    item_key,
    item_type,
    lazy_as_if,
    once,
    temp_ref,
)
from p4kit.compiler.backend.statements import NeedJumps, StmtLowering, arg
from p4kit.compiler.backend.storage import (
    DynHeaderLoc,
    ExternLoc,
    FieldLoc,
    HeaderLoc,
    Loc,
    StackLoc,
    StructLoc,
    UnionLoc,
    ValueLoc,
    bits,
)
from p4kit.compiler.cpmodel import CPMatchField, CPValueSet

JSON = dict[str, Any]


@dataclass
class State:
    json: JSON

    @property
    def ops(self) -> list[JSON]:
        return self.json["parser_ops"]


@dataclass
class ParserLowering:
    ctx: Ctx
    states: list[JSON] = field(default_factory=list)
    names: NameSpace = field(default_factory=NameSpace)
    overrides: dict[int, Loc] = field(default_factory=dict)  # lookaheads computed into temporaries

    def _ex(self, scope: Scope) -> ExprLowering:
        return ExprLowering(self.ctx, scope, None, self.overrides)

    def _sl(self, scope: Scope, eager: bool = False) -> StmtLowering:
        return StmtLowering(self.ctx, scope, in_parser=True, overrides=self.overrides, eager=eager)

    def _lowered(self, cur: State, scope: Scope, fill: Any) -> None:
        """The primitives `fill(sl)` makes, appended to the state. Inside a function called here, a
        `?:`, `&&` or `||` with a call on a side it may skip is lowered as an if, predicated; when that
        would need jumps (an extern call in the branch), which a parser state cannot hold, it is lowered
        again evaluating both sides, as before."""
        sl = self._sl(scope)
        try:
            fill(sl)
            prims = sl.finish()
        except NeedJumps:
            prims = None
        if prims is None or any(p["op"] in ("_jump", "_jump_if_zero") for p in prims):
            sl = self._sl(scope, eager=True)
            fill(sl)
            prims = sl.finish()
        for p in prims:
            if p["op"] in ("_jump", "_jump_if_zero"):
                raise unsupported("control flow inside a function called from a parser", None)
            cur.ops.append({"op": "primitive", "parameters": [p]})

    def _hoist(self, exprs: list[Any], scope: Scope, cur: State) -> None:
        """Lookaheads inside larger expressions: BMv2 reads them only as a `set` source or a select
        key, so each is first `set` into a temporary that the expression then reads."""

        def walk(e: Any) -> None:
            if not isinstance(e, ast.Expression):
                return
            look = self._lookahead(e, scope)
            if look is not None:
                tmp = self.ctx.temp(e.type or T.BitsType(look["value"][1]))
                assert isinstance(tmp, FieldLoc)
                cur.ops.append({"op": "set", "parameters": [tmp.json(), look]})
                self.overrides[id(e)] = tmp
                return
            for name in ("expr", "left", "right", "cond", "then", "else_", "index"):
                walk(getattr(e, name, None))
            for x in getattr(e, "elems", None) or []:
                walk(x)
            if isinstance(e, ast.MethodCallExpression) and e.call is not None:
                for x in e.call.args:
                    walk(x)

        for e in exprs:
            walk(e)

    def parser(self, decl: ast.ParserDecl, scope: Scope) -> JSON:
        init = self.instance(decl, scope, None, top=True)
        j: JSON = {
            "name": "parser",
            "id": len(self.ctx.out.parsers),
            "init_state": init,
            "parse_states": self.states,
        }
        return j

    def instance(self, decl: ast.ParserDecl, scope: Scope, accept_next: str | None, top: bool = False) -> str:
        """Lower every state of one parser instance; returns the name of its start state."""
        inits = declare_locals(
            self.ctx, [d for d in decl.locals if not isinstance(d, ast.ValueSetDecl)], scope
        )
        for d in decl.locals:
            if isinstance(d, ast.ValueSetDecl):
                self._value_set(d, scope)
        prefix = "" if top else scope.prefix.replace(".", "_") + "_"
        names: dict[int, str] = {}
        for st in decl.states:
            names[id(st)] = self.names.fresh(prefix + st.name)
        self._state_names = getattr(self, "_state_names", {})
        self._state_names.update(names)
        start = next((st for st in decl.states if st.name == "start"), None)
        if start is None:
            raise unsupported("a parser without a start state", decl)
        entry = names[id(start)]
        for st in decl.states:
            cur = self._new_state(names[id(st)], st)
            if st is start:  # parser-local initializers run when the parser starts (as p4c moves them)
                for d in inits:
                    assert d.init is not None
                    cur, done = self._ordered_first([d.init], scope, cur, accept_next)
                    try:
                        self._assign(cur, scope.lookup(d), d.init, scope, d)  # type: ignore[arg-type]
                    finally:
                        for k in done:
                            self.overrides.pop(k, None)
            cur = self.components(st.components, scope, cur, accept_next)
            keys = list(st.transition.keys) if isinstance(st.transition, ast.SelectExpression) else []
            cur, done = self._ordered_first(keys, scope, cur, accept_next, calls=True)
            try:
                self.transition(cur, st.transition, scope, accept_next, st)
            finally:
                for k in done:
                    self.overrides.pop(k, None)
        return entry

    def _new_state(self, name: str, node: ast.Node | None) -> State:
        j: JSON = {
            "name": name,
            "id": self.ctx.out.next_state_id(),
            "parser_ops": [],
            "transitions": [],
            "transition_key": [],
        }
        si = source_info(node)
        if si:
            j["source_info"] = si
        self.states.append(j)
        return State(j)

    # --- state bodies -----------------------------------------------------------------------------
    def components(self, comps: list[Any], scope: Scope, cur: State, accept_next: str | None) -> State:
        for c in comps:
            if isinstance(c, ast.BlockStatement):
                cur = self.components(c.stmts, scope, cur, accept_next)
            elif isinstance(c, ast.IfStatement):
                cur = self._if(c, scope, cur, accept_next)
            elif (
                isinstance(c, ast.MethodCallStatement)
                and c.call.call is not None
                and c.call.call.kind == "parser_apply"
            ):
                cur, done = self._ordered_first([c.call.call], scope, cur, accept_next)
                try:
                    cur = self._subparser(c.call, scope, cur)
                finally:
                    for k in done:
                        self.overrides.pop(k, None)
            else:
                cur, done = self._ordered_first(_statement_exprs(c), scope, cur, accept_next)
                try:
                    self.op(c, scope, cur)
                finally:
                    for k in done:
                        self.overrides.pop(k, None)
        return cur

    def _ordered_first(
        self, exprs: list[Any], scope: Scope, cur: State, accept_next: str | None, calls: bool = False
    ) -> tuple[State, list[int]]:
        """When a statement's expressions hold a `?:`, `&&` or `||` with a call on a side P4 may skip,
        evaluate what must go first into temporaries (read through `overrides`), in P4's order: each
        lazy operator as an if (split into states, as p4c does with the if its side-effect ordering
        makes), the operands and calls before it in their turn. Returns the state to go on in and the
        overrides added (the caller drops them after the statement: a sub-parser instantiated twice
        lowers the same nodes again). With `calls` (a select's keys, which BMv2 reads as fields),
        calls alone are computed first too."""
        items: list[Any] = []
        for e in exprs:
            if isinstance(e, ast.CallInfo):
                collect_args(e, items)
            else:
                collect(e, items)
        items = [it for it in once(items) if item_key(it) not in self.overrides]
        if not any(
            isinstance(it, Lazy) or (calls and isinstance(it, ast.MethodCallExpression)) for it in items
        ):
            return cur, []
        done: list[int] = []
        for it in items:
            k = item_key(it)
            tmp = self.ctx.temp(item_type(it))
            if isinstance(it, Lazy):
                e = it.expr
                first = e.cond if isinstance(e, ast.Mux) else e.left
                if _has_call(first, self.overrides):  # its calls run before the branch
                    cur, more = self._ordered_call(first, scope, cur)
                    done += more
                cur = self._if(lazy_as_if(temp_ref(scope, tmp, e), e), scope, cur, accept_next)
            elif isinstance(it, (Snapshot, ast.MethodCallExpression)):
                x = it.expr if isinstance(it, Snapshot) else it
                self._assign(cur, tmp, x, scope, x)
            else:
                raise unsupported("a table's result in a parser", it)
            self.overrides[k] = tmp
            done.append(k)
        return cur, done

    def _ordered_call(self, e: ast.Expression, scope: Scope, cur: State) -> tuple[State, list[int]]:
        """`e` (the condition of a lazy operator, with calls in it) computed into a temporary first."""
        tmp = self.ctx.temp(e.type or T.BoolType())
        self._assign(cur, tmp, e, scope, e)
        self.overrides[id(e)] = tmp
        return cur, [id(e)]

    def _if(self, s: ast.IfStatement, scope: Scope, cur: State, accept_next: str | None) -> State:
        base = cur.json["name"]
        self._hoist([s.cond], scope, cur)
        ex = self._ex(scope)
        tmp = self.ctx.temp(T.BitsType(1))
        assert isinstance(tmp, FieldLoc)
        cur.ops.append({"op": "set", "parameters": [tmp.json(), arg(V.b2d(ex.cond(s.cond)))]})
        join = self._new_state(self.names.fresh(f"{base}_join"), s)
        then_st = self._new_state(self.names.fresh(f"{base}_true"), s.then)
        end = self.components([s.then], scope, then_st, accept_next)
        end.json["transitions"] = [_default(join.json["name"])]
        false_name = join.json["name"]
        if s.else_ is not None:
            else_st = self._new_state(self.names.fresh(f"{base}_false"), s.else_)
            end = self.components([s.else_], scope, else_st, accept_next)
            end.json["transitions"] = [_default(join.json["name"])]
            false_name = else_st.json["name"]
        cur.json["transition_key"] = [tmp.json()]
        cur.json["transitions"] = [
            {"type": "hexstr", "value": "0x01", "mask": None, "next_state": then_st.json["name"]},
            _default(false_name),
        ]
        return join

    def _subparser(self, mce: ast.MethodCallExpression, scope: Scope, cur: State) -> State:
        c = mce.call
        assert c is not None and c.obj is not None
        inst = self._ex(scope).loc(c.obj)
        if not isinstance(inst, InstanceLoc) or not isinstance(inst.decl, ast.ParserDecl):
            raise unsupported("apply() of this parser instance", mce)
        decl: ast.ParserDecl = inst.decl
        inner = Scope(parent=inst.scope, prefix=inst.name)
        bind_ctor_params(self.ctx, decl.ctor_params, inst.ctor_args, inner, inst.scope)
        ex = self._ex(scope)
        # out/inout arguments that are slices, or share storage with another one, get copies that
        # are written back (in parameter order) when the sub-parser accepts
        roots = [
            root_decl(c.args[i]) if i < len(c.args) and p.direction in ("out", "inout") else None
            for i, p in enumerate(decl.params)
        ]
        outs: list[tuple[ast.Expression, Loc]] = []
        for i, p in enumerate(decl.params):
            a = c.args[i] if i < len(c.args) else None
            if a is None:
                raise unsupported(f"missing argument for {p.name}", mce)
            shared = roots[i] is not None and any(j != i and roots[j] is roots[i] for j in range(len(roots)))
            if p.direction in ("out", "inout") and (isinstance(a, ast.Slice) or shared):
                tmp = self.ctx.layout.materialize(f"{p.name}_copy", p.type or a.type or T.BitsType(1))
                if p.direction == "inout":
                    self._assign(cur, tmp, a, scope, mce)
                inner.bind(p, tmp)
                outs.append((a, tmp))
                continue
            writes_back = any(q.direction in ("out", "inout") for q in decl.params)
            scalar = isinstance(T.unwrap(p.type or T.VoidType()), (T.BitsType, T.BoolType))
            if p.direction in ("out", "inout") or not isinstance(a.const_value, (int, bool)):
                if p.direction in ("in", "") and (
                    not isinstance(a, (ast.PathExpression, ast.Member, ast.ArrayIndex))
                    or (writes_back and scalar)
                ):  # copy-in: a computed value, or a field the sub-parser could change before reading it
                    tmp = self.ctx.layout.materialize(f"{p.name}_0", p.type or a.type or T.BitsType(32))
                    self._assign(cur, tmp, a, scope, mce)
                    inner.bind(p, tmp)
                else:
                    inner.bind(p, ex.loc(a))
            else:
                inner.bind(p, ValueLoc(ex.const_json(a.const_value, p.type, a), p.type or T.IntType()))
        join = self._new_state(self.names.fresh(f"{cur.json['name']}_cont"), mce)
        if outs:
            sl = self._sl(scope)
            for a, tmp in outs:
                if isinstance(a, ast.Slice):
                    sl.assign_slice(a, tmp.json(), mce)  # type: ignore[attr-defined]
                else:
                    sl.copy(sl.ex.loc(a), tmp, mce)
            self._primitives(join, sl)
        entry = self.instance(decl, inner, join.json["name"])
        cur.json["transitions"] = [_default(entry)]
        return join

    def op(self, s: Any, scope: Scope, cur: State) -> None:
        ex = self._ex(scope)
        if isinstance(s, ast.AssignmentStatement):
            self._assign(cur, ex.loc(s.lhs), s.rhs, scope, s)
        elif isinstance(s, ast.VariableDecl):
            assert s.type is not None
            loc = self.ctx.layout.materialize(f"{s.name}_0", s.type)
            scope.bind(s, loc)
            if s.init is not None:
                self._assign(cur, loc, s.init, scope, s)
        elif isinstance(s, ast.ConstDecl):
            if isinstance(s.const_value, (int, bool)):
                scope.bind(s, ValueLoc(ex.const_json(s.const_value, s.type, s), s.type or T.IntType()))
        elif isinstance(s, ast.MethodCallStatement):
            self._call(s.call, scope, cur)
        elif isinstance(s, ast.EmptyStatement):
            pass
        else:
            raise unsupported(f"{type(s).__name__} in a parser state", s)

    def _assign(self, cur: State, dst: Loc, rhs: ast.Expression, scope: Scope, node: ast.Node) -> None:
        if isinstance(dst, (StructLoc, HeaderLoc)) and _is_lookahead(rhs):
            self._lookahead_into(cur, dst, rhs)
            return
        look = self._lookahead(rhs, scope)
        if isinstance(dst, FieldLoc) and look is not None:
            cur.ops.append({"op": "set", "parameters": [dst.json(), look]})
            return
        self._hoist([rhs], scope, cur)
        if isinstance(dst, FieldLoc) and not _has_call(rhs, self.overrides):
            ex = self._ex(scope)
            cur.ops.append({"op": "set", "parameters": [dst.json(), arg(ex.value(rhs))]})
            return
        self._lowered(cur, scope, lambda sl: sl.assign(dst, rhs, node))

    def _primitives(self, cur: State, sl: StmtLowering) -> None:
        for p in sl.finish():
            if p["op"] in ("_jump", "_jump_if_zero"):
                raise unsupported("control flow inside a function called from a parser", None)
            cur.ops.append({"op": "primitive", "parameters": [p]})

    def _lookahead_into(self, cur: State, dst: StructLoc | HeaderLoc, rhs: ast.Expression) -> None:
        """`s = pkt.lookahead<S>()` for a struct or header S: each field is `set` from its slice of
        the upcoming bits (p4c expands it the same way); a header target becomes valid first."""
        if isinstance(dst, HeaderLoc):
            cur.ops.append(
                {"op": "primitive", "parameters": [{"op": "add_header", "parameters": [dst.json()]}]}
            )
        offset = 0
        for leaf in _leaves(dst):
            if not isinstance(leaf, FieldLoc):
                raise unsupported("a lookahead into a value with headers or stacks inside", rhs)
            width = bits(leaf.type)
            cur.ops.append(
                {"op": "set", "parameters": [leaf.json(), {"type": "lookahead", "value": [offset, width]}]}
            )
            offset += width

    def _lookahead(self, e: ast.Expression, scope: Scope) -> JSON | None:
        """`pkt.lookahead<T>()` (or a field of it) as BMv2's lookahead value [bit offset, width]."""
        offset = 0
        if isinstance(e, ast.Member) and e.kind == "field":
            t = T.unwrap(e.expr.type) if e.expr.type is not None else None
            if isinstance(t, (T.HeaderType, T.StructType)) and _is_lookahead(e.expr):
                for f in t.fields:
                    if f.name == e.member:
                        return {"type": "lookahead", "value": [offset, bits(f.type)]}
                    offset += bits(f.type)
            return None
        if isinstance(e, ast.Slice) and _is_lookahead(e.expr):
            w = bits(e.expr.type) if e.expr.type is not None else 0
            return {"type": "lookahead", "value": [w - 1 - e.hi_value, e.hi_value - e.lo_value + 1]}
        if _is_lookahead(e):
            t = e.type
            if t is not None and isinstance(T.unwrap(t), (T.BitsType, T.BoolType)):
                return {"type": "lookahead", "value": [0, bits(t)]}
        return None

    def _call(self, mce: ast.MethodCallExpression, scope: Scope, cur: State) -> None:
        c = mce.call
        assert c is not None
        if not (c.kind == "extern_method" and c.decl is not None and c.decl.name == "lookahead"):
            self._hoist(list(c.args), scope, cur)
        ex = self._ex(scope)
        if c.kind == "extern_method" and c.extern is not None and c.extern.name == "packet_in":
            m = c.decl.name
            if m == "extract":
                target = self._extract_target(c.args[0], scope, mce)
                if len(c.args) > 1 and c.args[1] is not None:
                    # p4c wraps the size once more, whatever its kind (field, hexstr or expression)
                    size = {"type": "expression", "value": ex.value(c.args[1])}
                    cur.ops.append({"op": "extract_VL", "parameters": [target, size]})
                else:
                    cur.ops.append({"op": "extract", "parameters": [target]})
                return
            if m == "advance":
                cur.ops.append({"op": "advance", "parameters": [ex.value(c.args[0])]})  # type: ignore[arg-type]
                return
            if m == "lookahead":
                # the value is unused, but the packet must still hold it: BMv2 reads it (as p4c's
                # temporary for it), so a packet too short for it is rejected with PacketTooShort
                width = bits(mce.type) if mce.type is not None else 0
                if width > 0:
                    tmp = self.ctx.temp(T.BitsType(width))
                    assert isinstance(tmp, FieldLoc)
                    look = {"type": "lookahead", "value": [0, width]}
                    cur.ops.append({"op": "set", "parameters": [tmp.json(), look]})
                return
            raise unsupported(f"packet_in.{m}", mce)
        if c.kind == "extern_function" and c.decl.name == "verify":
            cond, err = c.args[0], c.args[1]
            assert cond is not None and err is not None
            cur.ops.append({"op": "verify", "parameters": [ex.cond(cond), ex.value(err)]})
            return
        if c.kind == "extern_method" and c.extern is not None and c.extern.name == "value_set":
            raise unsupported("value_set methods", mce)
        self._lowered(cur, scope, lambda sl: sl.call(mce))

    def _extract_target(self, e: ast.Expression | None, scope: Scope, node: ast.Node) -> JSON:
        if e is None:
            raise unsupported("extract without a header", node)
        if isinstance(e, ast.Member) and e.kind == "stack_elem_prop" and e.member == "next":
            stack = self._ex(scope).loc(e.expr)
            if isinstance(stack, StackLoc) and not stack.is_union_stack:
                return {"type": "stack", "value": stack.name}
        if (
            isinstance(e, ast.Member)
            and e.kind == "field"
            and isinstance(e.expr, ast.Member)
            and e.expr.kind == "stack_elem_prop"
            and e.expr.member == "next"
        ):
            stack = self._ex(scope).loc(e.expr.expr)
            if isinstance(stack, StackLoc) and stack.is_union_stack:
                return {"type": "union_stack", "value": [stack.name, e.member]}
        loc = self._ex(scope).loc(e)
        if isinstance(loc, HeaderLoc):
            return {"type": "regular", "value": loc.name}
        if isinstance(loc, DynHeaderLoc):
            raise unsupported("extract into a stack element with a run-time index", node)
        if isinstance(loc, UnionLoc):
            raise unsupported("extract into a header union (extract one of its members)", node)
        raise unsupported("extract into this value", node)

    # --- transitions ------------------------------------------------------------------------------
    def transition(
        self, cur: State, t: ast.Expression | None, scope: Scope, accept_next: str | None, node: ast.Node
    ) -> None:
        if t is None:
            cur.json["transitions"] = [_default(None)]
            return
        if isinstance(t, ast.PathExpression):
            cur.json["transitions"] = [_default(self._target(t, accept_next))]
            return
        if not isinstance(t, ast.SelectExpression):
            raise unsupported("this transition", t)
        ex = self._ex(scope)
        keys: list[JSON] = []
        widths: list[int] = []
        for k in t.keys:
            kj, w = self._select_key(k, scope, cur, ex)
            keys.append(kj)
            widths.append(w)
        cur.json["transition_key"] = keys
        trans: list[JSON] = []
        for case in t.cases:
            nxt = self._target(case.state, accept_next)
            ks = case.keyset
            if isinstance(ks, ast.DefaultExpression):
                trans.append(_default(nxt))
                continue
            if isinstance(ks, ast.PathExpression) and isinstance(ks.decl, ast.ValueSetDecl):
                vs = scope.lookup(ks.decl)
                assert isinstance(vs, ExternLoc)
                trans.append({"type": "parse_vset", "value": vs.name, "mask": None, "next_state": nxt})
                continue
            parts = ks.elems if isinstance(ks, ast.ListExpression) and len(widths) > 1 else [ks]
            if len(parts) != len(widths):
                raise unsupported("a select case whose keyset does not match the keys", case)
            alts = [self._key_alternatives(p, w, ex) for p, w in zip(parts, widths, strict=True)]
            for combo in itertools.product(*alts):
                value = V.concat_padded([(v, w) for (v, _), w in zip(combo, widths, strict=True)])
                full = all(m == V.mask(w) for (_, m), w in zip(combo, widths, strict=True))
                mask = (
                    None
                    if full
                    else V.concat_padded([(m, w) for (_, m), w in zip(combo, widths, strict=True)])
                )
                trans.append({"type": "hexstr", "value": value, "mask": mask, "next_state": nxt})
        cur.json["transitions"] = trans

    def _target(self, p: ast.PathExpression, accept_next: str | None) -> str | None:
        if p.name == "accept" or (isinstance(p.decl, ast.ParserState) and p.decl.name == "accept"):
            return accept_next
        if p.name == "reject" or (isinstance(p.decl, ast.ParserState) and p.decl.name == "reject"):
            return None
        name = self._state_names.get(id(p.decl))
        if name is None:
            raise unsupported(f"transition to state {p.name}", p)
        return name

    def _select_key(self, k: ast.Expression, scope: Scope, cur: State, ex: ExprLowering) -> tuple[JSON, int]:
        look = self._lookahead(k, scope)
        if look is not None:
            return look, look["value"][1]
        t = k.type or T.BitsType(1)
        w = bits(t)
        if isinstance(k, (ast.PathExpression, ast.Member)) and not _has_call(k):
            if (
                isinstance(k, ast.Member)
                and k.kind == "field"
                and isinstance(k.expr, ast.Member)
                and k.expr.kind == "stack_elem_prop"
                and k.expr.member == "last"
            ):
                stack = ex.loc(k.expr.expr)
                if isinstance(stack, StackLoc):
                    return {"type": "stack_field", "value": [stack.name, k.member]}, w
            loc = ex.loc(k)
            if isinstance(loc, FieldLoc):
                return loc.json(), w
        self._hoist([k], scope, cur)
        tmp = self.ctx.temp(t)
        assert isinstance(tmp, FieldLoc)
        cur.ops.append({"op": "set", "parameters": [tmp.json(), arg(self._ex(scope).value(k))]})
        return tmp.json(), w

    def _key_alternatives(self, e: ast.Expression, w: int, ex: ExprLowering) -> list[tuple[int, int]]:
        full = V.mask(w)
        if isinstance(e, ast.DefaultExpression):
            return [(0, 0)]
        if isinstance(e, ast.BinaryOp) and e.op == "&&&":
            v, m = self._num(e.left, ex, w), self._num(e.right, ex, w)
            return [(v & m, m)]
        if isinstance(e, ast.BinaryOp) and e.op == "..":
            return V.range_to_masks(self._num(e.left, ex, w), self._num(e.right, ex, w), w)
        return [(self._num(e, ex, w), full)]

    def _num(self, e: ast.Expression, ex: ExprLowering, w: int) -> int:
        if isinstance(e.const_value, bool):
            return int(e.const_value)
        if isinstance(e.const_value, int):
            return e.const_value & V.mask(w)
        v = ex.value(e)
        if v.get("type") == "hexstr":
            return int(v["value"], 16) & V.mask(w)
        raise unsupported("a select case value that is not a constant", e)

    def _value_set(self, d: ast.ValueSetDecl, scope: Scope) -> None:
        name = scope.qualify(d)
        t = d.elem_type.resolved or T.BitsType(32)
        ut = T.unwrap(t)
        if isinstance(ut, T.StructLikeType):
            fields = [CPMatchField(f.name, bits(f.type), "exact") for f in ut.fields]
        else:
            fields = [CPMatchField("", bits(t), "exact")]
        self.ctx.out.parse_vsets.append(
            {
                "name": name,
                "id": len(self.ctx.out.parse_vsets),
                "compressed_bitwidth": bits(t),
                "max_size": d.size_value,
            }
        )
        self.ctx.cp.value_sets.append(CPValueSet(name, fields, d.size_value, cp_annotations(d.annotations)))
        scope.bind(d, ExternLoc(name, "value_set", t))


def _default(nxt: str | None) -> JSON:
    return {"type": "default", "value": None, "mask": None, "next_state": nxt}


def _is_lookahead(e: ast.Expression) -> bool:
    return (
        isinstance(e, ast.MethodCallExpression)
        and e.call is not None
        and e.call.kind == "extern_method"
        and e.call.decl is not None
        and e.call.decl.name == "lookahead"
    )


def _has_call(e: Any, done: dict[int, Loc] | None = None) -> bool:
    """Whether `e` calls something (other than isValid, and other than lookaheads already in `done`)."""
    if done and id(e) in done:
        return False
    if isinstance(e, ast.MethodCallExpression):
        c = e.call
        return not (c is not None and c.kind == "builtin" and c.name == "isValid")
    for name in ("expr", "left", "right", "cond", "then", "else_", "index"):
        sub = getattr(e, name, None)
        if isinstance(sub, ast.Expression) and _has_call(sub, done):
            return True
    return False


def _statement_exprs(s: Any) -> list[Any]:
    """The expressions a parser statement evaluates, in order (a call statement: its arguments)."""
    if isinstance(s, ast.AssignmentStatement):
        return [s.lhs, s.rhs]
    if isinstance(s, ast.VariableDecl):
        return [s.init] if s.init is not None else []
    if isinstance(s, ast.MethodCallStatement) and s.call.call is not None:
        return [s.call.call] if s.call.call.kind != "builtin" else []
    return []


def _leaves(loc: Loc) -> list[Loc]:
    """The scalar fields of a struct or header location, in declaration order."""
    if isinstance(loc, (StructLoc, HeaderLoc)):
        return [x for sub in loc.fields.values() for x in _leaves(sub)]
    return [loc]
