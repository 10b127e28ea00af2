"""Type checker, v1model part: what p4c's BMv2 back end refuses in v1model programs beyond the
language's own rules.

Calls bound to a block of V1Switch: p4c converts ingress and egress separately and refuses a
packet operation that means nothing in the block it is converted in: `clone(I2E, ...)` (and
`clone_preserving_field_list`) only in ingress, `clone(E2E, ...)` only in egress,
`resubmit_preserving_field_list` only in ingress, `recirculate_preserving_field_list` only in
egress. BMv2 acts on each only at the end of its own block. What runs in a block is its control's
apply body with everything it reaches: actions it calls directly or through a table's actions,
functions, and controls it applies; the check runs once `main` is known.

Instances: registers hold bit<W>/int<W> cells and have a size; a direct_meter that is read must be
a table's `meters`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from p4kit.compiler import ast
from p4kit.compiler import types as T  # noqa: N812
from p4kit.compiler.diagnostics import CompileError
from p4kit.compiler.tc_calls import _NOT_IN_PARSER, _PARSER_FUNCTIONS, _PARSER_METHODS, obj_text

# extern function -> (the block it must run in, or None when its first argument decides)
_BLOCK_BOUND = {
    "clone": None,
    "clone_preserving_field_list": None,
    "resubmit_preserving_field_list": "ingress",
    "recirculate_preserving_field_list": "egress",
}
_CLONE_BLOCK = {"I2E": "ingress", "E2E": "egress"}
_BACK_REFERENCES = ("loc", "type", "decl", "ctor", "ctor_call", "target_type")


def check_block_bound_externs(program: ast.Program) -> None:
    """Refuse a clone/resubmit/recirculate that runs in the other V1Switch block than its own."""
    main = program.main
    if main is None or not isinstance(main.type, T.PackageType) or main.type.name != "V1Switch":
        return
    info = main.ctor_call
    if info is None:
        return
    roles = {p.name: a for p, a in zip(info.params, info.args, strict=False)}
    for param, block in (("ig", "ingress"), ("eg", "egress")):
        control = control_of(roles.get(param))
        if control is not None:
            _Walk(block).control(control)


def control_of(arg: Any) -> ast.ControlDecl | None:
    """The control declaration an argument of main instantiates (`MyIngress()` or an instance)."""
    if isinstance(arg, ast.PathExpression) and isinstance(arg.decl, ast.Instantiation):
        arg = arg.decl
    ctor = getattr(arg, "ctor_call", None)
    decl = getattr(ctor, "decl", None)
    return decl if isinstance(decl, ast.ControlDecl) else None


class _Walk:
    def __init__(self, block: str) -> None:
        self.block = block
        self.seen: set[int] = set()

    def control(self, d: ast.ControlDecl) -> None:
        if self.first_time(d):
            self.node(d.body)

    def first_time(self, d: Any) -> bool:
        if id(d) in self.seen:
            return False
        self.seen.add(id(d))
        return True

    def node(self, x: Any) -> None:
        if isinstance(x, list):
            for y in x:
                self.node(y)
            return
        if not isinstance(x, ast.Node):
            return
        if isinstance(x, ast.MethodCallExpression) and x.call is not None:
            self.call(x, x.call)
        for f in dataclasses.fields(x):
            if f.name not in _BACK_REFERENCES:
                self.node(getattr(x, f.name))

    def call(self, e: ast.MethodCallExpression, c: ast.CallInfo) -> None:
        d = c.decl
        if c.kind in ("action", "function") and self.first_time(d):
            self.node(d.body)
        elif c.kind == "table_apply" and self.first_time(d):
            refs = [*d.actions, *([d.default_action] if d.default_action else [])]
            for entry in d.entries or []:
                refs.append(entry.action)
            for ref in refs:
                action = getattr(ref, "action", None)
                if isinstance(action, ast.ActionDecl) and self.first_time(action):
                    self.node(action.body)
        elif c.kind == "control_apply":
            control = d.ctor_call.decl if isinstance(d, ast.Instantiation) and d.ctor_call else d
            if isinstance(control, ast.ControlDecl):
                self.control(control)
        elif c.kind == "extern_function" and d.name in _BLOCK_BOUND:
            self.block_bound(e, c, d.name)

    def block_bound(self, e: ast.MethodCallExpression, c: ast.CallInfo, name: str) -> None:
        want = _BLOCK_BOUND[name]
        shown = name
        if want is None:
            kind = enum_member(c.args[0] if c.args else None)
            if kind not in _CLONE_BLOCK:
                return
            want, shown = _CLONE_BLOCK[kind], f"{name}({kind}, ...)"
        if want != self.block:
            raise CompileError(
                f"{shown} not invoked in {want}: this call runs in {self.block} (p4c's BMv2 back end "
                f"refuses it there)",
                e.loc,
            )


def enum_member(e: Any) -> str | None:
    """`I2E` for `CloneType.I2E`, None for anything else."""
    if isinstance(e, ast.Member) and isinstance(e.expr, (ast.PathExpression, ast.TypeNameExpression)):
        return e.member
    return None


def from_v1model(decl: Any) -> bool:
    """Whether `decl` is declared by v1model.p4 (and not a program's own extern of that name)."""
    loc = getattr(decl, "loc", None)
    return loc is not None and str(loc.file).endswith("v1model.p4")


def check_v1model_instance(d: ast.Instantiation) -> None:
    """What p4c's BMv2 back end refuses in a v1model instance: a register of anything but bit<W> or
    int<W> ("Only registers with bit or int types are currently supported"), and one of size 0
    ("direct registers are not supported in bmv2")."""
    t = d.type
    if not isinstance(t, T.ExternType) or t.name != "register" or not from_v1model(t.decl):
        return
    # p4c's mid end turns `type`s and serializable enums into their bit<W> before the back end looks
    elem = T.unwrap(t.type_args[0]) if t.type_args else None
    if isinstance(elem, T.SerEnumType):
        elem = elem.underlying
    if elem is not None and not isinstance(elem, (T.BitsType, T.TypeVar)):
        raise CompileError(
            f"{d.name}: only registers with bit or int types are supported (not register<{t.type_args[0]}>; "
            "keep one register per field)",
            d.loc,
        )
    size = d.ctor_call.args[0] if d.ctor_call is not None and d.ctor_call.args else None
    if size is not None and size.const_value == 0:
        raise CompileError(f"{d.name}: direct registers are not supported in bmv2 (its size is 0)", d.loc)


def check_direct_meters_have_tables(program: ast.Program) -> None:
    """p4c's BMv2 back end: a direct_meter whose read() is called must be a table's `meters`
    property ("direct meter is not associated with any table via 'meters' table property"); BMv2
    would otherwise have no table entry to meter by."""
    read: dict[int, ast.Instantiation] = {}
    bound: set[int] = set()

    def visit(x: Any) -> None:
        if isinstance(x, list):
            for y in x:
                visit(y)
            return
        if not isinstance(x, ast.Node):
            return
        if isinstance(x, ast.TableDecl):
            prop = x.property("meters")
            if prop is not None and isinstance(prop.value, ast.PathExpression):
                bound.add(id(prop.value.decl))
        c = x.call if isinstance(x, ast.MethodCallExpression) else None
        if c is not None and c.kind == "extern_method" and c.extern is not None:
            inst = getattr(c.obj, "decl", None)
            if (
                c.extern.name == "direct_meter"
                and from_v1model(c.extern)
                and isinstance(inst, ast.Instantiation)
            ):
                read.setdefault(id(inst), inst)
        for f in dataclasses.fields(x):
            if f.name not in _BACK_REFERENCES:
                visit(getattr(x, f.name))

    visit(program.decls)
    for key, inst in read.items():
        if key not in bound:
            raise CompileError(
                f"{inst.name}: direct meter is not associated with any table via 'meters' table property",
                inst.loc,
            )


def check_functions_called_from_parsers(program: ast.Program) -> None:
    """p4c inlines a function into the parser state that calls it, and its BMv2 back end then
    refuses an extern call there that a parser cannot run (the same rule as for a call written in
    the state, reported at the call in the function's body)."""
    seen: set[int] = set()

    def visit(x: Any, site: Any) -> None:
        """`site` is the call in the parser state that led here (None in the state itself)."""
        if isinstance(x, list):
            for y in x:
                visit(y, site)
            return
        if not isinstance(x, ast.Node):
            return
        c = x.call if isinstance(x, ast.MethodCallExpression) else None
        if c is not None and c.kind == "function" and id(c.decl) not in seen:
            seen.add(id(c.decl))
            visit(c.decl.body, site or x)
        elif c is not None and site is not None:
            what = None
            if c.kind == "extern_function" and c.decl.name not in _PARSER_FUNCTIONS:
                what = c.decl.name
            elif c.kind == "extern_method" and c.extern is not None:
                if (c.extern.name, c.decl.name) not in _PARSER_METHODS:
                    what = f"{obj_text(c.obj)}.{c.decl.name}"
            if what is not None:
                raise CompileError(
                    f"{what}(...): {_NOT_IN_PARSER}",
                    x.loc,
                    [("the function is called in a parser here", site.loc)],
                )
        for f in dataclasses.fields(x):
            if f.name not in _BACK_REFERENCES:
                visit(getattr(x, f.name), site)

    for d in program.decls:
        if isinstance(d, ast.ParserDecl) and not d.type_params:
            for st in d.states:
                visit(st.components, None)
                visit(st.transition, None)
