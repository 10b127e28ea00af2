"""The verify/compute checksum controls: BMv2 has no pipeline for them, only a list of `checksums`,
each a calculation over a field list with a target field, a condition and whether it is verified in the
parser or updated before the deparser; so the controls may hold only the v1model checksum calls."""

from __future__ import annotations

from typing import Any

from p4kit.compiler import ast
from p4kit.compiler.backend import externs
from p4kit.compiler.backend.bmv2json import NameSpace
from p4kit.compiler.backend.context import Ctx, Scope, source_info, unsupported
from p4kit.compiler.backend.statements import StmtLowering
from p4kit.compiler.backend.storage import FieldLoc

JSON = dict[str, Any]

_CALLS = {
    "verify_checksum": (True, False),
    "verify_checksum_with_payload": (True, True),
    "update_checksum": (False, False),
    "update_checksum_with_payload": (False, True),
}


def lower_checksums(ctx: Ctx, decl: ast.ControlDecl, scope: Scope, names: NameSpace) -> None:
    def visit(s: Any) -> None:
        if isinstance(s, ast.BlockStatement):
            for x in s.stmts:
                visit(x)
        elif isinstance(s, ast.EmptyStatement):
            pass
        elif (
            isinstance(s, ast.MethodCallStatement)
            and s.call.call is not None
            and s.call.call.kind == "extern_function"
            and s.call.call.decl.name in _CALLS
        ):
            one(s.call)
        else:
            raise unsupported(
                f"{type(s).__name__} in a checksum control (only checksum calls are allowed)", s
            )

    def one(mce: ast.MethodCallExpression) -> None:
        c = mce.call
        assert c is not None
        verify, payload = _CALLS[c.decl.name]
        cond_e, data, target_e, algo_e = (c.args + [None] * 4)[:4]
        if data is None or target_e is None:
            raise unsupported("a checksum call without data or target", mce)
        sl = StmtLowering(ctx, scope)
        items = externs.data_items(sl, data)
        if sl.prims:
            raise unsupported("computed values in a checksum's data (use fields and constants)", data)
        inputs = externs.calc_inputs(items)
        if payload:
            inputs.append({"type": "payload", "value": None})
        algo = externs.HASH_ALGOS.get(externs.enum_name(algo_e))
        if algo is None:
            raise unsupported("this checksum algorithm", algo_e)
        calc = ctx.out.add_calculation("calc", algo, inputs)
        target = sl.ex.loc(target_e)
        if not isinstance(target, FieldLoc):
            raise unsupported("a checksum target that is not a header field", target_e)
        cond = sl.ex.cond(cond_e) if cond_e is not None else None
        if cond is not None and cond.get("type") == "bool":
            if not cond["value"]:
                return
            cond = None
        j: JSON = {"name": names.fresh("cksum"), "id": len(ctx.out.checksums)}
        si = source_info(mce)
        if si:
            j["source_info"] = si
        j.update(
            {
                "target": [target.header, target.name],
                "type": "generic",
                "calculation": calc,
                "verify": verify,
                "update": not verify,
                "if_cond": cond,
            }
        )
        ctx.out.checksums.append(j)

    if any(not isinstance(d, (ast.ConstDecl,)) for d in decl.locals):
        raise unsupported("local declarations in a checksum control", decl.locals[0])
    visit(decl.body)
