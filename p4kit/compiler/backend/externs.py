"""v1model's externs: instances (registers, counters, meters, action profiles) become BMv2 arrays and
control-plane objects; calls become simple_switch's primitives (register_read, count, execute_meter,
modify_field_with_hash_based_offset, clone_*, resubmit, recirculate, generate_digest, ...)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from p4kit.compiler import ast
from p4kit.compiler import types as T  # noqa: N812
from p4kit.compiler.backend import values as V  # noqa: N812
from p4kit.compiler.backend.context import Ctx, Scope, cp_annotations, unsupported
from p4kit.compiler.backend.storage import (
    DynFieldLoc,
    ExternLoc,
    FieldLoc,
    HeaderLoc,
    Loc,
    StructLoc,
    ValueLoc,
    bits,
)
from p4kit.compiler.cpmodel import CPCounter, CPDigest, CPField, CPMeter, CPRegister
from p4kit.compiler.diagnostics import CompileError
from p4kit.compiler.preprocess import INCLUDE_DIR

if TYPE_CHECKING:
    from p4kit.compiler.backend.statements import StmtLowering

JSON = dict[str, Any]

HASH_ALGOS = {
    "crc32": "crc32",
    "crc32_custom": "crc32_custom",
    "crc16": "crc16",
    "crc16_custom": "crc16_custom",
    "random": "random",
    "identity": "identity",
    "csum16": "csum16",
    "xor16": "xor16",
}
COUNTER_UNITS = {"packets": "PACKETS", "bytes": "BYTES", "packets_and_bytes": "BOTH"}


def arg(v: JSON) -> JSON:
    return V.wrap_expression(v)


def enum_name(e: ast.Expression | None) -> str:
    if isinstance(e, ast.Member):
        return e.member
    raise unsupported("an enum constant is expected here", e)


def const_int(e: ast.Expression | None, what: str) -> int:
    if e is None or not isinstance(e.const_value, int):
        raise unsupported(f"{what} must be a compile-time constant", e)
    return int(e.const_value)


def ctor_args(inst: ast.Instantiation | ast.ConstructorCallExpression) -> list[ast.Expression]:
    return [a.value for a in inst.args]


# --- instances ----------------------------------------------------------------------------------------


def declare_instance(ctx: Ctx, inst: ast.Instantiation, scope: Scope) -> ExternLoc:
    """Create the BMv2 object for an extern instance declared in a control (or at top level)."""
    t = inst.type
    assert isinstance(t, T.ExternType)
    name = scope.qualify(inst)
    loc = ExternLoc(name, t.name, t, ctor_args(inst), inst, list(inst.annotations))
    args = loc.args
    ann = cp_annotations(inst.annotations)
    if t.name == "register":
        size = const_int(args[0], "a register's size")
        width = bits(t.type_args[0]) if t.type_args else 32
        ctx.out.register_arrays.append(
            {"name": name, "id": len(ctx.out.register_arrays), "size": size, "bitwidth": width}
        )
        ctx.cp.registers.append(CPRegister(name, width, size, ann))
    elif t.name == "counter":
        size = const_int(args[0], "a counter's size")
        ctx.out.counter_arrays.append(
            {"name": name, "id": len(ctx.out.counter_arrays), "is_direct": False, "size": size}
        )
        ctx.cp.counters.append(CPCounter(name, COUNTER_UNITS[enum_name(args[1])], size, None, ann))
    elif t.name == "meter":
        size = const_int(args[0], "a meter's size")
        ctx.out.meter_arrays.append(
            {
                "name": name,
                "id": len(ctx.out.meter_arrays),
                "is_direct": False,
                "size": size,
                "rate_count": 2,
                "type": enum_name(args[1]),
            }
        )
        ctx.cp.meters.append(CPMeter(name, enum_name(args[1]).upper(), size, None, ann))
    # direct_counter, direct_meter, action_profile, action_selector: created when a table uses them.
    return loc


def bind_direct_counter(ctx: Ctx, ext: ExternLoc, table: str, size: int) -> None:
    ctx.out.counter_arrays.append(
        {
            "name": ext.name,
            "id": len(ctx.out.counter_arrays),
            "is_direct": True,
            "binding": table,
            "size": size,
        }
    )
    unit = COUNTER_UNITS[enum_name(ext.args[0])] if ext.args else "BOTH"
    ctx.cp.counters.append(CPCounter(ext.name, unit, size, table, cp_annotations(ext.annotations)))


def bind_direct_meter(ctx: Ctx, ext: ExternLoc, table: str, size: int) -> None:
    targets = ctx.direct_meter_targets.get(ext.name, [])
    kind = enum_name(ext.args[0]) if ext.args else "packets"
    ctx.out.meter_arrays.append(
        {
            "name": ext.name,
            "id": len(ctx.out.meter_arrays),
            "is_direct": True,
            "binding": table,
            "size": size,
            "rate_count": 2,
            "type": kind,
            "result_target": targets[0]["value"] if targets else None,
        }
    )
    ctx.cp.meters.append(CPMeter(ext.name, kind.upper(), size, table, cp_annotations(ext.annotations)))


# --- data lists (hash inputs, digests, field lists) -----------------------------------------------


def data_items(sl: StmtLowering, e: ast.Expression, base: str = "") -> list[tuple[JSON, int, str]]:
    """The scalar leaves of a list/struct/header value as (json, width, name); constants become hexstr,
    computed values are first assigned to temporaries (BMv2 lists hold only fields and constants)."""
    if isinstance(e, ast.ListExpression):
        out: list[tuple[JSON, int, str]] = []
        tt = T.unwrap(e.target_type) if isinstance(e.target_type, T.Type) else None
        names = [f.name for f in tt.fields] if isinstance(tt, T.StructLikeType) else []
        for i, x in enumerate(e.elems):
            out += data_items(sl, x, names[i] if i < len(names) else _leaf_name(x, f"field_{i}"))
        return out
    if isinstance(e, ast.StructExpression):
        out = []
        for f in e.fields:
            out += data_items(sl, f.value, f.name)
        return out
    t = T.unwrap(e.type) if e.type is not None else T.IntType()
    if isinstance(e.const_value, (int, bool)):
        w = bits(t) if not isinstance(t, T.IntType) else max(int(e.const_value).bit_length(), 1)
        return [(V.hexstr(int(e.const_value), w), w, base)]
    if isinstance(t, (T.StructLikeType, T.HeaderStackType, T.TupleType)):
        return loc_items(sl.ex.loc(e), base)
    if isinstance(e, (ast.PathExpression, ast.Member)):
        loc = sl.ex.loc(e)
        if isinstance(loc, (FieldLoc, DynFieldLoc)):
            return [(loc.json(), bits(loc.type), base or _leaf_name(e, "f"))]
    tmp = sl.ctx.temp(t)
    sl.assign(tmp, e, e)
    assert isinstance(tmp, FieldLoc)
    return [(tmp.json(), bits(t), base or tmp.name)]


def _leaf_name(e: ast.Expression, default: str) -> str:
    if isinstance(e, ast.Member):
        return e.member
    if isinstance(e, ast.PathExpression):
        return e.name
    return default


def loc_items(loc: Loc, base: str = "") -> list[tuple[JSON, int, str]]:
    if isinstance(loc, (FieldLoc, DynFieldLoc)):
        return [(loc.json(), bits(loc.type), base or getattr(loc, "name", ""))]
    if isinstance(loc, ValueLoc):
        return [(loc.json(), bits(loc.type), base)]
    if isinstance(loc, HeaderLoc):
        out_h: list[tuple[JSON, int, str]] = []
        for name, sub in loc.fields.items():
            out_h += loc_items(sub, name)
        return out_h
    if isinstance(loc, StructLoc):
        out: list[tuple[JSON, int, str]] = []
        for name, sub in loc.fields.items():
            out += loc_items(sub, name)
        return out
    raise unsupported("this value in a field list", None)


def calc_inputs(items: list[tuple[JSON, int, str]]) -> list[JSON]:
    out = []
    for j, w, _ in items:
        if j["type"] == "hexstr":
            out.append({"type": "hexstr", "value": j["value"], "bitwidth": w})
        else:
            out.append(j)
    return out


def field_list(sl: StmtLowering, items: list[tuple[JSON, int, str]], name: str) -> int:
    """A `field_lists` entry (ids from 1; 0 means none), shared between identical lists."""
    elements = [j for j, _, _ in items if j["type"] == "field"]
    if not elements:
        return 0
    for fl in sl.ctx.out.field_lists:
        if fl["elements"] == elements:
            return fl["id"]
    fid = len(sl.ctx.out.field_lists) + 1
    sl.ctx.out.field_lists.append({"id": fid, "name": name, "elements": elements})
    return fid


def annotated_field_list(sl: StmtLowering, index: int) -> int:
    """`@field_list(index)` fields of the user metadata, for the *_preserving_field_list externs."""
    if index in sl.ctx.field_lists:
        return sl.ctx.field_lists[index]
    items: list[tuple[JSON, int, str]] = []

    def walk(loc: Loc) -> None:
        if not isinstance(loc, StructLoc):
            return
        st = T.unwrap(loc.type)
        assert isinstance(st, T.StructLikeType)
        for f in st.fields:
            sub = loc.fields[f.name]
            marked = False
            for a in f.annotations:
                if a.name == "field_list" and a.args:
                    if any(_annotation_int(x, sl.ctx.program) == index for x in a.args):
                        marked = True
            if marked:
                items.extend(loc_items(sub, f.name))
            else:
                walk(sub)

    if sl.ctx.meta_loc is not None:
        walk(sl.ctx.meta_loc)
    if not items:
        sl.ctx.field_lists[index] = 0
        return 0
    fid = len(sl.ctx.out.field_lists) + 1
    sl.ctx.out.field_lists.append(
        {"id": fid, "name": f"field_list{index}", "elements": [j for j, _, _ in items]}
    )
    sl.ctx.field_lists[index] = fid
    return fid


def _annotation_int(e: ast.Expression, program: ast.Program) -> int:
    """An integer argument of an annotation: a literal or a named global constant, as p4c resolves
    `@field_list(FL_PACKET_IN)`. Annotation arguments are parsed but not type-checked, so a name is
    looked up here; anything else is an error (silently matching nothing lost the fields)."""
    if isinstance(e.const_value, int) and not isinstance(e.const_value, bool):
        return e.const_value
    if isinstance(e, ast.Constant):
        return e.value
    if isinstance(e, ast.PathExpression):
        for d in program.decls:
            if isinstance(d, ast.ConstDecl) and d.name == e.name:
                if isinstance(d.const_value, int) and not isinstance(d.const_value, bool):
                    return d.const_value
                raise CompileError(f"'{e.name}' is not an integer constant", e.loc)
        raise CompileError(
            f"'{e.name}': declaration not found (an annotation argument must be a constant)", e.loc
        )
    if isinstance(e, ast.Member) and isinstance(e.expr, (ast.PathExpression, ast.TypeNameExpression)):
        # a member of a serializable enum (`@field_list(FieldLists.Clone)`): its declared value
        enum = e.expr.name if isinstance(e.expr, ast.PathExpression) else e.expr.type_ref.name
        for d in program.decls:
            if isinstance(d, ast.EnumDecl) and d.name == enum:
                t = T.unwrap(d.type) if d.type is not None else None
                if not isinstance(t, T.SerEnumType):
                    raise CompileError(f"'{d.name}' is not an enum with an underlying type", e.loc)
                if e.member not in t.members:
                    raise CompileError(f"'{e.member}' is not a member of enum '{d.name}'", e.loc)
                return int(t.members[e.member])
    raise CompileError("an annotation argument must be an integer constant", e.loc)


# --- calls ----------------------------------------------------------------------------------------


def lower_call(sl: StmtLowering, mce: ast.MethodCallExpression, result: Loc | None) -> None:
    c = mce.call
    assert c is not None
    if c.kind == "extern_method":
        _method(sl, mce, c, result)
    else:
        _function(sl, mce, c, result)


def _a(c: ast.CallInfo, i: int) -> ast.Expression | None:
    return c.args[i] if i < len(c.args) else None


def _req(c: ast.CallInfo, i: int, node: ast.Node) -> ast.Expression:
    a = _a(c, i)
    if a is None:
        raise unsupported("a missing argument", node)
    return a


def _function(sl: StmtLowering, mce: ast.MethodCallExpression, c: ast.CallInfo, result: Loc | None) -> None:
    name = c.decl.name
    ex = sl.ex
    if name == "mark_to_drop":
        target = sl.ctx.std_meta if not c.args or c.args[0] is None else ex.loc(c.args[0])
        sl.emit("mark_to_drop", [target.json()], mce)
    elif name == "hash":
        dest = ex.loc(_req(c, 0, mce))
        algo = HASH_ALGOS.get(enum_name(_a(c, 1)))
        if algo is None:
            raise unsupported("this hash algorithm", mce)
        items = data_items(sl, _req(c, 3, mce))
        calc = sl.ctx.out.add_calculation("calc", algo, calc_inputs(items))
        sl.emit(
            "modify_field_with_hash_based_offset",
            [
                arg(dest.json()),  # type: ignore[attr-defined]
                arg(ex.value(_req(c, 2, mce))),
                {"type": "calculation", "value": calc},
                arg(ex.value(_req(c, 4, mce))),
            ],
            mce,
        )
    elif name == "random":
        dest = ex.loc(_req(c, 0, mce))
        sl.emit(
            "modify_field_rng_uniform",
            [arg(dest.json()), arg(ex.value(_req(c, 1, mce))), arg(ex.value(_req(c, 2, mce)))],  # type: ignore[attr-defined]
            mce,
        )
    elif name == "digest":
        _digest(sl, mce, c)
    elif name in ("clone", "clone3", "clone_preserving_field_list"):
        kind = enum_name(_a(c, 0))
        op = "clone_ingress_pkt_to_egress" if kind == "I2E" else "clone_egress_pkt_to_egress"
        fid = 0
        if name == "clone3":
            fid = field_list(sl, data_items(sl, _req(c, 2, mce)), f"fl_{len(sl.ctx.out.field_lists)}")
        elif name == "clone_preserving_field_list":
            fid = annotated_field_list(sl, const_int(_a(c, 2), "a field list index"))
        sl.emit(op, [arg(ex.value(_req(c, 1, mce))), V.hexstr(fid)], mce)
    elif name in ("resubmit", "recirculate"):
        fid = field_list(sl, data_items(sl, _req(c, 0, mce)), f"fl_{len(sl.ctx.out.field_lists)}")
        sl.emit(name, [V.hexstr(fid)], mce)
    elif name in ("resubmit_preserving_field_list", "recirculate_preserving_field_list"):
        fid = annotated_field_list(sl, const_int(_a(c, 0), "a field list index"))
        sl.emit(name.split("_")[0], [V.hexstr(fid)], mce)
    elif name == "truncate":
        sl.emit("truncate", [arg(ex.value(_req(c, 0, mce)))], mce)
    elif name in ("assert", "assume"):
        sl.emit(name, [arg(ex.cond(_req(c, 0, mce)))], mce)
    elif name == "log_msg":
        msg = _req(c, 0, mce)
        if not isinstance(msg, ast.StringLiteral):
            raise unsupported("log_msg with a message that is not a string literal", mce)
        vals: list[JSON] = []
        data = _a(c, 1)
        if data is not None:
            vals = [arg(j) for j, _, _ in data_items(sl, data)]
        sl.emit(
            "log_msg",
            [{"type": "string", "value": msg.value}, {"type": "parameters_vector", "value": vals}],
            mce,
        )
    elif name == "verify" and sl.in_parser:
        raise unsupported("verify() here", mce)  # handled by the parser lowering
    elif name == "static_assert" and mce.const_value is True:
        pass  # held when the program was checked; nothing happens at run time (p4c drops it too)
    elif _declared_by_program(c.decl):
        _program_extern(sl, mce, c, result)
    else:
        raise unsupported(f"extern function {name}", mce)


def _declared_by_program(decl: Any) -> bool:
    loc = getattr(decl, "loc", None)
    return loc is not None and not str(loc.file).startswith(str(INCLUDE_DIR))


def _program_extern(
    sl: StmtLowering, mce: ast.MethodCallExpression, c: ast.CallInfo, result: Loc | None
) -> None:
    """An extern function the program declares itself. p4c's bmv2 back end refuses it unless
    --emit-externs is given; then the call becomes a primitive of the function's name whose
    parameters are the arguments, and it is up to the target to implement it (simple_switch refuses
    a JSON with a primitive it does not know)."""
    name = c.decl.name
    if not sl.ctx.emit_externs:
        raise CompileError(
            f"{name}: unknown extern function (the bmv2 back end has no implementation; "
            "--emit-externs emits the call as a primitive for a target that provides one)",
            mce.loc,
        )
    if result is not None or not isinstance(T.unwrap(mce.type or T.VoidType()), T.VoidType):
        raise unsupported(f"extern function {name} returning a value (with --emit-externs)", mce)
    params = []
    for p, a in zip(c.params, c.args, strict=False):
        if a is None:
            continue
        loc = sl.ex.loc(a) if p.direction in ("out", "inout") else None
        params.append(loc.json() if loc is not None else arg(sl.ex.value(a)))  # type: ignore[attr-defined]
    sl.emit(name, params, mce)


def _digest(sl: StmtLowering, mce: ast.MethodCallExpression, c: ast.CallInfo) -> None:
    data = _req(c, 1, mce)
    t = T.unwrap(data.type) if data.type is not None else None
    if not isinstance(t, T.StructLikeType):
        bound = c.type_bindings.get("T")
        if isinstance(data, ast.ListExpression) and isinstance(data.target_type, T.Type):
            bound = data.target_type
        t = T.unwrap(bound) if bound is not None else t
    tname = t.name if isinstance(t, T.StructLikeType) else None
    items = data_items(sl, data)
    elements = [j for j, _, _ in items]
    lid = None
    for ll in sl.ctx.out.learn_lists:
        if ll["elements"] == elements:
            lid = ll["id"]
    if lid is None:
        lid = len(sl.ctx.out.learn_lists) + 1
        name = tname or f"digest_{lid - 1}"
        if any(ll["name"] == name for ll in sl.ctx.out.learn_lists):
            name = f"{name}_{lid - 1}"
        sl.ctx.out.learn_lists.append({"id": lid, "name": name, "elements": elements})
        fields = [CPField(n, w) for _, w, n in items]
        if isinstance(t, T.StructLikeType) and len(t.fields) == len(fields):
            # a member of a serializable enum type is named in P4Info as p4c names it
            # (type_spec serializable_enum, and the enum in type_info)
            from p4kit.compiler.backend.program import _ser_enum_name

            for f, sf in zip(fields, t.fields, strict=True):
                f.type_name = _ser_enum_name(sl.ctx, sf.type)
        ann = cp_annotations(t.decl.annotations) if isinstance(t, T.StructLikeType) and t.decl else []
        sl.ctx.cp.digests.append(CPDigest(name, fields, ann))
    sl.emit("generate_digest", [arg(sl.ex.value(_req(c, 0, mce))), V.hexstr(lid)], mce)


def _method(sl: StmtLowering, mce: ast.MethodCallExpression, c: ast.CallInfo, result: Loc | None) -> None:
    assert c.obj is not None
    ext_name = c.extern.name if c.extern is not None else ""
    method = c.decl.name
    if ext_name in ("packet_in", "packet_out"):
        raise unsupported(f"{ext_name}.{method} outside a parser/deparser", mce)
    obj = sl.ex.extern(c.obj)
    ex = sl.ex
    if ext_name == "register":
        arr = {"type": "register_array", "value": obj.name}
        if method == "read":
            dst = ex.loc(_req(c, 0, mce)) if c.args and c.args[0] is not None else result
            if dst is None:
                raise unsupported("register read without a destination", mce)
            sl.emit("register_read", [arg(dst.json()), arr, arg(ex.value(_req(c, 1, mce)))], mce)  # type: ignore[attr-defined]
        elif method == "write":
            sl.emit(
                "register_write", [arr, arg(ex.value(_req(c, 0, mce))), arg(ex.value(_req(c, 1, mce)))], mce
            )
        else:
            raise unsupported(f"register.{method}", mce)
    elif ext_name == "counter" and method == "count":
        sl.emit("count", [{"type": "counter_array", "value": obj.name}, arg(ex.value(_req(c, 0, mce)))], mce)
    elif ext_name == "direct_counter" and method == "count":
        pass  # BMv2 counts matched entries itself
    elif ext_name == "meter" and method == "execute_meter":
        dst = ex.loc(_req(c, 1, mce))
        sl.emit(
            "execute_meter",
            [{"type": "meter_array", "value": obj.name}, arg(ex.value(_req(c, 0, mce))), arg(dst.json())],  # type: ignore[attr-defined]
            mce,
        )
    elif ext_name == "direct_meter" and method == "read":
        dst = ex.loc(_req(c, 0, mce))
        targets = sl.ctx.direct_meter_targets.setdefault(obj.name, [])
        j = dst.json()  # type: ignore[attr-defined]
        if j not in targets:
            targets.append(j)
    else:
        raise unsupported(f"extern method {ext_name}.{method}", mce)
