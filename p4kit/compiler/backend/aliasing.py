"""When may an `out`/`inout` argument be passed by reference, and when must it be copied?

Why: P4 calls are copy-in/copy-out. The back end inlines every action and function, and binding an
`inout` parameter straight to the argument's storage saves two copies per parameter; that is exact
unless the callee can see the argument's storage some other way. Then P4 requires the old value:

    action a(inout bit<8> v) { v = 9; hdr.h.c = hdr.h.a; }   a(hdr.h.a);   // c gets the old a

or two parameters name the same storage (`f(x, x)`: the last copy-out wins). This module answers
conservatively, from the syntax: an argument is copied when its root variable (`hdr` in `hdr.h.a`)
is mentioned in the callee's body (or the body of anything it calls) or is the root of another
`out`/`inout` argument of the same call.
"""

from __future__ import annotations

from typing import Any

from p4kit.compiler import ast

_SKIP = {"decl", "type", "loc", "annotations", "target_type", "type_ref", "type_args", "resolved"}


def root_decl(e: Any) -> Any:
    """The declaration an lvalue expression starts from (`hdr` in `hdr.h.a[3:0]`), or None."""
    while True:
        if isinstance(e, ast.PathExpression):
            return e.decl
        if isinstance(e, (ast.Member, ast.ArrayIndex, ast.Slice)):
            e = e.expr
            continue
        return None


def referenced_decls(body: Any, seen: set[int] | None = None) -> set[int]:
    """ids of the declarations a statement tree names, including inside the actions and functions
    it calls (whose bodies may name the caller's parameters and locals too)."""
    seen = set() if seen is None else seen
    out: set[int] = set()

    def walk(n: Any) -> None:
        if isinstance(n, list):
            for x in n:
                walk(x)
            return
        if not isinstance(n, ast.Node):
            return
        if isinstance(n, ast.PathExpression) and n.decl is not None:
            out.add(id(n.decl))
        if isinstance(n, ast.MethodCallExpression) and n.call is not None:
            callee = n.call.decl
            if isinstance(callee, (ast.ActionDecl, ast.FunctionDecl)) and id(callee) not in seen:
                seen.add(id(callee))
                out.update(referenced_decls(callee.body, seen))
        for k, v in vars(n).items():
            if k not in _SKIP and isinstance(v, (ast.Node, list)):
                walk(v)

    walk(body)
    return out


def params_to_copy(callee: ast.ActionDecl | ast.FunctionDecl, args: list[Any]) -> set[int]:
    """Indices of the callee's `out`/`inout` parameters whose argument must be copied in and out."""
    writes = [
        i
        for i, p in enumerate(callee.params)
        if p.direction in ("out", "inout") and i < len(args) and args[i] is not None
    ]
    if not writes:
        return set()
    names = referenced_decls(callee.body, {id(callee)})
    roots = {i: root_decl(args[i]) for i in writes}
    out: set[int] = set()
    for i in writes:
        r = roots[i]
        if r is None or id(r) in names or any(j != i and roots[j] is r for j in writes):
            out.add(i)
    return out
