"""Shared pieces of the type checker: base types, operator classes, the error helper and the state
that all checker mixins (tc_types, tc_decls, tc_stmts, tc_exprs, tc_calls) work on."""

from __future__ import annotations

import dataclasses
from typing import Any

from p4kit.compiler import ast
from p4kit.compiler import types as T  # noqa: N812
from p4kit.compiler.diagnostics import CompileError
from p4kit.compiler.scopes import Scope

_BOOL = T.BoolType()
_INT = T.IntType()
_VOID = T.VoidType()
_STRING = T.StringType()
_DONTCARE = T.DontCareType()
_STATE = T.StateType()
_BIT32 = T.BitsType(32)

_ARITH = {"+", "-", "*", "/", "%", "|+|", "|-|", "&", "|", "^"}
_COMPARE = {"<", ">", "<=", ">="}
_EQUALITY = {"==", "!="}
_HEADER_METHODS = {"isValid", "setValid", "setInvalid"}
_SIZE_METHODS = {"minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes"}


# p4c's own limits (DefaultP4CConfiguration): no bit<N>/int<N>/varbit<N> wider than 2048 bits and no
# header stack of more than 256 elements. Without them `bit<2147483648>` wrote a 1.6 GB JSON.
MAX_WIDTH = 2048
MAX_STACK_SIZE = 256
# an unsized `int` shift folds to a number of this many bits at most (p4c folds with a bounded width too)
MAX_INT_SHIFT = 1 << 16


def _err(msg: str, node: Any) -> CompileError:
    return CompileError(msg, getattr(node, "loc", None))


def check_not_recursive(state: CheckerState, decl: Any, call: Any) -> None:
    """P4 has no recursion: a call from a function's or action's own body (or from a body it is
    nested in) is an error at the call, instead of a back end that inlines forever."""
    if any(d is decl for d in state.bodies):
        what = "action" if isinstance(decl, ast.ActionDecl) else "function"
        raise _err(f"{decl.name}: recursive {what} call (P4 {what}s cannot call themselves)", call)


def uses_default_values(e: Any) -> bool:
    """Whether expression `e` is or holds a `...` default-value initializer (`{1, ...}`, `{a = 1, ...}`)."""
    if isinstance(e, ast.DotsExpression):
        return True
    if isinstance(e, ast.ListExpression):
        return e.dots or any(uses_default_values(x) for x in e.elems)
    if isinstance(e, ast.StructExpression):
        return e.dots or any(uses_default_values(f.value) for f in e.fields)
    return False


def refuse_default_values(e: Any, where: str) -> None:
    """p4c fills `...` only where a value initializes a location (a declaration or an assignment)."""
    if isinstance(e, (ast.ListExpression, ast.StructExpression)) and uses_default_values(e):
        raise _err(f"default values {{...}} cannot be used in {where}", e)


def check_width(width: int, text: str, node: Any) -> None:
    """p4c's message for a type wider than it supports; `text` is the type as written (bit<4096>)."""
    if width > MAX_WIDTH:
        raise _err(f"{text}: the compiler only supports widths up to {MAX_WIDTH} (as p4c)", node)


class CheckerState:
    """The state of one check: program-wide types, the global scope and where we are."""

    def __init__(self, program: ast.Program) -> None:
        self.program = program
        self.error_type = T.ErrorType()
        self.match_kind_type = T.MatchKindType()
        self.globals = Scope(None, "global")
        self.in_action = 0  # > 0 inside an action or function body (no table/control apply there)
        self.return_type: T.Type | None = None  # what `return` must give, None where it is not allowed
        self.in_parser = False
        self.loop_depth = 0
        self.table: ast.TableDecl | None = None  # the table whose properties are being checked
        self.bodies: list[Any] = []  # the functions and actions whose bodies are being checked

    # The mixins call each other's methods through `self`; these stubs document the main entry points.
    def expr(self, e: ast.Expression, scope: Scope, expected: T.Type | None = None) -> T.Type:
        raise NotImplementedError

    def resolve(self, ref: ast.TypeRef, scope: Scope) -> T.Type:
        raise NotImplementedError

    def coerce(self, e: ast.Expression, target: T.Type, what: str) -> None:
        raise NotImplementedError

    def statement_or_decl(self, st: Any, scope: Scope) -> None:
        raise NotImplementedError


def run_time_name(e: Any) -> ast.Expression | None:
    """The first part of `e` that is only known at run time: a parameter with a direction, a
    variable or a call (a constructor parameter or a constant is known when the program is
    compiled)."""
    if isinstance(e, ast.MethodCallExpression):
        return e
    if isinstance(e, ast.PathExpression):
        d = e.decl
        if isinstance(d, ast.VariableDecl) or (isinstance(d, ast.Parameter) and d.direction):
            return e
        return None
    if isinstance(e, ast.Node):
        for f in dataclasses.fields(e):
            if f.name in ("loc", "type", "decl", "call", "ctor", "ctor_call", "target_type"):
                continue
            v = getattr(e, f.name)
            for x in v if isinstance(v, list) else [v]:
                if isinstance(x, ast.Node) and (hit := run_time_name(x)) is not None:
                    return hit
    return None
