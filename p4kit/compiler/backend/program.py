"""The top of the back end: finds the V1Switch `main`, lays out headers and metadata the way p4c does
(`scalars`, `standard_metadata`, one instance per header of the headers struct), binds every block's
parameters to that shared storage, and runs the parser, control, checksum and deparser lowerings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from p4kit.compiler import ast
from p4kit.compiler import types as T  # noqa: N812
from p4kit.compiler.backend.bmv2json import Bmv2Json, NameSpace
from p4kit.compiler.backend.checksums import lower_checksums
from p4kit.compiler.backend.context import Ctx, Scope, cp_annotations, unsupported
from p4kit.compiler.backend.controls import ControlLowering, instance_decl
from p4kit.compiler.backend.deparser import lower_deparser
from p4kit.compiler.backend.expressions import ExprLowering
from p4kit.compiler.backend.externs import declare_instance
from p4kit.compiler.backend.parsers import ParserLowering
from p4kit.compiler.backend.storage import (
    ActionLoc,
    ExternLoc,
    FieldLoc,
    HeaderLoc,
    Layout,
    Loc,
    StructLoc,
    ValueLoc,
    bits,
    field_width,
)
from p4kit.compiler.cpmodel import ControlPlaneModel, CPControllerHeader, CPField, CPSerEnum
from p4kit.compiler.diagnostics import CompileError, SourceLoc

JSON = dict[str, Any]

CORE_ERRORS = [
    "NoError",
    "PacketTooShort",
    "NoMatch",
    "StackOutOfBounds",
    "HeaderTooShort",
    "ParserTimeout",
    "ParserInvalidArgument",
]
V1SWITCH_ROLES = ["parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser"]


def lower_program(
    program: ast.Program, source: str | Path = "", emit_externs: bool = False
) -> tuple[JSON, ControlPlaneModel]:
    out = Bmv2Json(program=str(source))
    scalars_fields: list[list[Any]] = []
    out.add_header_type("scalars_0", scalars_fields)
    out.add_header("scalars", "scalars_0", True)
    out.header_type_names.reserve("scalars")
    layout = Layout(out, scalars_fields)
    cp = ControlPlaneModel(program_name=Path(str(source)).stem if source else "")
    ctx = Ctx(program, out, layout, cp, emit_externs=emit_externs)
    _errors(ctx)
    _enums(ctx)

    main = program.main
    if main is None:
        raise CompileError(
            "the program has no 'main' instantiation (V1Switch(...) main;)", _end_of(source, program)
        )
    pkg = T.unwrap(main.type) if main.type is not None else None
    if not isinstance(pkg, T.PackageType) or pkg.name != "V1Switch":
        raise unsupported(f"package {pkg} (only v1model's V1Switch is supported)", main)
    blocks = _blocks(main)
    parser_decl = blocks["parser"][0]
    if not isinstance(parser_decl, ast.ParserDecl):
        raise unsupported("a V1Switch parser that is not a parser declaration", main)

    # --- storage shared by all blocks -----------------------------------------------------------
    std = _standard_metadata(ctx)
    ctx.std_meta = std
    pparams = parser_decl.params
    if len(pparams) != 4:
        raise CompileError("the V1Switch parser must have 4 parameters", parser_decl.loc)
    htype, mtype = pparams[1].type, pparams[2].type
    assert htype is not None and mtype is not None
    hdr_loc = _headers_struct(ctx, htype)
    meta_loc = _metadata(ctx, mtype)
    ctx.meta_loc = meta_loc
    glob = Scope()
    _globals(ctx, glob)

    def scope_for(role: str) -> Scope:
        decl, ctor_args = blocks[role]
        s = Scope(parent=glob, prefix=decl.control_plane_name())
        from p4kit.compiler.backend.controls import bind_ctor_params

        bind_ctor_params(ctx, decl.ctor_params, ctor_args, s, glob)
        for p in decl.params:
            s.bind(p, _bind_param(ctx, p, htype, mtype, hdr_loc, meta_loc, std))
        return s

    parsers = ParserLowering(ctx)
    out.parsers.append(parsers.parser(parser_decl, scope_for("parser")))
    for role, pname in (("ingress", "ingress"), ("egress", "egress")):
        decl = blocks[role][0]
        if not isinstance(decl, ast.ControlDecl):
            raise unsupported(f"a V1Switch {role} that is not a control declaration", main)
        out.pipelines.append(ControlLowering(ctx, pname).pipeline(decl, scope_for(role)))
    cnames = NameSpace()
    for role in ("verify_checksum", "compute_checksum"):
        decl = blocks[role][0]
        if not isinstance(decl, ast.ControlDecl):
            raise unsupported(f"a V1Switch {role} that is not a control declaration", main)
        lower_checksums(ctx, decl, scope_for(role), cnames)
    dep = blocks["deparser"][0]
    if not isinstance(dep, ast.ControlDecl):
        raise unsupported("a V1Switch deparser that is not a control declaration", main)
    out.deparsers.append(lower_deparser(ctx, dep, scope_for("deparser")))

    _controller_headers(ctx)
    varbits = [f[0] for f in scalars_fields if f[1] == "*"]
    if varbits:
        # BMv2 keeps metadata and locals in one fixed-size header: a varbit has no place in it
        raise unsupported(
            f"a varbit field outside a header ({varbits[0]}: metadata or a local variable)", main
        )
    total = sum(int(f[1]) for f in scalars_fields)
    if total % 8:
        scalars_fields.append(["_padding_0", 8 - total % 8, False])
    return out.to_dict(), cp


# --- pieces --------------------------------------------------------------------------------------


def _blocks(main: ast.Instantiation) -> dict[str, tuple[Any, list[ast.Expression]]]:
    """The six V1Switch arguments as (declaration, constructor arguments)."""
    if len(main.args) != 6:
        raise CompileError("V1Switch takes 6 arguments", main.loc)
    out: dict[str, tuple[Any, list[ast.Expression]]] = {}
    pkg = T.unwrap(main.type) if main.type is not None else None
    pnames = [p.name for p in pkg.params] if isinstance(pkg, T.PackageType) else []
    ordered: list[ast.Argument] = list(main.args)
    if any(a.name for a in main.args) and len(pnames) == 6:  # named arguments: V1Switch(p = ..., ...)
        by_name = {a.name: a for a in main.args}
        ordered = [by_name[n] for n in pnames if n in by_name]
        if len(ordered) != 6:
            raise CompileError("V1Switch: every argument must be given", main.loc)
    for role, a in zip(V1SWITCH_ROLES, ordered, strict=True):
        e = a.value
        decl = None
        ctor: list[ast.Expression] = []
        if isinstance(e, ast.ConstructorCallExpression):
            decl = instance_decl(e)
            ctor = [x.value for x in e.args]
        elif isinstance(e, ast.PathExpression) and isinstance(e.decl, ast.Instantiation):
            decl = instance_decl(e.decl)
            ctor = [x.value for x in e.decl.args]
        if decl is None:
            raise unsupported(f"this V1Switch {role} argument", e)
        out[role] = (decl, ctor)
    return out


def _errors(ctx: Ctx) -> None:
    et = ctx.program.error_type
    members = list(et.members) if et is not None else list(CORE_ERRORS)
    n = 0
    for name in CORE_ERRORS:
        ctx.errors[name] = n
        n += 1
    for name in members:
        if name not in ctx.errors:
            ctx.errors[name] = n
            n += 1
    ctx.out.errors = [[k, v] for k, v in sorted(ctx.errors.items(), key=lambda kv: kv[1])]


def _enums(ctx: Ctx) -> None:
    for d in ctx.program.decls:
        if isinstance(d, ast.EnumDecl) and isinstance(d.type, T.EnumType):
            ctx.out.enums.append({"name": d.name, "entries": [[m, i] for i, m in enumerate(d.type.members)]})


def _standard_metadata(ctx: Ctx) -> HeaderLoc:
    decl = ctx.program.find("standard_metadata_t")
    if decl is None or not isinstance(decl.type, T.StructType):
        raise CompileError("standard_metadata_t is not declared (include <v1model.p4>)", ctx.program.loc)
    t: T.StructType = decl.type
    fields: list[list[Any]] = [[f.name, field_width(f.type), False] for f in t.fields]
    total = sum(int(f[1]) for f in fields)
    if total % 8:
        fields.append(["_padding", 8 - total % 8, False])
    ctx.out.add_header_type("standard_metadata", fields)
    ctx.layout.header_type_of[id(t.decl) if t.decl is not None else id(t)] = "standard_metadata"
    name, _ = ctx.out.add_header("standard_metadata", "standard_metadata", True)
    loc = HeaderLoc(name, t)
    for f in t.fields:
        loc.fields[f.name] = FieldLoc(name, f.name, f.type)
        alias = ast.annotation_string(f.annotations, "alias")
        if alias:
            ctx.out.field_aliases.append([alias, [name, f.name]])
    return loc


def _headers_struct(ctx: Ctx, t: T.Type) -> Loc:
    """The parser's `out H hdr`: each header field becomes an instance named after the field."""
    ut = T.unwrap(t)
    if isinstance(ut, T.StructType):
        loc = StructLoc(ut)
        for f in ut.fields:
            loc.fields[f.name] = ctx.layout.materialize(f.name, f.type)
        return loc
    return ctx.layout.materialize("hdr", t)


def _metadata(ctx: Ctx, t: T.Type) -> Loc:
    """User metadata: scalar fields go to `scalars` as "userMetadata.<field>", nested structs of scalars
    become metadata header instances, headers become header instances (p4c's layout)."""
    ut = T.unwrap(t)
    if not isinstance(ut, T.StructType):
        return ctx.layout.materialize("userMetadata", t)
    return _meta_struct(ctx, ut, "userMetadata", top=True)


def _meta_struct(ctx: Ctx, t: T.StructType, path: str, top: bool) -> StructLoc:
    loc = StructLoc(t)
    for f in t.fields:
        ft = T.unwrap(f.type)
        if isinstance(ft, T.StructType):
            if (
                all(
                    isinstance(
                        T.unwrap(g.type), (T.BitsType, T.BoolType, T.SerEnumType, T.EnumType, T.ErrorType)
                    )
                    for g in ft.fields
                )
                and ft.fields
            ):
                tname = ctx.layout.metadata_type_name(ft)
                hname, _ = ctx.out.add_header(
                    f.name if top else f"{path}.{f.name}".split(".", 1)[1], tname, True
                )
                h = HeaderLoc(hname, ft)
                for g in ft.fields:
                    h.fields[g.name] = FieldLoc(hname, g.name, g.type)
                loc.fields[f.name] = h
            else:
                loc.fields[f.name] = _meta_struct(ctx, ft, f"{path}.{f.name}", False)
        elif isinstance(ft, (T.HeaderType, T.HeaderUnionType, T.HeaderStackType)):
            loc.fields[f.name] = ctx.layout.materialize(f.name, f.type)
        else:
            loc.fields[f.name] = ctx.layout.scalar(f"{path}.{f.name}", f.type)
    return loc


def _globals(ctx: Ctx, glob: Scope) -> None:
    ex = ExprLowering(ctx, glob)
    for d in ctx.program.decls:
        if isinstance(d, ast.ActionDecl):
            glob.bind(d, ActionLoc(glob.qualify(d), d, T.VoidType(), glob))
        elif isinstance(d, ast.ConstDecl) and isinstance(d.const_value, (int, bool)):
            glob.bind(d, ValueLoc(ex.const_json(d.const_value, d.type, d), d.type or T.IntType()))
        elif isinstance(d, ast.Instantiation) and isinstance(d.type, T.ExternType):
            glob.bind(d, declare_instance(ctx, d, glob))


def _bind_param(
    ctx: Ctx, p: ast.Parameter, htype: T.Type, mtype: T.Type, hdr: Loc, meta: Loc, std: HeaderLoc
) -> Loc:
    t = p.type
    assert t is not None
    ut = T.unwrap(t)
    if isinstance(ut, T.ExternType) and ut.name in ("packet_in", "packet_out"):
        return ExternLoc("packet", ut.name, ut)
    if T.same_type(t, htype):
        return hdr
    if T.same_type(t, mtype):
        return meta
    if isinstance(ut, T.StructType) and ut.name == "standard_metadata_t":
        return std
    raise unsupported(f"parameter {p.name} of type {t} of a V1Switch block", p)


def _controller_headers(ctx: Ctx) -> None:
    for d in ctx.program.decls:
        if isinstance(d, ast.StructLikeDecl) and d.kind == "header":
            name = ast.annotation_string(d.annotations, "controller_header")
            if name and isinstance(d.type, T.StructLikeType):
                fields = [
                    CPField(f.name, bits(f.type), cp_annotations(f.annotations), _ser_enum_name(ctx, f.type))
                    for f in d.type.fields
                ]
                anns = [a for a in cp_annotations(d.annotations) if a.name != "controller_header"]
                ctx.cp.controller_headers.append(CPControllerHeader(name, fields, anns))


def _ser_enum_name(ctx: Ctx, t: T.Type | None) -> str:
    """The name of a serializable enum type `t` (recorded for P4Info's type_info, as p4c does for
    packet-in/out fields of such a type); "" for any other type."""
    ut = T.unwrap(t) if t is not None else None
    if not isinstance(ut, T.SerEnumType):
        return ""
    name = ast.annotation_string(ut.decl.annotations, "name") if ut.decl is not None else None
    name = name or ut.name
    if name not in ctx.cp.serializable_enums:
        ctx.cp.serializable_enums[name] = CPSerEnum(name, ut.underlying.width, list(ut.members.items()))
    return name


def _end_of(source: str | Path, program: ast.Program) -> SourceLoc | None:
    """Where a missing top-level declaration is reported: the last line of the user's own file
    (not the first line of core.p4, where the program's text starts after preprocessing)."""
    path = str(source)
    last = None
    for d in program.decls:
        loc = getattr(d, "loc", None)
        if loc is not None and loc.file == path:
            last = loc
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return last or program.loc
    line = len(lines)
    while line > 1 and not lines[line - 1].strip():
        line -= 1
    return SourceLoc(path, max(line, 1), 1)
