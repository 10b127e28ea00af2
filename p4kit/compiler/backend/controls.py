"""Control bodies -> a BMv2 pipeline graph (tables and conditionals linked by next pointers).

The graph is built backwards, continuation style: each statement is lowered knowing the name of the node
that follows it, so `if` becomes a conditional whose branches both continue there, `return` continues
at the end of the current control instance, and `exit` ends the pipeline. Runs of plain statements
(assignments, extern calls, ...) become one synthesized action applied by a keyless hidden table
("tbl_act"), a direct action call becomes "tbl_<action>" with a const default entry, as p4c does.
Nested control instances are inlined with their parameters bound to the caller's arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from p4kit.compiler import ast
from p4kit.compiler import types as T  # noqa: N812
from p4kit.compiler.backend import externs
from p4kit.compiler.backend import values as V  # noqa: N812
from p4kit.compiler.backend.aliasing import root_decl
from p4kit.compiler.backend.context import Ctx, Scope, source_info, unsupported
from p4kit.compiler.backend.expressions import ExprLowering
from p4kit.compiler.backend.ordering import (
    NOT_CHILDREN,
    Lazy,
    Snapshot,
    collect,
    collect_args,
    hoistable,
    item_type,
    lazy_as_if,
    once,
    temp_ref,
)
from p4kit.compiler.backend.statements import (
    StmtLowering,
    as_if,
    init_as_assignment,
    lhs_runtime_indices,
    lower_body,
    mux_as_if,
)
from p4kit.compiler.backend.storage import ActionLoc, FieldLoc, Loc, TableLoc, ValueLoc
from p4kit.compiler.backend.tables import TableBuilder, action_data, lower_action
from p4kit.compiler.cpmodel import CPActionRef, CPAnnotation, CPTable
from p4kit.compiler.diagnostics import CompileError

JSON = dict[str, Any]
Next = str | None


@dataclass(eq=False)
class InstanceLoc(Loc):
    """A control or parser instance declared inside a control/parser (inlined where applied)."""

    name: str
    decl: Any
    ctor_args: list[ast.Expression]
    scope: Scope
    type: T.Type = field(default_factory=T.VoidType)
    inner: Scope | None = None  # the instance's own scope, made on first apply (locals declared once)
    inits: list[Any] = field(default_factory=list)


def instance_decl(inst: ast.Instantiation | ast.ConstructorCallExpression) -> Any:
    t = inst.type
    if isinstance(t, (T.ControlType, T.ParserType)):
        return t.decl
    return None


def declare_locals(ctx: Ctx, locals_: list[ast.Declaration], scope: Scope) -> list[ast.VariableDecl]:
    """Bind a control's (or parser's) local declarations in `scope`; returns the variables whose
    initializers must run when the control starts."""
    inits: list[ast.VariableDecl] = []
    for d in locals_:
        if isinstance(d, ast.ActionDecl):
            scope.bind(d, ActionLoc(scope.qualify(d), d, T.VoidType(), scope))
        elif isinstance(d, ast.TableDecl):
            scope.bind(d, TableLoc(scope.qualify(d), d, T.VoidType(), scope))
        elif isinstance(d, ast.VariableDecl):
            assert d.type is not None
            scope.bind(d, ctx.layout.materialize(f"{scope.qualify(d)}", d.type))
            if d.init is not None:
                inits.append(d)
        elif isinstance(d, ast.ConstDecl):
            ex = ExprLowering(ctx, scope)
            if isinstance(d.const_value, (int, bool)):
                scope.bind(d, ValueLoc(ex.const_json(d.const_value, d.type, d), d.type or T.IntType()))
        elif isinstance(d, ast.Instantiation):
            if isinstance(d.type, T.ExternType):
                scope.bind(d, externs.declare_instance(ctx, d, scope))
            elif instance_decl(d) is not None:
                scope.bind(
                    d, InstanceLoc(scope.qualify(d), instance_decl(d), [a.value for a in d.args], scope)
                )
            else:
                raise unsupported(f"instantiation of {d.type}", d)
        elif isinstance(d, (ast.FunctionDecl, ast.ValueSetDecl)):
            pass  # functions are inlined at their calls; value sets handled by the parser lowering
        else:
            raise unsupported(f"local declaration {type(d).__name__}", d)
    return inits


def bind_ctor_params(
    ctx: Ctx, params: list[ast.Parameter], args: list[ast.Expression], scope: Scope, outer: Scope
) -> None:
    ex = ExprLowering(ctx, outer)
    for p, a in zip(params, args, strict=False):
        if isinstance(a.const_value, (int, bool)):
            scope.bind(p, ValueLoc(ex.const_json(a.const_value, p.type or a.type, a), p.type or T.IntType()))
        elif isinstance(a, ast.ConstructorCallExpression) and isinstance(a.type, T.ExternType):
            fake = ast.Instantiation(p.name, a.type_ref, a.args, loc=a.loc)
            fake.type = a.type
            scope.bind(p, externs.declare_instance(ctx, fake, scope))
        elif isinstance(a, ast.ConstructorCallExpression) and instance_decl(a) is not None:
            scope.bind(
                p, InstanceLoc(f"{scope.prefix}.{p.name}", instance_decl(a), [x.value for x in a.args], outer)
            )
        else:
            scope.bind(p, ex.loc(a))


@dataclass
class ControlLowering:
    """Builds one pipeline (ingress or egress)."""

    ctx: Ctx
    name: str
    tables: list[JSON] = field(default_factory=list)
    conditionals: list[JSON] = field(default_factory=list)
    profiles: list[JSON] = field(default_factory=list)
    builder: TableBuilder | None = None
    # copy-outs of the sub-control applications being lowered, outermost first: an `exit` inside
    # runs them (innermost first) before it stops, since P4 still copies out on exit
    exit_copy_outs: list[Callable[[StmtLowering], None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.builder = TableBuilder(self.ctx, self.profiles)

    def pipeline(self, decl: ast.ControlDecl, scope: Scope) -> JSON:
        init = self.instance(decl, scope, None)
        j: JSON = {"name": self.name, "id": len(self.ctx.out.pipelines)}
        si = source_info(decl)
        if si:
            j["source_info"] = si
        j.update(
            {
                "init_table": init,
                "tables": self.tables,
                "action_profiles": self.profiles,
                "conditionals": self.conditionals,
            }
        )
        return j

    def prepare(self, decl: ast.ControlDecl, scope: Scope) -> list[ast.VariableDecl]:
        """Declare a control instance's locals (once per instance, however often it is applied)."""
        inits = declare_locals(self.ctx, decl.locals, scope)
        StmtLowering(self.ctx, scope).declare_all(decl.body)
        return inits

    def instance(
        self, decl: ast.ControlDecl, scope: Scope, nxt: Next, inits: list[ast.VariableDecl] | None = None
    ) -> Next:
        if inits is None:
            inits = self.prepare(decl, scope)
        body: list[Any] = [
            ast.AssignmentStatement(ast.PathExpression(d.name, loc=d.loc), d.init, loc=d.loc) for d in inits
        ]  # type: ignore[arg-type]
        for d, s in zip(inits, body, strict=True):
            s.lhs.decl = d  # type: ignore[attr-defined]
            s.lhs.type = d.type  # type: ignore[attr-defined]
        return self.block(body + list(decl.body.stmts), scope, nxt, nxt)

    # --- statements -----------------------------------------------------------------------------
    def block(self, stmts: list[Any], scope: Scope, nxt: Next, ret: Next) -> Next:
        items = _flatten(stmts)
        i = len(items)
        cur = nxt
        while i > 0:
            if self._simple(items[i - 1]):
                j = i - 1
                while j > 0 and self._simple(items[j - 1]):
                    j -= 1
                group = items[j:i]
                cur = self.action_node(lambda sl, g=group: [sl.stmt(s) for s in g], scope, cur, group[0])
                i = j
            else:
                cur = self.compound(items[i - 1], scope, cur, ret)
                i -= 1
        return cur

    def _simple(self, s: Any) -> bool:
        if isinstance(s, (ast.ForStatement, ast.ForInStatement)):
            return not _applies_anything(s)  # a loop of plain statements runs inside one action
        if isinstance(s, (ast.AssignmentStatement, ast.VariableDecl, ast.ConstDecl, ast.EmptyStatement)):
            exprs = [s.lhs, s.rhs] if isinstance(s, ast.AssignmentStatement) else [getattr(s, "init", None)]
            return not any(hoistable(e) for e in exprs if e is not None)
        if isinstance(s, ast.MethodCallStatement):
            c = s.call.call
            if c is None:
                return False
            if c.kind in ("table_apply", "control_apply", "parser_apply"):
                return False
            if c.kind == "action":
                return False
            return not any(hoistable(a) for a in c.args if a is not None)
        return False

    def compound(self, s: Any, scope: Scope, nxt: Next, ret: Next) -> Next:
        if isinstance(s, ast.BlockStatement):
            return self.block(s.stmts, scope, nxt, ret)
        if isinstance(s, ast.ReturnStatement):
            return ret
        if isinstance(s, ast.ExitStatement):
            pending = list(self.exit_copy_outs)

            def exit_(sl: StmtLowering) -> None:
                for copy_out in reversed(pending):
                    copy_out(sl)
                sl.emit("exit", [], s)

            return self.action_node(exit_, scope, None, s, base="exit")
        if isinstance(s, ast.IfStatement):
            return self.if_stmt(s, scope, nxt, ret)
        if isinstance(s, ast.SwitchStatement):
            return self.switch_stmt(s, scope, nxt, ret)
        if isinstance(s, ast.MethodCallStatement):
            c = s.call.call
            assert c is not None
            if c.kind == "table_apply":
                return self.apply_table(s.call, scope, nxt)
            if c.kind == "control_apply":
                return self.apply_control(s.call, scope, nxt)
            if c.kind == "action":
                return self.direct_action(s.call, scope, nxt)
            return self.with_hoisted(
                [],
                scope,
                nxt,
                lambda hook, n, snaps=None: self.action_node(
                    lambda sl: sl.call(s.call), scope, n, s, hook=hook, overrides=snaps
                ),
                call=c,
            )
        if isinstance(s, ast.AssignmentStatement) and (m := mux_as_if(s)) is not None:
            return self.if_stmt(m, scope, nxt, ret)  # only the branch the condition picks runs
        if isinstance(s, ast.VariableDecl) and s.init is not None:
            if (m := as_if(init_as_assignment(s))) is not None:
                return self.if_stmt(m, scope, nxt, ret)  # declared with the control's locals
        if isinstance(s, ast.AssignmentStatement) and _short_circuit_with_effects(s.rhs):
            # `b = x && t.apply().hit`: evaluate as control flow so the right side may not run
            lhs = ExprLowering(self.ctx, scope).loc(s.lhs)
            set1 = self.action_node(lambda sl: sl.assign_value(lhs, V.b2d(V.boolean(True)), s), scope, nxt, s)  # type: ignore[arg-type]
            set0 = self.action_node(
                lambda sl: sl.assign_value(lhs, V.b2d(V.boolean(False)), s), scope, nxt, s
            )  # type: ignore[arg-type]
            return self.branch(s.rhs, scope, set1, set0)
        if isinstance(s, (ast.AssignmentStatement, ast.VariableDecl)):
            # P4 evaluates the left-hand side (e.g. a run-time index) before the right-hand side
            exprs = [s.lhs, s.rhs] if isinstance(s, ast.AssignmentStatement) else [s.init]
            first = lhs_runtime_indices(s.lhs) if isinstance(s, ast.AssignmentStatement) else []
            return self.with_hoisted(
                [e for e in exprs if e is not None],
                scope,
                nxt,
                lambda hook, n, snaps=None: self.action_node(
                    lambda sl: sl.stmt(s), scope, n, s, hook=hook, overrides=snaps
                ),
                first=first,
            )
        raise unsupported(f"{type(s).__name__} in a control body", s)

    # --- if / switch ----------------------------------------------------------------------------
    def if_stmt(self, s: ast.IfStatement, scope: Scope, nxt: Next, ret: Next) -> Next:
        if isinstance(s.cond.const_value, bool):  # folded condition: only the branch taken exists
            taken = s.then if s.cond.const_value else s.else_
            return self.block([taken], scope, nxt, ret) if taken is not None else nxt
        t_next = self.block([s.then], scope, nxt, ret)
        f_next = self.block([s.else_], scope, nxt, ret) if s.else_ is not None else nxt
        return self.branch(s.cond, scope, t_next, f_next)

    def branch(self, e: ast.Expression, scope: Scope, t_next: Next, f_next: Next) -> Next:
        """Nodes that continue at `t_next` when `e` holds, else at `f_next`.

        A plain condition is one BMv2 conditional. When `e` applies a table or calls something, `&&`,
        `||` and `!` become control flow, so the right operand is only evaluated (its table only
        applied) when P4's short-circuit rules say so; `t.apply().hit` becomes the table's
        __HIT__/__MISS__ next pointers."""
        if not hoistable(e):
            return self.conditional(e, scope, t_next, f_next, None)
        if isinstance(e, ast.UnaryOp) and e.op == "!":
            return self.branch(e.expr, scope, f_next, t_next)
        if isinstance(e, ast.BinaryOp) and e.op == "&&":
            return self.branch(e.left, scope, self.branch(e.right, scope, t_next, f_next), f_next)
        if isinstance(e, ast.BinaryOp) and e.op == "||":
            return self.branch(e.left, scope, t_next, self.branch(e.right, scope, t_next, f_next))
        hm = _hit_miss(e)
        if hm is not None:
            mce, member, negate = hm
            hit_first = (member == "hit") != negate
            hit_n, miss_n = (t_next, f_next) if hit_first else (f_next, t_next)
            # after the table, whatever path: the pipeline goes on at one of the two branches
            return self.apply_table(mce, scope, t_next, hit_miss=(hit_n, miss_n))
        return self.with_hoisted(
            [e],
            scope,
            None,
            lambda hook, _n, snaps=None: self.conditional(e, scope, t_next, f_next, hook, snaps),
        )

    def conditional(
        self,
        e: ast.Expression,
        scope: Scope,
        t_next: Next,
        f_next: Next,
        hook: Callable[[Any], Loc] | None,
        overrides: dict[int, Loc] | None = None,
    ) -> Next:
        cond = ExprLowering(self.ctx, scope, hook, overrides).cond(e)
        if cond.get("type") == "bool":
            return t_next if cond["value"] else f_next
        name = self.ctx.out.node_names.fresh(f"node_{len(self.ctx.out.node_names.used) + 1}")
        cj: JSON = {"name": name, "id": self.ctx.out.next_id("conditional")}
        si = source_info(e)
        if si:
            cj["source_info"] = si
        cj.update({"expression": cond, "true_next": t_next, "false_next": f_next})
        self.conditionals.append(cj)
        return name

    def switch_stmt(self, s: ast.SwitchStatement, scope: Scope, nxt: Next, ret: Next) -> Next:
        e = s.expr
        if isinstance(e, ast.Member) and e.kind == "apply_result" and e.member == "action_run":
            assert isinstance(e.expr, ast.MethodCallExpression)
            bodies: dict[int, Next] = {}
            default: Next = nxt
            pending: list[ast.Expression] = []
            targets: list[tuple[list[ast.Expression], ast.BlockStatement | None]] = []
            for case in s.cases:
                pending.append(case.label)
                if case.body is not None:
                    targets.append((pending, case.body))
                    pending = []
            if pending:
                targets.append((pending, None))
            for labels, body in targets:
                dest = self.block([body], scope, nxt, ret) if body is not None else nxt
                for lab in labels:
                    if isinstance(lab, ast.DefaultExpression):
                        default = dest
                    else:
                        bodies[id(getattr(lab, "decl", None))] = dest
            return self.apply_table(e.expr, scope, nxt, by_action=(bodies, default))
        # a switch on a value: a chain of conditionals, built back to front
        ex = ExprLowering(self.ctx, scope)
        groups: list[tuple[list[ast.Expression], ast.BlockStatement | None]] = []
        pending = []
        for case in s.cases:
            pending.append(case.label)
            if case.body is not None:
                groups.append((pending, case.body))
                pending = []
        default_next = nxt
        for labels, body in groups:
            if any(isinstance(lab, ast.DefaultExpression) for lab in labels):
                default_next = self.block([body], scope, nxt, ret)
        calls = hoistable(e)  # `switch (f(x))`: the call runs once, before the cases
        sel: JSON = {"type": "expression"} if calls else ex.value(e)
        pre: tuple[Loc, ast.Expression] | None = None
        if sel.get("type") == "expression":
            tmp = self.ctx.temp(e.type or T.BitsType(32))
            pre = (tmp, e)
            sel = tmp.json()  # type: ignore[attr-defined]
        cur = default_next
        for labels, body in reversed(groups):
            vals = [lab for lab in labels if not isinstance(lab, ast.DefaultExpression)]
            if not vals:
                continue
            test: JSON | None = None
            for lab in vals:
                t = V.expr("==", sel, ex.value(lab))
                test = t if test is None else V.expr("or", test, t)
            dest = self.block([body], scope, nxt, ret)
            name = self.ctx.out.node_names.fresh(f"node_{len(self.ctx.out.node_names.used) + 1}")
            self.conditionals.append(
                {
                    "name": name,
                    "id": self.ctx.out.next_id("conditional"),
                    "expression": test,
                    "true_next": dest,
                    "false_next": cur,
                }
            )
            cur = name
        if pre is not None:
            loc, pe = pre
            if calls:
                return self.with_hoisted(
                    [pe],
                    scope,
                    cur,
                    lambda hook, n, snaps=None: self.action_node(
                        lambda sl: sl.assign(loc, pe, s), scope, n, s, hook=hook, overrides=snaps
                    ),
                )
            cur = self.action_node(lambda sl: sl.assign(loc, pe, s), scope, cur, s)
        return cur

    # --- tables, controls, actions --------------------------------------------------------------
    def apply_table(
        self,
        mce: ast.MethodCallExpression,
        scope: Scope,
        nxt: Next,
        hit_miss: tuple[Next, Next] | None = None,
        by_action: tuple[dict[int, Next], Next] | None = None,
    ) -> Next:
        c = mce.call
        assert c is not None and c.obj is not None
        tloc = ExprLowering(self.ctx, scope).loc(c.obj)
        if not isinstance(tloc, TableLoc):
            raise unsupported("apply() of this object", mce)
        assert self.builder is not None
        self.builder.exit_hooks = list(self.exit_copy_outs)
        res = self.builder.build(tloc, mce)
        j = res.json
        j["base_default_next"] = nxt
        if hit_miss is not None:
            j["next_tables"] = {"__HIT__": hit_miss[0], "__MISS__": hit_miss[1]}
        elif by_action is not None:
            bodies, default = by_action
            nt = {}
            for decl_id, aname in res.action_names.items():
                nt[aname] = bodies.get(decl_id, default)
            j["next_tables"] = nt
        else:
            j["next_tables"] = {n: nxt for n in j["actions"]}
        self.tables.append(j)
        self.ctx.out.node_names.reserve(j["name"])
        cur: Next = j["name"]
        if res.pre and any(hoistable(e) for _, e in res.pre):
            # a key that calls something: each key's assignment lowered as a statement before the
            # table, so its calls run in order and a `?:`/`&&`/`||` in it evaluates only its side
            for loc, e in reversed(res.pre):
                key = ast.AssignmentStatement(temp_ref(tloc.scope, loc, e, "key"), e, loc=e.loc)
                cur = self.compound(key, tloc.scope, cur, cur)
        elif res.pre:
            pre = res.pre
            cur = self.action_node(
                lambda sl: [sl.assign(loc, e, mce) for loc, e in pre], tloc.scope, cur, mce
            )
        return cur

    def apply_control(self, mce: ast.MethodCallExpression, scope: Scope, nxt: Next) -> Next:
        c = mce.call
        assert c is not None and c.obj is not None
        inst = ExprLowering(self.ctx, scope).loc(c.obj)
        if not isinstance(inst, InstanceLoc) or not isinstance(inst.decl, ast.ControlDecl):
            raise unsupported("apply() of this control instance", mce)
        decl: ast.ControlDecl = inst.decl
        if decl.type_params:
            raise unsupported(
                f"a control with type parameters ({decl.name}<{', '.join(decl.type_params)}>)", mce
            )
        if inst.inner is None:
            inst.inner = Scope(parent=inst.scope, prefix=inst.name)
            bind_ctor_params(self.ctx, decl.ctor_params, inst.ctor_args, inst.inner, inst.scope)
            inst.inits = self.prepare(decl, inst.inner)
        inner = inst.inner
        copies: list[tuple[Loc, ast.Expression]] = []
        slice_outs: list[tuple[ast.Expression, Loc]] = []
        ex = ExprLowering(self.ctx, scope)
        # out/inout arguments on the same storage (`c.apply(hdr, hdr.ipv4)`) are copied in and out in
        # parameter order, so the last copy-out wins as P4's calling convention says
        roots = [
            root_decl(c.args[i]) if i < len(c.args) and p.direction in ("out", "inout") else None
            for i, p in enumerate(decl.params)
        ]
        shared = {
            i
            for i, r in enumerate(roots)
            if r is not None and any(j != i and roots[j] is r for j in range(len(roots)))
        }
        for i, p in enumerate(decl.params):
            a = c.args[i] if i < len(c.args) else None
            if a is None:
                a = p.default
            if a is None:
                if p.direction == "out":
                    inner.bind(p, self.ctx.layout.materialize(f"{p.name}_0", p.type or T.BitsType(1)))
                    continue
                raise unsupported(f"missing argument for {p.name}", mce)
            if p.direction in ("out", "inout") and (isinstance(a, ast.Slice) or i in shared):
                # a slice argument, or one sharing storage with another: the control works on a copy,
                # written back after it
                tmp = self.ctx.layout.materialize(f"{p.name}_copy", p.type or a.type or T.BitsType(1))
                inner.bind(p, tmp)
                if p.direction == "inout":
                    copies.append((tmp, a))
                slice_outs.append((a, tmp))
                continue
            writes_back = any(q.direction in ("out", "inout") for q in decl.params)
            if p.direction in ("out", "inout") or (
                isinstance(a, (ast.PathExpression, ast.Member, ast.ArrayIndex))
                and not (
                    writes_back and isinstance(T.unwrap(p.type or T.VoidType()), (T.BitsType, T.BoolType))
                )
            ):
                # by reference; an `in` scalar is copied (below) when the callee could change it
                # through another parameter before reading it (P4's copy-in semantics)
                inner.bind(p, ex.loc(a))
            elif isinstance(a.const_value, (int, bool)):
                inner.bind(
                    p, ValueLoc(ex.const_json(a.const_value, p.type or a.type, a), p.type or T.IntType())
                )
            else:
                tmp = self.ctx.layout.materialize(f"{p.name}_0", p.type or a.type or T.BitsType(32))
                inner.bind(p, tmp)
                copies.append((tmp, a))
        if slice_outs:
            outs = list(slice_outs)

            def copy_out(sl: StmtLowering) -> None:
                for a, tmp in outs:
                    if isinstance(a, ast.Slice):
                        sl.assign_slice(a, tmp.json(), mce)  # type: ignore[attr-defined]
                    else:
                        sl.copy(sl.ex.loc(a), tmp, mce)

            nxt = self.action_node(copy_out, scope, nxt, mce)

            def copy_out_at_exit(sl: StmtLowering) -> None:
                # runs inside the callee's lowering: the arguments are read in the caller's scope
                own = sl.scope
                sl.scope = scope
                try:
                    copy_out(sl)
                finally:
                    sl.scope = own

            self.exit_copy_outs.append(copy_out_at_exit)
        try:
            cur = self.instance(decl, inner, nxt, inst.inits)
        finally:
            if slice_outs:
                self.exit_copy_outs.pop()
        if copies and any(hoistable(e) for _, e in copies):
            # an argument that calls something: each copy-in lowered as an assignment, left to right,
            # so a `?:`/`&&`/`||` in it evaluates only its side (and a table in it is applied)
            for loc, e in reversed(copies):
                copy_in = ast.AssignmentStatement(temp_ref(scope, loc, e, "arg"), e, loc=e.loc)
                cur = self.compound(copy_in, scope, cur, cur)
        elif copies:
            cur = self.action_node(lambda sl: [sl.assign(loc, e, mce) for loc, e in copies], scope, cur, mce)
        return cur

    def direct_action(self, mce: ast.MethodCallExpression, scope: Scope, nxt: Next) -> Next:
        c = mce.call
        assert c is not None
        decl: ast.ActionDecl = c.decl
        aloc = scope.lookup(decl)
        all_const = all(
            a is None
            or isinstance(a.const_value, (int, bool))
            or (isinstance(a, ast.Member) and a.kind in ("enum_member", "error_member"))
            for a in c.args
        )
        if (
            not isinstance(aloc, ActionLoc)
            or not all_const
            or any(p.direction for p in decl.params)
            or self.exit_copy_outs  # inlined, so that an exit in it copies out the enclosing controls
        ):
            if any(hoistable(a) for a in c.args if a is not None):  # evaluated first, in P4's order
                return self.with_hoisted(
                    [],
                    scope,
                    nxt,
                    lambda hook, n, snaps=None: self.action_node(
                        lambda sl: sl.call(mce), scope, n, mce, hook=hook, overrides=snaps
                    ),
                    call=c,
                )
            return self.action_node(lambda sl: sl.call(mce), scope, nxt, mce)
        aid = lower_action(self.ctx, aloc)
        data = action_data(self.ctx, decl, list(c.args), mce)
        short = decl.name
        return self.hidden_table(f"tbl_{short}", aid, data, nxt, mce)

    def action_node(
        self,
        fill: Callable[[StmtLowering], Any],
        scope: Scope,
        nxt: Next,
        node: ast.Node | None,
        hook: Callable[[Any], Loc] | None = None,
        base: str = "act",
        overrides: dict[int, Loc] | None = None,
    ) -> Next:
        """A synthesized action holding the primitives `fill` produces, applied by a hidden table.
        `overrides` are operands already copied into temporaries (see `Snapshot`)."""

        def run(sl: StmtLowering) -> None:
            sl.exit_hooks = list(self.exit_copy_outs)
            if overrides:
                sl.overrides = overrides
            if hook is not None:
                default = sl.eval_call

                def combined(e: Any) -> Loc:
                    try:
                        return hook(e)
                    except CompileError:
                        return default(e)  # a call the hoisting did not cover (e.g. inside a function)

                sl.eval_call = combined  # type: ignore[method-assign]
            fill(sl)

        _, prims = lower_body(self.ctx, scope, run)
        if not prims:
            return nxt
        name = self.ctx.out.action_names.fresh(base)
        aid = self.ctx.out.add_action(name, [], prims)
        self.ctx.action_names[aid] = name
        self.ctx.add_cp_action(name, None, [], hidden=True)
        return self.hidden_table(f"tbl_{name}", aid, [], nxt, node)

    def hidden_table(self, base: str, aid: int, data: list[str], nxt: Next, node: ast.Node | None) -> str:
        name = self.ctx.out.node_names.fresh(base)
        aname = self.ctx.action_names[aid]
        j: JSON = {"name": name, "id": self.ctx.out.next_id("table")}
        si = source_info(node)
        if si:
            j["source_info"] = si
        j.update(
            {
                "key": [],
                "match_type": "exact",
                "type": "simple",
                "max_size": 1024,
                "with_counters": False,
                "support_timeout": False,
                "direct_meters": None,
                "action_ids": [aid],
                "actions": [aname],
                "base_default_next": nxt,
                "next_tables": {aname: nxt},
                "default_entry": {
                    "action_id": aid,
                    "action_const": True,
                    "action_data": data,
                    "action_entry_const": True,
                },
            }
        )
        self.tables.append(j)
        self.ctx.cp.tables.append(
            CPTable(
                name,
                action_refs=[CPActionRef(aname)],
                const_default_action=aname,
                annotations=[CPAnnotation("hidden")],
            )
        )
        return name

    # --- calls and table results inside expressions -------------------------------------------
    def with_hoisted(
        self,
        exprs: list[ast.Expression],
        scope: Scope,
        nxt: Next,
        build: Callable[..., Next],
        first: list[ast.Expression] | None = None,
        call: ast.CallInfo | None = None,
    ) -> Next:
        """Evaluate table results (`t.apply().hit`), calls and lazy operators used inside `exprs` (and
        `call`'s arguments) into temporaries, in nodes placed before whatever `build` makes (which reads
        them through the hook and the overrides). The values in `first` (an assignment target's run-time
        indices) are copied before any of that runs."""
        items: list[Any] = []
        for e in exprs:
            collect(e, items)
        if call is not None:
            collect_args(call, items)
        items = once(items)
        if first and any(not isinstance(it, Snapshot) for it in items):
            items = [Snapshot(x) for x in first] + items
        temps: dict[int, Loc] = {}
        snaps: dict[int, Loc] = {}
        for it in items:
            if isinstance(it, (Snapshot, Lazy)):  # read through the overrides
                snaps[id(it.expr)] = self.ctx.temp(item_type(it))
                continue
            temps[id(it)] = self.ctx.temp(item_type(it))

        def hook(e: Any) -> Loc:
            loc = temps.get(id(e))
            if loc is None:
                raise unsupported("this call inside an expression", e)
            return loc

        cur = build(hook, nxt, snaps) if snaps else build(hook, nxt)
        for it in reversed(items):
            if isinstance(it, Snapshot):
                tmp = snaps[id(it.expr)]
                cur = self.action_node(lambda sl, t=tmp, x=it.expr: sl.assign(t, x, x), scope, cur, it.expr)
                continue
            if isinstance(it, Lazy):  # only the side P4 evaluates runs, as an if into the temporary
                ref = temp_ref(scope, snaps[id(it.expr)], it.expr)
                cur = self.if_stmt(lazy_as_if(ref, it.expr), scope, cur, cur)
                continue
            tmp = temps[id(it)]
            if isinstance(it, ast.Member):
                assert isinstance(tmp, FieldLoc)
                if it.member not in ("hit", "miss"):
                    raise unsupported(f"{it.member} used as a value", it)
                set1 = self.action_node(
                    lambda sl, t=tmp: sl.emit("assign", [t.json(), V.b2d(V.boolean(True))]), scope, cur, it
                )
                set0 = self.action_node(
                    lambda sl, t=tmp: sl.emit("assign", [t.json(), V.b2d(V.boolean(False))]), scope, cur, it
                )
                hit_n, miss_n = (set1, set0) if it.member == "hit" else (set0, set1)
                assert isinstance(it.expr, ast.MethodCallExpression)
                cur = self.apply_table(it.expr, scope, cur, hit_miss=(hit_n, miss_n))
            else:
                call = it
                cur = self.action_node(
                    lambda sl, c=call, t=tmp: sl.call(c, t), scope, cur, it, hook=hook, overrides=snaps
                )
        return cur


def _flatten(stmts: list[Any]) -> list[Any]:
    out: list[Any] = []
    for s in stmts:
        if isinstance(s, ast.BlockStatement) and not s.annotations:
            out.extend(_flatten(s.stmts))
        else:
            out.append(s)
    return out


def _short_circuit_with_effects(e: ast.Expression) -> bool:
    """`a && b` / `a || b` (possibly negated) whose right operand applies a table or calls something."""
    while isinstance(e, ast.UnaryOp) and e.op == "!":
        e = e.expr
    if isinstance(e, ast.BinaryOp) and e.op in ("&&", "||") and e.const_value is None:
        return hoistable(e.right) or _short_circuit_with_effects(e.left)
    return False


def _applies_anything(node: Any) -> bool:
    """Whether a statement tree applies a table or a control (which an action cannot do)."""
    if isinstance(node, ast.MethodCallExpression):
        c = node.call
        if c is not None and c.kind in ("table_apply", "control_apply", "parser_apply"):
            return True
    if isinstance(node, ast.Member) and node.kind == "apply_result":
        return True
    if isinstance(node, list):
        return any(_applies_anything(x) for x in node)
    if isinstance(node, ast.Node):
        for k, v in vars(node).items():
            if k in _NOT_CHILDREN:
                continue  # references to declarations, not sub-trees
            if isinstance(v, (ast.Node, list)) and _applies_anything(v):
                return True
    return False


_NOT_CHILDREN = NOT_CHILDREN


def _hit_miss(e: ast.Expression) -> tuple[ast.MethodCallExpression, str, bool] | None:
    neg = False
    while isinstance(e, ast.UnaryOp) and e.op == "!":
        neg = not neg
        e = e.expr
    if (
        isinstance(e, ast.Member)
        and e.kind == "apply_result"
        and e.member in ("hit", "miss")
        and isinstance(e.expr, ast.MethodCallExpression)
    ):
        return e.expr, e.member, neg
    return None
