"""Source text of expressions as p4c prints them: table key names in JSON and P4Info are the key
expression's text (e.g. "hdr.ipv4.dstAddr", "hdr.ipv4.$valid$" for isValid()) unless a @name annotation says
otherwise, and users (STF files, P4Runtime clients) address key fields by these names."""

from __future__ import annotations

from p4kit.compiler import ast


def expr_text(e: ast.Expression) -> str:
    if isinstance(e, ast.PathExpression):
        return ("." if e.is_global else "") + e.name
    if isinstance(e, ast.Member):
        return f"{expr_text(e.expr)}.{e.member}"
    if isinstance(e, ast.ArrayIndex):
        return f"{expr_text(e.expr)}[{expr_text(e.index)}]"
    if isinstance(e, ast.Slice):
        return f"{expr_text(e.expr)}[{e.hi_value}:{e.lo_value}]"
    if isinstance(e, ast.Constant):
        prefix = ""
        if e.width is not None:
            prefix = f"{e.width}{'s' if e.signed else 'w'}"
        if e.base == 16:
            return f"{prefix}0x{e.value:x}" if e.value >= 0 else f"-{prefix}0x{-e.value:x}"
        return f"{prefix}{e.value}"
    if isinstance(e, ast.BoolLiteral):
        return "true" if e.value else "false"
    if isinstance(e, ast.MethodCallExpression):
        m = e.method
        if isinstance(m, ast.Member) and m.member == "isValid" and not e.args:
            return f"{expr_text(m.expr)}.$valid$"  # p4c names validity keys after the hidden field
        args = ", ".join(expr_text(a.value) for a in e.args)
        return f"{expr_text(m)}({args})"
    if isinstance(e, ast.BinaryOp):
        return f"{expr_text(e.left)} {e.op} {expr_text(e.right)}"
    if isinstance(e, ast.UnaryOp):
        return f"{e.op}{expr_text(e.expr)}"
    if isinstance(e, ast.Cast):
        t = e.type
        return f"({t}){expr_text(e.expr)}"
    if isinstance(e, ast.TypeNameExpression):
        return str(e.type_ref.resolved) if e.type_ref.resolved is not None else "type"
    if isinstance(e, ast.Mux):
        return f"{expr_text(e.cond)} ? {expr_text(e.then)} : {expr_text(e.else_)}"
    return type(e).__name__
