"""The deparser: BMv2 deparsers are just an emit order (invalid headers are skipped at run time), so the
body must be a sequence of `packet.emit(...)` calls; structs, stacks and unions expand in field order."""

from __future__ import annotations

from typing import Any

from p4kit.compiler import ast
from p4kit.compiler.backend.context import Ctx, Scope, source_info, unsupported
from p4kit.compiler.backend.expressions import ExprLowering
from p4kit.compiler.backend.storage import HeaderLoc, Loc, StackLoc, StructLoc, UnionLoc

JSON = dict[str, Any]


def lower_deparser(ctx: Ctx, decl: ast.ControlDecl, scope: Scope) -> JSON:
    order: list[str] = []
    ex = ExprLowering(ctx, scope)

    def visit(s: Any) -> None:
        if isinstance(s, ast.BlockStatement):
            for x in s.stmts:
                visit(x)
        elif isinstance(s, ast.EmptyStatement):
            pass
        elif isinstance(s, ast.MethodCallStatement):
            c = s.call.call
            if c is None or c.kind != "extern_method" or c.decl is None or c.decl.name != "emit":
                raise unsupported("a statement other than emit() in a deparser", s)
            a = c.args[0]
            assert a is not None
            expand(ex.loc(a), s)
        else:
            raise unsupported(f"{type(s).__name__} in a deparser (BMv2 deparsers only emit)", s)

    def expand(loc: Loc, node: ast.Node) -> None:
        if isinstance(loc, HeaderLoc):
            order.append(loc.name)
        elif isinstance(loc, StackLoc):
            for e in loc.elems:
                expand(e, node)
        elif isinstance(loc, UnionLoc):
            for h in loc.members.values():
                order.append(h.name)
        elif isinstance(loc, StructLoc):
            for sub in loc.fields.values():
                if isinstance(sub, (HeaderLoc, StackLoc, UnionLoc, StructLoc)):
                    expand(sub, node)
        else:
            raise unsupported("emit() of a value that is not a header", node)

    if decl.locals:
        raise unsupported("local declarations in a deparser", decl.locals[0])
    visit(decl.body)
    j: JSON = {"name": "deparser", "id": len(ctx.out.deparsers)}
    si = source_info(decl)
    if si:
        j["source_info"] = si
    j.update({"order": order, "primitives": []})
    return j
