"""Name resolution, type inference and checking, and constant folding for P4_16 programs.

One pass over the declarations in order (P4 requires declaration before use; parser states are the
exception and are declared before their parser's bodies are checked). Each expression is typed bottom
up; integer literals without a width stay `int` until their context (the other operand, the assigned
location, the parameter) gives them a width, as the P4 spec prescribes. Calls are matched to their
callee's parameters (overloads by argument count and names), generic parameters are inferred by
unifying parameter types with argument types, and `out`/`inout` arguments must be l-values.

The results are stored on the AST (see the contract in ast.py).
"""

from __future__ import annotations

from typing import Any

from p4kit.compiler import ast
from p4kit.compiler import types as T  # noqa: N812
from p4kit.compiler.diagnostics import CompileError, SourceLoc, UnsupportedError
from p4kit.compiler.scopes import Scope
from p4kit.compiler.tc_calls import CallsMixin
from p4kit.compiler.tc_common import CheckerState, _err
from p4kit.compiler.tc_decls import DeclsMixin
from p4kit.compiler.tc_exprs import ExprsMixin
from p4kit.compiler.tc_stmts import StmtsMixin
from p4kit.compiler.tc_types import TypesMixin
from p4kit.compiler.tc_v1model import (
    check_block_bound_externs,
    check_direct_meters_have_tables,
    check_functions_called_from_parsers,
)


class Checker(DeclsMixin, StmtsMixin, ExprsMixin, CallsMixin, TypesMixin, CheckerState):
    """Checks one program (the parts live in the tc_* modules). Use `check_program`."""

    # ---------------------------------------------------------------------------------------------
    # Driver

    def run(self) -> None:
        p = self.program
        p.error_type = self.error_type
        p.match_kind_type = self.match_kind_type
        for d in p.decls:
            self.top_decl(d, self.globals)
        self.unused_generic_errors()
        main = self.globals.lookup("main")
        if isinstance(main, ast.Instantiation):
            if not isinstance(main.type, T.PackageType):
                raise _err(
                    f"main: expected a package instance (such as V1Switch(...) main;), not {main.type}", main
                )
            p.main = main
            check_block_bound_externs(p)
            check_direct_meters_have_tables(p)
            check_functions_called_from_parsers(p)

    def top_decl(self, d: Any, scope: Scope) -> None:
        if isinstance(d, ast.ErrorDecl):
            for i, m in enumerate(d.members):
                if m in self.error_type.members:
                    raise CompileError(f"duplicate declaration of error.{m}", member_loc(d, i))
                self.error_type.members.append(m)
        elif isinstance(d, ast.MatchKindDecl):
            for i, m in enumerate(d.members):
                if m in self.match_kind_type.members:
                    raise CompileError(f"duplicate declaration of match_kind {m}", member_loc(d, i))
                self.match_kind_type.members.append(m)
        elif isinstance(d, ast.StructLikeDecl):
            self.struct_decl(d, scope)
        elif isinstance(d, ast.EnumDecl):
            self.enum_decl(d, scope)
        elif isinstance(d, ast.TypedefDecl):
            t = self.resolve(d.type_ref, scope)
            d.type = T.NewType(d.name, t, d) if d.is_newtype else t
            scope.declare(d.name, d, d.loc)
        elif isinstance(d, ast.ConstDecl):
            self.const_decl(d, scope)
        elif isinstance(d, ast.ExternDecl):
            self.extern_decl(d, scope)
        elif isinstance(d, ast.ExternFunctionDecl):
            fs = self.generic_scope(scope, d.type_params, d)
            ret = self.resolve(d.return_type, fs)
            d.type = T.FunctionType(d.name, self.params(d.params, fs, "method"), list(d.type_params), d, ret)
            scope.declare(d.name, d, d.loc)
        elif isinstance(d, ast.FunctionDecl):
            self.function_decl(d, scope)
        elif isinstance(d, ast.ActionDecl):
            self.action_decl(d, scope)
        elif isinstance(d, ast.ControlTypeDecl) and (
            p := next((p for p in d.params if p.default is not None), None)
        ):
            # p4c's rule: a control type says what its implementations take, a default belongs to them
            raise _err(f"{p.name}: control type declarations cannot have parameters with default values", p)
        elif isinstance(d, ast.ParserTypeDecl):
            ps = self.generic_scope(scope, d.type_params, d)
            d.type = T.ParserType(d.name, self.params(d.params, ps, "parser"), list(d.type_params), d)
            scope.declare(d.name, d, d.loc)
        elif isinstance(d, ast.ControlTypeDecl):
            cs = self.generic_scope(scope, d.type_params, d)
            d.type = T.ControlType(d.name, self.params(d.params, cs, "control"), list(d.type_params), d)
            scope.declare(d.name, d, d.loc)
        elif isinstance(d, ast.PackageTypeDecl):
            ps = self.generic_scope(scope, d.type_params, d)
            d.type = T.PackageType(d.name, self.params(d.params, ps, "package"), list(d.type_params), d)
            scope.declare(d.name, d, d.loc)
        elif isinstance(d, ast.ParserDecl):
            self.parser_decl(d, scope)
        elif isinstance(d, ast.ControlDecl):
            self.control_decl(d, scope)
        elif isinstance(d, ast.Instantiation):
            self.instantiation(d, scope)
        elif isinstance(d, ast.TableDecl):
            raise _err("a table must be declared inside a control", d)
        else:
            raise UnsupportedError(f"declaration {type(d).__name__} at top level", getattr(d, "loc", None))


def check_program(program: ast.Program) -> None:
    """Check `program` in place; raises CompileError for the first error found."""
    Checker(program).run()


def member_loc(d: ast.ErrorDecl | ast.MatchKindDecl, i: int) -> SourceLoc | None:
    """Where the i-th name of an `error` or `match_kind` list is (the declaration's start if unknown)."""
    return d.member_locs[i] if i < len(d.member_locs) else d.loc
