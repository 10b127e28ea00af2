"""Statements inside actions (and inside the synthesized actions of control bodies) -> BMv2 primitives.

Why inline everything: BMv2 actions are flat lists of primitives with no calls, so nested action calls,
P4 functions and control-local helper code are expanded in place, their parameters bound to the callers'
storage (copy-in through temporaries where a value could change underneath).

Conditional code inside an action is *predicated*, as p4c's midend does for BMv2: the condition is saved
in a temporary and every assignment under it becomes `x = cond ? new : x`; a `return` under a condition
guards the rest of its body with the negated condition. Only when a branch holds something that cannot
be predicated (an extern call, a header operation, `exit`) does the back end fall back to BMv2's
`_jump_if_zero`/`_jump` primitives for that `if`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from p4kit.compiler import ast
from p4kit.compiler import types as T  # noqa: N812
from p4kit.compiler.backend import values as V  # noqa: N812
from p4kit.compiler.backend.aliasing import params_to_copy
from p4kit.compiler.backend.context import Ctx, Scope, source_info, unsupported
from p4kit.compiler.backend.expressions import ExprLowering, is_bool
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
from p4kit.compiler.backend.storage import (
    DynFieldLoc,
    DynHeaderLoc,
    FieldLoc,
    HeaderLoc,
    Loc,
    StackLoc,
    StructLoc,
    UnionLoc,
    ValueLoc,
    bits,
)
from p4kit.compiler.diagnostics import UnsupportedError

JSON = dict[str, Any]


class NeedJumps(UnsupportedError):
    """Raised inside a predicated branch that holds a statement which cannot be predicated. The
    enclosing `if` catches it and uses jumps instead; it only reaches the user when even that is
    impossible (an extern call after a conditional `return` in the same action)."""

    def __init__(self, op: str, node: ast.Node | None) -> None:
        super().__init__(f"conditional '{op}' in an action here", node.loc if node is not None else None)


@dataclass
class Frame:
    """One inlined action or function: where its `return`s jump to, where its result goes, under which
    condition it has already returned (`kill`) and whether it returned unconditionally (`dead`)."""

    returns: list[int] = field(default_factory=list)
    result: Loc | None = None
    kill: JSON | None = None
    dead: bool = False
    copy_out: list[tuple[Loc, Loc]] = field(default_factory=list)  # (argument, copy) of aliased params
    type_bindings: dict[str, T.Type] = field(default_factory=dict)  # a generic function's type arguments


def subst_type(t: T.Type, b: dict[str, T.Type]) -> T.Type:
    """`t` with the type variables named in `b` replaced (a generic function's locals and parameters
    get the types of the call being inlined, as p4c's SpecializeGenericFunctions gives them)."""
    if not b:
        return t
    if isinstance(t, T.TypeVar):
        return b.get(t.name, t)
    if isinstance(t, T.HeaderStackType):
        return T.HeaderStackType(subst_type(t.elem, b), t.size)
    if isinstance(t, T.TupleType):
        return T.TupleType([subst_type(e, b) for e in t.elems])
    if isinstance(t, T.StructLikeType) and t.type_args:
        args = tuple(subst_type(a, b) for a in t.type_args)
        fields = [T.StructField(f.name, subst_type(f.type, b), f.annotations) for f in t.fields]
        return type(t)(t.name, fields, t.decl, args)
    return t


def local_variables(node: Any) -> list[ast.VariableDecl]:
    """All variable declarations inside a statement tree (blocks, if branches, switch cases)."""
    out: list[ast.VariableDecl] = []
    if isinstance(node, ast.VariableDecl):
        out.append(node)
    elif isinstance(node, ast.BlockStatement):
        for s in node.stmts:
            out += local_variables(s)
    elif isinstance(node, ast.IfStatement):
        out += local_variables(node.then)
        if node.else_ is not None:
            out += local_variables(node.else_)
    elif isinstance(node, ast.SwitchStatement):
        for c in node.cases:
            if c.body is not None:
                out += local_variables(c.body)
    return out


def _target(p: JSON) -> int:
    return int(p["parameters"][-1]["value"], 16)


def drop_noop_jumps(prims: list[JSON]) -> list[JSON]:
    """Remove jumps to the very next primitive (left by a trailing `return`/`exit`), renumbering the
    other jumps, so straight-line actions stay as short as p4c makes them."""
    while True:
        dead = [
            i
            for i, p in enumerate(prims)
            if p["op"] in ("_jump", "_jump_if_zero") and _target(p) == i + 1 and p["op"] == "_jump"
        ]
        if not dead:
            return prims
        i = dead[0]
        out = prims[:i] + prims[i + 1 :]
        for p in out:
            if p["op"] in ("_jump", "_jump_if_zero") and _target(p) > i:
                p["parameters"][-1] = V.hexstr(_target(p) - 1)
        prims = out


def _struct_like(loc: Loc) -> bool:
    """A storage tree holding a struct: a StructLoc, or a metadata header made for a struct."""
    if isinstance(loc, StructLoc):
        return True
    return isinstance(loc, HeaderLoc) and isinstance(T.unwrap(loc.type), T.StructType)


def _has_calls(e: Any) -> bool:
    if isinstance(e, ast.MethodCallExpression):
        return True
    return any(
        isinstance(getattr(e, n, None), ast.Expression) and _has_calls(getattr(e, n))
        for n in ("expr", "left", "right", "cond", "then", "else_", "index")
    )


def calls_with_effects(e: Any) -> bool:
    """Whether evaluating `e` calls a function or an extern (which may change what `e`'s neighbours
    read), anywhere inside it, arguments and initializers included."""
    if isinstance(e, ast.MethodCallExpression):
        c = e.call
        if c is not None and c.kind in ("function", "extern_function", "extern_method"):
            return True
        return any(calls_with_effects(a) for a in (c.args if c is not None else []))
    if isinstance(e, ast.StructExpression):
        return any(calls_with_effects(f.value) for f in e.fields)
    if any(calls_with_effects(x) for x in getattr(e, "elems", None) or []):
        return True
    return any(
        isinstance(getattr(e, n, None), ast.Expression) and calls_with_effects(getattr(e, n))
        for n in ("expr", "left", "right", "cond", "then", "else_", "index")
    )


def mux_as_if(s: ast.AssignmentStatement) -> ast.IfStatement | None:
    """`x = c ? f() : g()` as `if (c) x = f(); else x = g();` when a branch calls something: P4
    evaluates only the branch the condition picks (p4c's side-effect ordering makes it an if), so the
    other branch's call must not run."""
    m = s.rhs
    if not isinstance(m, ast.Mux) or m.const_value is not None:
        return None
    if not any(calls_with_effects(x) for x in (m.cond, m.then, m.else_)):
        return None  # (a call in the condition: the if's condition evaluates `&&` and `||` lazily)
    then = ast.AssignmentStatement(s.lhs, m.then, loc=s.loc)
    else_ = ast.AssignmentStatement(s.lhs, m.else_, loc=s.loc)
    return ast.IfStatement(m.cond, then, else_, loc=s.loc)


def _bool(value: bool, like: ast.Expression) -> ast.BoolLiteral:
    b = ast.BoolLiteral(value, loc=like.loc)
    b.type = T.BoolType()
    b.const_value = value
    return b


def short_circuit_as_if(s: ast.AssignmentStatement) -> ast.IfStatement | None:
    """`x = a && f()` as `if (a) x = f(); else x = false;` (and `||` the other way round) when the
    right operand calls something: P4 evaluates it only when the left one does not decide."""
    e = s.rhs
    if not isinstance(e, ast.BinaryOp) or e.op not in ("&&", "||") or e.const_value is not None:
        return None
    if not calls_with_effects(e.right):
        return None
    rest = ast.AssignmentStatement(s.lhs, e.right, loc=s.loc)
    decided = ast.AssignmentStatement(s.lhs, _bool(e.op == "||", e), loc=s.loc)
    if e.op == "&&":
        return ast.IfStatement(e.left, rest, decided, loc=s.loc)
    return ast.IfStatement(e.left, decided, rest, loc=s.loc)


def as_if(s: ast.AssignmentStatement) -> ast.IfStatement | None:
    """An assignment whose right-hand side chooses what it evaluates (a `?:` or a short-circuit
    operator with a call on the side it may skip), as the if that evaluates only that."""
    return mux_as_if(s) or short_circuit_as_if(s)


def short_circuit_condition(s: ast.IfStatement) -> ast.IfStatement | None:
    """`if (a && f()) T else E` as `if (a) { if (f()) T else E } else E` (and `||` likewise) when the
    right operand calls something, so that it runs only when P4 evaluates it."""
    c = s.cond
    if isinstance(c, ast.UnaryOp) and c.op == "!" and c.const_value is None and calls_with_effects(c.expr):
        else_ = s.else_ if s.else_ is not None else ast.EmptyStatement(loc=s.loc)
        return ast.IfStatement(c.expr, else_, s.then, loc=s.loc)  # `if (!c) T else E`: if (c) E else T
    if not isinstance(c, ast.BinaryOp) or c.op not in ("&&", "||") or c.const_value is not None:
        return None
    if not calls_with_effects(c.right):
        return None
    inner = ast.IfStatement(c.right, s.then, s.else_, loc=s.loc)
    if c.op == "&&":
        return ast.IfStatement(c.left, inner, s.else_, loc=s.loc)
    return ast.IfStatement(c.left, s.then, inner, loc=s.loc)


def init_as_assignment(d: ast.VariableDecl) -> ast.AssignmentStatement:
    """`T x = e;` as the assignment `x = e;` (the declaration bound elsewhere)."""
    assert d.init is not None
    target = ast.PathExpression(d.name, loc=d.loc)
    target.decl = d  # type: ignore[attr-defined]
    target.type = d.type
    return ast.AssignmentStatement(target, d.init, loc=d.loc)


def lhs_runtime_indices(lhs: ast.Expression) -> list[ast.Expression]:
    """The run-time stack indices an assignment's target reads (`hs[n].f`: n), outermost last. P4
    evaluates the target before the right-hand side, so when the right-hand side calls something that
    may change n, n is read first (p4c's side-effect ordering saves it in a temporary)."""
    out: list[ast.Expression] = []
    e: Any = lhs
    while isinstance(e, (ast.Member, ast.Slice, ast.ArrayIndex)):
        if isinstance(e, ast.ArrayIndex):
            ix = e.index
            if ix.const_value is None and not calls_with_effects(ix):
                out.append(ix)
        e = e.expr
    out.reverse()
    return out


def _value_expr(loc: Loc, like: ast.Expression, scope: Scope) -> ast.Expression:
    """A synthetic expression that reads `loc` (used to re-read a saved switch selector)."""
    decl = ast.VariableDecl("switch_sel", ast.PrimTypeRef("int"), loc=like.loc)
    decl.type = like.type
    p = ast.PathExpression("switch_sel", loc=like.loc)
    p.decl = decl
    p.type = like.type
    scope.bind(decl, loc)
    return p


def arg(v: JSON) -> JSON:
    return V.wrap_expression(v)


@dataclass
class StmtLowering:
    """Appends primitives for statements to `prims`, within `scope`."""

    ctx: Ctx
    scope: Scope
    prims: list[JSON] = field(default_factory=list)
    frames: list[Frame] = field(default_factory=list)
    in_parser: bool = False
    # ?:, && and || as BMv2 expressions (both sides evaluated): the fallback in a parser state when
    # branching on them would need jumps there (see ParserLowering._lowered)
    eager: bool = False
    pred: JSON | None = None  # condition of the enclosing predicated branches
    jump_depth: int = 0  # > 0 inside an `if` lowered with jumps
    overrides: dict[int, Loc] | None = None  # see ExprLowering.overrides
    loops: list[tuple[list[int], list[int]]] = field(default_factory=list)  # (breaks, continues)
    # copy-outs of the enclosing sub-control applications, outermost first, run by an `exit`
    exit_hooks: list[Callable[[StmtLowering], None]] = field(default_factory=list)
    # calls already evaluated in the assignment being lowered, by node (see eval_call)
    call_memo: dict[int, Loc] | None = None

    def __post_init__(self) -> None:
        self.frames.append(Frame())

    @property
    def ex(self) -> ExprLowering:
        return ExprLowering(self.ctx, self.scope, self.eval_call, self.overrides)

    def guard(self) -> JSON | None:
        """The condition under which the current statement runs (None: always)."""
        g = self.pred
        for f in self.frames:
            if f.kill is not None:
                nk = V.expr("not", None, f.kill)
                g = nk if g is None else V.expr("and", g, nk)
        return g

    def emit(self, op: str, params: list[JSON], node: ast.Node | None = None, guarded: bool = False) -> int:
        if not guarded and self.guard() is not None:
            raise NeedJumps(op, node)
        prim: JSON = {"op": op, "parameters": params}
        si = source_info(node)
        if si is not None:
            prim["source_info"] = si
        self.prims.append(prim)
        return len(self.prims) - 1

    def finish(self) -> list[JSON]:
        """Patch the outermost frame's `return` jumps to the end of the action."""
        for i in self.frames[0].returns:
            self.prims[i]["parameters"][0] = V.hexstr(len(self.prims))
        self.frames[0].returns.clear()
        self.prims = drop_noop_jumps(self.prims)
        return self.prims

    # --- statements ---------------------------------------------------------------------------------
    def stmt(self, s: ast.Statement | ast.Declaration) -> None:
        if any(f.dead for f in self.frames):
            return  # after an unconditional return/exit: unreachable
        if isinstance(s, ast.BlockStatement):
            for x in s.stmts:
                self.stmt(x)
        elif isinstance(s, ast.AssignmentStatement) and not self.eager and (m := as_if(s)) is not None:
            self.stmt(m)
        elif isinstance(s, ast.AssignmentStatement):
            outer, self.call_memo = self.call_memo, {}
            saved = self.overrides
            try:
                self.prehoist([s.lhs, s.rhs], first=lhs_runtime_indices(s.lhs))
                if calls_with_effects(s.rhs):
                    self.freeze_indices(s.lhs, s)
                if isinstance(s.lhs, ast.Slice):
                    self.assign_slice(s.lhs, s.rhs, s)
                else:
                    self.assign(self.ex.loc(s.lhs), s.rhs, s)
            finally:
                self.call_memo = outer
                self.overrides = saved
        elif isinstance(s, ast.MethodCallStatement):
            saved = self.overrides
            try:
                if s.call.call is not None and s.call.call.kind != "builtin":
                    self.prehoist([], call=s.call.call)
                self.call(s.call)
            finally:
                self.overrides = saved
        elif isinstance(s, ast.VariableDecl):
            m = None if s.init is None or self.eager else as_if(init_as_assignment(s))
            if m is not None:
                self.declare(s, with_init=False)
                self.stmt(m)
            else:
                saved = self.overrides
                try:
                    self.prehoist([s.init] if s.init is not None else [])
                    self.declare(s)
                finally:
                    self.overrides = saved
        elif isinstance(s, ast.ConstDecl):
            self.scope.bind(s, ValueLoc(self.ex.const_json(s.const_value, s.type, s), s.type or T.IntType()))
        elif isinstance(s, ast.IfStatement):
            self.if_stmt(s)
        elif isinstance(s, ast.SwitchStatement):
            self.switch_stmt(s)
        elif isinstance(s, ast.ReturnStatement):
            frame = self.frames[-1]
            if s.expr is not None:
                if frame.result is None:
                    raise unsupported("return with a value here", s)
                saved = self.overrides
                try:
                    self.prehoist([s.expr])
                    self.assign(frame.result, s.expr, s)
                finally:
                    self.overrides = saved
            g = self.guard()
            if self.jump_depth:
                frame.returns.append(self.emit("_jump", [V.hexstr(0)], s, guarded=g is None))
            elif g is None:
                frame.dead = True
            else:
                frame.kill = g if frame.kill is None else V.expr("or", frame.kill, g)
        elif isinstance(s, ast.ExitStatement):
            for f in reversed(self.frames):  # exit still copies out, innermost call first
                self.copy_back(f, s)
            for hook in reversed(self.exit_hooks):  # then the enclosing controls' arguments
                hook(self)
            self.emit("exit", [], s)
            if self.jump_depth:
                self.frames[0].returns.append(self.emit("_jump", [V.hexstr(0)], s))
            else:
                for f in self.frames:
                    f.dead = True
        elif isinstance(s, ast.EmptyStatement):
            pass
        elif isinstance(s, (ast.ForStatement, ast.ForInStatement)):
            if not self.jump_depth:
                raise NeedJumps("for", s)  # loops need jumps: the whole action is redone with them
            self.loop(s)
        elif isinstance(s, (ast.BreakStatement, ast.ContinueStatement)):
            if not self.loops:
                raise unsupported(f"{type(s).__name__} outside a loop", s)
            which = self.loops[-1][0 if isinstance(s, ast.BreakStatement) else 1]
            which.append(self.emit("_jump", [V.hexstr(0)], s))
        else:
            raise unsupported(f"{type(s).__name__} inside an action", s)

    def concrete(self, t: T.Type) -> T.Type:
        """`t` with the type arguments of the generic functions being inlined filled in."""
        for f in reversed(self.frames):
            t = subst_type(t, f.type_bindings)
        return t

    def declare(self, d: ast.VariableDecl, with_init: bool = True) -> Loc:
        assert d.type is not None
        loc = self.scope.lookup(d)
        if loc is None:
            loc = self.ctx.layout.materialize(self._local_name(d.name), self.concrete(d.type))
            self.scope.bind(d, loc)
        if with_init and d.init is not None:
            self.assign(loc, d.init, d)
        return loc

    def _local_name(self, name: str) -> str:
        return f"{name}_0"  # p4c's habit; Layout.scalar makes it unique

    def if_stmt(self, s: ast.IfStatement) -> None:
        nested = short_circuit_condition(s)
        if nested is not None:
            self.if_stmt(nested)
            return
        saved = self.overrides
        try:
            self.prehoist([s.cond])
            self._if_stmt(s, self.ex.cond(s.cond))
        finally:
            self.overrides = saved

    def _if_stmt(self, s: ast.IfStatement, c: JSON) -> None:
        if c.get("type") == "bool":  # constant condition: keep only the branch taken
            if c["value"]:
                self.stmt(s.then)
            elif s.else_ is not None:
                self.stmt(s.else_)
            return
        if self.jump_depth:
            self.if_jumps(s, c)
            return
        mark = len(self.prims)
        outer = self.pred
        saved = [(f.kill, f.dead, list(f.returns)) for f in self.frames]
        try:
            tmp = self.ctx.temp(T.BoolType())
            self.emit("assign", [arg(tmp.json()), arg(V.b2d(c))], s, guarded=True)  # type: ignore[attr-defined]
            cg = V.d2b(tmp.json())  # type: ignore[attr-defined]
            self.pred = cg if outer is None else V.expr("and", outer, cg)
            self.stmt(s.then)
            if s.else_ is not None:
                ncg = V.expr("not", None, cg)
                self.pred = ncg if outer is None else V.expr("and", outer, ncg)
                self.stmt(s.else_)
        except NeedJumps:
            self.pred = outer
            del self.prims[mark:]
            for f, (kill, dead, rets) in zip(self.frames, saved, strict=True):
                f.kill, f.dead, f.returns = kill, dead, rets
            if self.guard() is not None:
                raise
            self.if_jumps(s, c)
            return
        finally:
            self.pred = outer

    def loop(self, s: ast.ForStatement | ast.ForInStatement) -> None:
        """A loop with jumps: [init] top: exit test; body; continue: updates; jump top; end."""
        breaks: list[int] = []
        continues: list[int] = []
        self.loops.append((breaks, continues))
        try:
            if isinstance(s, ast.ForInStatement):
                self._for_in(s, breaks, continues)
            else:
                for x in s.init:
                    self.stmt(x)
                top = len(self.prims)
                exit_jump = None
                if s.cond is not None:
                    saved = self.overrides
                    try:
                        self.prehoist([s.cond])  # on every test: a lazy operator's if runs again
                        c = self.ex.cond(s.cond)
                    finally:
                        self.overrides = saved
                    exit_jump = self.emit("_jump_if_zero", [arg(V.b2d(c)), V.hexstr(0)], s)
                self.stmt(s.body)
                self._patch(continues, len(self.prims))
                for u in s.updates:
                    self.stmt(u)
                self.emit("_jump", [V.hexstr(top)], s)
                if exit_jump is not None:
                    self.prims[exit_jump]["parameters"][1] = V.hexstr(len(self.prims))
        finally:
            self.loops.pop()
        self._patch(breaks, len(self.prims))

    def _for_in(self, s: ast.ForInStatement, breaks: list[int], continues: list[int]) -> None:
        coll = s.collection
        if isinstance(coll, ast.BinaryOp) and coll.op == "..":
            var = self.declare(s.var)
            assert isinstance(var, (FieldLoc, DynFieldLoc))
            hi = self.ex.value(coll.right)
            self.assign(var, coll.left, s)
            skip = self.emit("_jump_if_zero", [arg(V.b2d(V.expr("<=", var.json(), hi))), V.hexstr(0)], s)
            top = len(self.prims)
            self.stmt(s.body)
            self._patch(continues, len(self.prims))
            done = self.emit("_jump_if_zero", [arg(V.b2d(V.expr("!=", var.json(), hi))), V.hexstr(0)], s)
            width = bits(var.type)
            self.emit(
                "assign", [arg(var.json()), arg(V.truncate(V.expr("+", var.json(), V.hexstr(1)), width))], s
            )
            self.emit("_jump", [V.hexstr(top)], s)
            end = V.hexstr(len(self.prims))
            self.prims[skip]["parameters"][1] = end
            self.prims[done]["parameters"][1] = end
            return
        loc = self.ex.loc(coll)
        elems = (
            loc.elems
            if isinstance(loc, StackLoc)
            else list(loc.fields.values())
            if isinstance(loc, StructLoc)
            else None
        )
        if elems is None:
            raise unsupported("a for-in loop over this value", s)
        for elem in elems:  # a stack's size is static: unroll, binding the variable to each element
            self.scope.bind(s.var, elem)
            self.stmt(s.body)
            self._patch(continues, len(self.prims))
            continues.clear()

    def _patch(self, jumps: list[int], target: int) -> None:
        for i in jumps:
            self.prims[i]["parameters"][-1] = V.hexstr(target)
        jumps.clear()

    def if_jumps(self, s: ast.IfStatement, c: JSON) -> None:
        self.jump_depth += 1
        try:
            j = self.emit("_jump_if_zero", [arg(V.b2d(c)), V.hexstr(0)], s)
            self.stmt(s.then)
            if s.else_ is not None:
                k = self.emit("_jump", [V.hexstr(0)], s)
                self.prims[j]["parameters"][1] = V.hexstr(len(self.prims))
                self.stmt(s.else_)
                self.prims[k]["parameters"][0] = V.hexstr(len(self.prims))
            else:
                self.prims[j]["parameters"][1] = V.hexstr(len(self.prims))
        finally:
            self.jump_depth -= 1

    def switch_stmt(self, s: ast.SwitchStatement) -> None:
        """`switch (e)` on a value: the equivalent if/else chain (fall-through labels share a body)."""
        if isinstance(T.unwrap(s.expr.type), T.ActionEnumType):
            raise unsupported("switch on action_run inside an action", s)
        sel: ast.Expression = s.expr
        if not isinstance(sel, (ast.PathExpression, ast.Member)) or _has_calls(sel):
            tmp = self.ctx.temp(s.expr.type or T.BitsType(32))
            saved = self.overrides
            try:
                self.prehoist([s.expr])
                self.assign(tmp, s.expr, s)
            finally:
                self.overrides = saved
            sel = _value_expr(tmp, s.expr, self.scope)
        chain: list[tuple[ast.Expression | None, ast.BlockStatement]] = []
        pending: list[ast.Expression] = []
        for case in s.cases:
            pending.append(case.label)
            if case.body is None:
                continue
            if any(isinstance(lab, ast.DefaultExpression) for lab in pending):
                chain.append((None, case.body))
            else:
                test: ast.Expression | None = None
                for lab in pending:
                    eq = ast.BinaryOp("==", sel, lab, loc=lab.loc)
                    eq.type = T.BoolType()
                    if test is None:
                        test = eq
                    else:
                        test = ast.BinaryOp("||", test, eq, loc=lab.loc)
                        test.type = T.BoolType()
                chain.append((test, case.body))
            pending = []
        stmt: ast.Statement | None = None
        for test, body in reversed(chain):
            stmt = body if test is None else ast.IfStatement(test, body, stmt, loc=body.loc)
        if stmt is not None:
            self.stmt(stmt)

    # --- assignment ---------------------------------------------------------------------------------
    def assign(self, dst: Loc, src: ast.Expression, node: ast.Node) -> None:
        if isinstance(src, ast.DotsExpression):
            self.assign_default(dst, node)
            return
        if isinstance(dst, (FieldLoc, DynFieldLoc)):
            if isinstance(T.unwrap(dst.type), T.VarbitType):
                self.emit("assign_VL", [arg(dst.json()), arg(self.ex.loc(src).json())], node)  # type: ignore[attr-defined]
                return
            self.assign_value(dst, self.ex.value(src), node)
            return
        if isinstance(dst, ValueLoc):
            raise unsupported("assignment to a read-only value", node)
        if isinstance(src, ast.InvalidHeaderExpression):
            self.invalidate(dst, node)
            return
        if isinstance(src, (ast.StructExpression, ast.ListExpression)):
            self.assign_fields(dst, src, node)
            return
        self.copy(dst, self.ex.loc(src), node)

    def assign_value(self, dst: FieldLoc | DynFieldLoc, v: JSON, node: ast.Node | None) -> None:
        """`dst = v`, predicated (`dst = guard ? v : dst`) inside a conditional branch."""
        g = self.guard()
        if g is not None:
            v = V.expr("?", v, dst.json(), g)
        self.emit("assign", [arg(dst.json()), arg(v)], node, guarded=True)

    def assign_slice(self, lhs: ast.Slice, rhs: ast.Expression | JSON, node: ast.Node) -> None:
        """`x[hi:lo] = v`: x = (x & ~m) | ((v << lo) & m), with m the slice's bits (`rhs` an
        expression, or a data value already lowered)."""
        while isinstance(lhs.expr, ast.Slice):  # x[a:b][c:d] is x[b+c:b+d]
            inner = lhs.expr
            flat = ast.Slice(inner.expr, lhs.hi, lhs.lo, loc=lhs.loc)
            flat.hi_value, flat.lo_value = inner.lo_value + lhs.hi_value, inner.lo_value + lhs.lo_value
            flat.type = lhs.type
            lhs = flat
        dst = self.ex.loc(lhs.expr)
        if not isinstance(dst, (FieldLoc, DynFieldLoc)):
            raise unsupported("assignment to a slice of this value", node)
        self.assign_value(dst, self.slice_value(lhs, rhs), node)

    def slice_value(self, lhs: ast.Slice, rhs: ast.Expression | JSON) -> JSON:
        width = bits(lhs.expr.type) if lhs.expr.type is not None else lhs.hi_value + 1
        m = ((1 << (lhs.hi_value - lhs.lo_value + 1)) - 1) << lhs.lo_value
        keep = V.expr("&", self.ex.value(lhs.expr), V.hexstr(V.mask(width) & ~m, width))
        v = rhs if isinstance(rhs, dict) else self.ex.value(rhs)
        if lhs.lo_value:
            v = V.expr("<<", v, V.hexstr(lhs.lo_value))
        return V.expr("|", keep, V.expr("&", v, V.hexstr(m, width)))

    def declare_all(self, body: Any) -> None:
        """Bind every local variable of a block up front (the control lowering builds nodes back to
        front, so uses may be lowered before the declaration itself)."""
        for d in local_variables(body):
            if self.scope.lookup(d) is None:
                assert d.type is not None
                self.scope.bind(
                    d, self.ctx.layout.materialize(self._local_name(d.name), self.concrete(d.type))
                )

    def assign_fields(self, dst: Loc, src: ast.StructExpression | ast.ListExpression, node: ast.Node) -> None:
        """`x = {a, b}` / `x = T {f = a}`: field by field (a header also becomes valid, as in P4)."""
        names = self._field_names(dst, node)
        if isinstance(src, ast.StructExpression):
            pairs = [(f.name, f.value) for f in src.fields]
        else:
            pairs = list(zip(names, src.elems, strict=False))
        if isinstance(dst, (HeaderLoc, DynHeaderLoc)):
            self.emit("add_header", [arg(dst.json())], node)
        for name, value in pairs:
            self.assign(self.ex._member(dst, name, node), value, node)
        if src.dots:  # `{a = 1, ...}`: every field not given gets its default value
            given = {name for name, _ in pairs}
            for name in names:
                if name not in given:
                    self.assign_default(self.ex._member(dst, name, node), node)

    def assign_default(self, dst: Loc, node: ast.Node) -> None:
        """`dst = ...`: every P4 default value is stored as 0 here (0, false, NoError, an enum's first
        member); a header, union or stack becomes invalid, except a field of a header that `{...}`
        makes valid."""
        if isinstance(dst, (FieldLoc, DynFieldLoc)):
            if isinstance(T.unwrap(dst.type), T.VarbitType):
                return  # an empty varbit: nothing to store
            self.assign_value(dst, V.hexstr(0, bits(dst.type)), node)
        elif isinstance(dst, StructLoc):
            for sub in dst.fields.values():
                self.assign_default(sub, node)
        elif isinstance(dst, (HeaderLoc, DynHeaderLoc, UnionLoc)):
            self.invalidate(dst, node)
        elif isinstance(dst, StackLoc):
            for elem in dst.elems:
                self.invalidate(elem, node)
        else:
            raise unsupported("'...' for this value", node)

    def _field_names(self, dst: Loc, node: ast.Node) -> list[str]:
        t = T.unwrap(dst.type)
        if isinstance(t, T.StructLikeType):
            return [f.name for f in t.fields]
        if isinstance(t, T.TupleType):
            return [str(i) for i in range(len(t.elems))]
        raise unsupported("a list assigned to this value", node)

    def copy(self, dst: Loc, src: Loc, node: ast.Node) -> None:
        """Structured assignment between two storage trees."""
        if isinstance(dst, (HeaderLoc, DynHeaderLoc)) and isinstance(src, (HeaderLoc, DynHeaderLoc)):
            self.emit("assign_header", [arg(dst.json()), arg(src.json())], node)
        elif isinstance(dst, UnionLoc) and isinstance(src, UnionLoc):
            self.emit("assign_union", [dst.json(), src.json()], node)
        elif isinstance(dst, StackLoc) and isinstance(src, StackLoc):
            self.emit("assign_header_stack", [dst.json(), src.json()], node)
        elif _struct_like(dst) and _struct_like(src):
            # struct to struct; either side may be a metadata header standing for a struct, or a
            # struct flattened into a header's fields (`meta.saved = hdr.r.row`)
            for name, d in dst.fields.items():
                self.copy(d, src.fields[name], node)
        elif isinstance(dst, (FieldLoc, DynFieldLoc)) and isinstance(src, (FieldLoc, DynFieldLoc, ValueLoc)):
            self.assign_value(dst, src.json(), node)
        else:
            raise unsupported("assignment between these values", node)

    def invalidate(self, dst: Loc, node: ast.Node) -> None:
        if isinstance(dst, (HeaderLoc, DynHeaderLoc)):
            self.emit("remove_header", [arg(dst.json())], node)
        elif isinstance(dst, UnionLoc):
            for h in dst.members.values():
                self.emit("remove_header", [h.json()], node)
        else:
            raise unsupported("{#} assigned to this value", node)

    # --- calls --------------------------------------------------------------------------------------
    def call(self, mce: ast.MethodCallExpression, result: Loc | None = None) -> None:
        from p4kit.compiler.backend import externs

        c = mce.call
        if c is None:
            raise unsupported("an unresolved call", mce)
        if c.kind == "action":
            self.inline(c.decl, c, mce, None)
        elif c.kind == "function":
            if result is None and mce.type is not None and not isinstance(T.unwrap(mce.type), T.VoidType):
                result = self.ctx.temp(mce.type)  # a value-returning function called for its effects
            self.inline(c.decl, c, mce, result)
        elif c.kind == "builtin":
            self.builtin(c, mce)
        elif c.kind in ("extern_function", "extern_method"):
            outs = self._slice_out_args(c, mce)
            saved = list(c.args)
            try:
                for i, _, tmp_ref in outs:
                    c.args[i] = tmp_ref
                externs.lower_call(self, mce, result)
            finally:
                c.args[:] = saved
            for _, a, tmp_ref in outs:  # written back into the slices' bits after the call
                self.assign_slice(a, self.ex.value(tmp_ref), mce)
        else:
            raise unsupported(f"{c.kind.replace('_', ' ')} inside an action", mce)

    def _slice_out_args(
        self, c: ast.CallInfo, mce: ast.MethodCallExpression
    ) -> list[tuple[int, ast.Slice, ast.PathExpression]]:
        """Slices passed to an extern's out/inout parameters (`r.read(h.a[11:4], i)`): each gets a
        temporary the extern writes (copied in first for inout), as p4c's SideEffectOrdering does."""
        outs = []
        for i, a in enumerate(c.args):
            pinfo = c.params[i] if i < len(c.params) else None
            if not isinstance(a, ast.Slice) or pinfo is None or pinfo.direction not in ("out", "inout"):
                continue
            tmp = self.ctx.temp(a.type or T.BitsType(a.hi_value - a.lo_value + 1))
            decl = ast.VariableDecl(f"{pinfo.name}_slice", ast.PrimTypeRef("_", loc=a.loc), loc=a.loc)
            decl.type = a.type
            self.scope.bind(decl, tmp)
            ref = ast.PathExpression(decl.name, loc=a.loc, decl=decl, type=a.type)
            if pinfo.direction == "inout":
                self.assign(tmp, a, mce)
            outs.append((i, a, ref))
        return outs

    def prehoist(
        self,
        exprs: list[ast.Expression],
        first: list[ast.Expression] | None = None,
        call: ast.CallInfo | None = None,
    ) -> None:
        """Evaluate what must go first in a statement's expressions (`exprs`, and `call`'s arguments)
        into temporaries the statement then reads through `overrides`, in P4's order: a `?:`, `&&` or
        `||` with a call on a side it may skip runs as an if (only that side's calls run), operands read
        before a call to their right are copied, and calls run in their turn (see ordering.collect).
        Only when there is such a lazy operator or copy: calls alone already run in their order where
        the expression meets them. The caller restores `overrides` after the statement. With `eager`,
        nothing changes."""
        if self.eager:
            return
        items: list[Any] = []
        for e in exprs:
            collect(e, items)
        if call is not None:
            collect_args(call, items)
        items = once(items)
        done = self.overrides or {}
        if not any(isinstance(it, (Lazy, Snapshot)) and item_key(it) not in done for it in items):
            return
        new = dict(done)
        self.overrides = new
        for ix in first or []:  # an assignment's target is evaluated before its right-hand side
            if id(ix) not in new:
                tmp = self.ctx.temp(self.concrete(ix.type or T.BitsType(32)))
                self.assign(tmp, ix, ix)
                new[id(ix)] = tmp
        for it in items:
            k = item_key(it)
            if k in new:
                continue
            if isinstance(it, Snapshot):
                tmp = self.ctx.temp(self.concrete(item_type(it)))
                self.assign(tmp, it.expr, it.expr)
                new[k] = tmp
            elif isinstance(it, Lazy):
                tmp = self.ctx.temp(self.concrete(item_type(it)))
                self.stmt(lazy_as_if(temp_ref(self.scope, tmp, it.expr), it.expr))
                self.overrides = new  # (the if restores what it saw: this same dict)
                new[k] = tmp
            elif isinstance(it, ast.MethodCallExpression):
                new[k] = self.eval_call(it)
            # a table's hit/miss is the control lowering's (read through its hook)

    def freeze_indices(self, lhs: ast.Expression, node: ast.Node) -> None:
        """Read the target's run-time stack indices into temporaries before the right-hand side runs
        (see lhs_runtime_indices); the target then reads the temporaries (until `overrides` is reset)."""
        ixs = [ix for ix in lhs_runtime_indices(lhs) if not (self.overrides and id(ix) in self.overrides)]
        if not ixs:
            return
        frozen = dict(self.overrides or {})
        for ix in ixs:
            tmp = self.ctx.temp(ix.type or T.BitsType(32))
            self.assign(tmp, ix, node)
            frozen[id(ix)] = tmp
        self.overrides = frozen

    def eval_call(self, e: Any) -> Loc:
        """A call (or a table's apply result) used as a value: evaluated into a temporary first."""
        if isinstance(e, ast.MethodCallExpression) and e.call is not None:
            t = self.concrete(e.type or T.VoidType())
            if e.call.kind == "builtin" and e.call.name == "isValid":
                return ValueLoc(V.b2d(self.ex.cond(e)), T.BitsType(1))
            if e.call.kind in ("function", "extern_function", "extern_method"):
                # a compound assignment's target and its copy on the right share their calls
                # (`hs[f()].v += 1`): within one assignment a call node is evaluated once
                memo = self.call_memo
                if memo is not None and id(e) in memo:
                    return memo[id(e)]
                res = self.ctx.temp(t)
                self.call(e, res)
                if memo is not None:
                    memo[id(e)] = res
                return res
        raise unsupported("this call inside an expression", e)

    def builtin(self, c: ast.CallInfo, mce: ast.MethodCallExpression) -> None:
        assert c.obj is not None
        obj = self.ex.loc(c.obj)
        if c.name == "setValid":
            self.emit("add_header", [arg(obj.json())], mce)  # type: ignore[attr-defined]
        elif c.name == "setInvalid":
            self.emit("remove_header", [arg(obj.json())], mce)  # type: ignore[attr-defined]
        elif c.name in ("push_front", "pop_front"):
            a = c.args[0] if c.args else None
            n = a.const_value if a is not None else 1
            self.emit("push" if c.name == "push_front" else "pop", [obj.json(), V.hexstr(int(n))], mce)  # type: ignore[attr-defined]
        elif c.name == "isValid":
            pass
        else:
            raise unsupported(f"{c.name}() as a statement", mce)

    def bind_params(
        self,
        params: list[ast.Parameter],
        c: ast.CallInfo,
        node: ast.Node,
        scope: Scope,
        copies: set[int] = frozenset(),  # type: ignore[assignment]
        frame: Frame | None = None,
    ) -> None:
        """Bind a callee's parameters: out/inout to the argument's storage (or, for the indices in
        `copies`, to a copy made now and copied back by `frame`'s copy-out), in/directionless to a
        value (constants directly, anything else copied into a temporary first: copy-in semantics)."""
        bindings = dict(frame.type_bindings) if frame is not None else {}

        def typed(t: T.Type | None) -> T.Type | None:
            return self.concrete(subst_type(t, bindings)) if t is not None else None

        for i, p in enumerate(params):
            a = c.args[i] if i < len(c.args) else None
            ptype = typed(p.type)
            if a is None:
                a = p.default
            if a is None:
                if p.direction == "out":
                    scope.bind(p, self.ctx.layout.materialize(f"{p.name}_0", ptype or T.BitsType(1)))
                    continue
                raise unsupported(f"missing argument for {p.name}", node)
            if p.direction in ("out", "inout") and isinstance(a, ast.Slice) and frame is not None:
                # a slice as an out/inout argument: the callee works on a copy, written back into
                # the slice's bits on return (copy-in/copy-out, as P4 defines the call)
                tmp = self.ctx.layout.materialize(f"{p.name}_copy", ptype or typed(a.type) or T.BitsType(1))
                if p.direction == "inout":
                    self.assign(tmp, a, node)
                frame.copy_out.append((a, tmp))  # type: ignore[arg-type]
                scope.bind(p, tmp)
                continue
            if p.direction in ("out", "inout"):
                target = self.ex.loc(a)
                if i in copies and frame is not None:
                    tmp = self.ctx.layout.materialize(
                        f"{p.name}_copy", ptype or typed(a.type) or T.BitsType(1)
                    )
                    if p.direction == "inout":
                        self.copy(tmp, target, node)
                    frame.copy_out.append((target, tmp))
                    target = tmp
                scope.bind(p, target)
                continue
            pt = ptype or typed(a.type) or T.IntType()
            if a.const_value is not None or (
                isinstance(a, ast.Member) and a.kind in ("enum_member", "error_member")
            ):
                if isinstance(
                    T.unwrap(pt), (T.BitsType, T.BoolType, T.SerEnumType, T.IntType, T.ErrorType, T.EnumType)
                ):
                    v = self.ex.cond(a) if is_bool(pt) else self.ex.value(a)
                    scope.bind(p, ValueLoc(v, pt))
                    continue
            if isinstance(a, ast.PathExpression):
                loc = self.scope.lookup(a.decl)
                if isinstance(loc, ValueLoc) and loc.value.get("type") in ("runtime_data", "hexstr", "bool"):
                    scope.bind(p, loc)
                    continue
            if isinstance(T.unwrap(pt), (T.ExternType, T.StringType)) or isinstance(a, ast.StringLiteral):
                scope.bind(
                    p,
                    self.ex.loc(a)
                    if not isinstance(a, ast.StringLiteral)
                    else ValueLoc({"type": "string", "value": a.value}, pt),
                )
                continue
            tmp = self.ctx.layout.materialize(f"{p.name}_0", pt)
            self.assign(tmp, a, node)
            scope.bind(p, tmp)

    def inline(self, decl: Any, c: ast.CallInfo, node: ast.Node, result: Loc | None) -> None:
        if not isinstance(decl, (ast.ActionDecl, ast.FunctionDecl)):
            raise unsupported("a call to this kind of declaration", node)
        callee_scope = self.scope.child()
        frame = Frame(result=result, type_bindings=dict(getattr(c, "type_bindings", None) or {}))
        self.bind_params(decl.params, c, node, callee_scope, params_to_copy(decl, c.args), frame)
        saved = self.scope
        self.scope = callee_scope
        self.frames.append(frame)
        try:
            self.stmt(decl.body)
        finally:
            self.frames.pop()
            self.scope = saved
        for i in frame.returns:
            self.prims[i]["parameters"][0] = V.hexstr(len(self.prims))
        if not any(f.dead for f in self.frames):  # after an exit, the copies went out before it
            self.copy_back(frame, node)

    def copy_back(self, frame: Frame, node: ast.Node) -> None:
        """Copy-out of the parameters that were bound to copies, in parameter order (as P4 does:
        with two parameters on one argument, the last one's value stays)."""
        for target, tmp in frame.copy_out:
            if isinstance(target, ast.Slice):
                self.assign_slice(target, tmp.json(), node)  # type: ignore[attr-defined]
            else:
                self.copy(target, tmp, node)


def lower_body(ctx: Ctx, scope: Scope, fill: Any) -> tuple[StmtLowering, list[JSON]]:
    """Run `fill(sl)` to produce an action's primitives, predicating conditionals; when the action
    needs jumps somewhere predication cannot reach (an extern call after a conditional `return`),
    lower the whole body again with jumps throughout."""
    sl = StmtLowering(ctx, scope)
    try:
        fill(sl)
        return sl, sl.finish()
    except NeedJumps:
        sl = StmtLowering(ctx, scope, jump_depth=1)
        fill(sl)
        return sl, sl.finish()
