"""Type checker, part 3: statements (assignments, calls, if, switch, loops, return/exit) and l-values."""

from __future__ import annotations

from typing import Any

from p4kit.compiler import ast
from p4kit.compiler import types as T  # noqa: N812
from p4kit.compiler.diagnostics import UnsupportedError
from p4kit.compiler.scopes import Scope
from p4kit.compiler.tc_common import (
    _BOOL,
    CheckerState,
    _err,
    refuse_default_values,
)


class StmtsMixin(CheckerState):
    """Checks statements; knows which expressions are writable locations."""

    # ---------------------------------------------------------------------------------------------
    # Statements

    def block(self, b: ast.BlockStatement, scope: Scope) -> None:
        s = Scope(scope, "block")
        for st in b.stmts:
            self.statement_or_decl(st, s)

    def statement_or_decl(self, st: Any, scope: Scope) -> None:
        if isinstance(st, ast.VariableDecl):
            t = self.resolve(st.type_ref, scope)
            st.type = t
            if isinstance(T.unwrap(t), (T.ExternType, T.CallableType, T.VoidType)):
                raise _err(f"a variable cannot have type {t}", st)
            if isinstance(t, T.ListType):
                raise UnsupportedError(
                    f"variables of type {t} (a list is an extern constructor's argument)", st.loc
                )
            if isinstance(T.unwrap(t), (T.IntType, T.StringType)):
                # p4c: "Cannot declare variables with type int" (int and string exist only at
                # compile time; a variable needs a width)
                raise _err(f"{st.name}: cannot declare variables with type {t} (use bit<N> or int<N>)", st)
            if st.init is not None:
                self.expr(st.init, scope, t)
                self.coerce(st.init, t, f"initializer of {st.name}")
            scope.declare(st.name, st, st.loc)
        elif isinstance(st, ast.ConstDecl):
            self.const_decl(st, scope)
        elif isinstance(st, ast.Instantiation):
            if scope.kind not in ("global", "control", "parser"):
                if scope.enclosing("function", "action") is not None:
                    where = "a function or action"
                elif scope.enclosing("state") is not None:
                    where = "a parser state"
                else:
                    where = "a control's 'apply' block"
                raise _err(
                    f"{st.name}: instances cannot be declared in {where}; "
                    "declare it among the parser's or control's locals",
                    st,
                )
            self.instantiation(st, scope)
        elif isinstance(st, (ast.ActionDecl, ast.TableDecl, ast.ValueSetDecl, ast.FunctionDecl)):
            self.local_decl(st, scope)
        elif isinstance(st, ast.Statement):
            self.statement(st, scope)
        else:
            raise UnsupportedError(f"{type(st).__name__} here", getattr(st, "loc", None))

    def statement(self, st: ast.Statement, scope: Scope) -> None:
        if isinstance(st, ast.AssignmentStatement):
            lt = self.expr(st.lhs, scope)
            self.check_lvalue(st.lhs, "assign to")
            self.expr(st.rhs, scope, lt)
            self.coerce(st.rhs, lt, "assignment")
        elif isinstance(st, ast.MethodCallStatement):
            self.expr(st.call, scope)
        elif isinstance(st, ast.BlockStatement):
            self.block(st, scope)
        elif isinstance(st, ast.IfStatement):
            ct = self.expr(st.cond, scope, _BOOL)
            if not isinstance(ct, T.BoolType):
                raise _err(f"the condition of 'if' must be a bool, not {ct}", st.cond)
            self.statement_scoped(st.then, scope)
            if st.else_ is not None:
                self.statement_scoped(st.else_, scope)
        elif isinstance(st, ast.SwitchStatement):
            self.switch(st, scope)
        elif isinstance(st, ast.ReturnStatement):
            rt = self.return_type
            if rt is None:
                raise _err("'return' outside a function, action or control", st)
            if st.expr is None:
                if not isinstance(rt, T.VoidType):
                    raise _err(f"'return' needs a value of type {rt}", st)
            else:
                if isinstance(rt, T.VoidType):
                    raise _err("'return' with a value in a function that returns void", st.expr)
                refuse_default_values(st.expr, "a return statement")
                self.expr(st.expr, scope, rt)
                self.coerce(st.expr, rt, "return value")
        elif isinstance(st, ast.ExitStatement):
            if self.in_parser:
                raise _err("'exit' cannot be used in a parser", st)
            if any(isinstance(b, ast.FunctionDecl) for b in self.bodies):
                # p4c (ValidateParsedProgram) and the spec: a function returns to its caller; `exit`
                # belongs to controls and their actions
                raise _err("exit statements not allowed in functions", st)
        elif isinstance(st, ast.EmptyStatement):
            pass
        elif isinstance(st, (ast.ForStatement, ast.ForInStatement)):
            self.loop(st, scope)
        elif isinstance(st, (ast.BreakStatement, ast.ContinueStatement)):
            if not self.loop_depth:
                word = "break" if isinstance(st, ast.BreakStatement) else "continue"
                raise _err(f"'{word}' outside a loop", st)
        else:
            raise UnsupportedError(f"statement {type(st).__name__}", st.loc)

    def loop(self, st: ast.ForStatement | ast.ForInStatement, scope: Scope) -> None:
        if self.in_parser:
            raise _err("loops cannot be used in a parser", st)
        s = Scope(scope, "block")
        if isinstance(st, ast.ForStatement):
            for x in st.init:
                self.statement_or_decl(x, s)
            if st.cond is not None:
                ct = self.expr(st.cond, s, _BOOL)
                if not isinstance(ct, T.BoolType):
                    raise _err(f"the condition of 'for' must be a bool, not {ct}", st.cond)
            for u in st.updates:
                self.statement(u, s)
        else:
            vt = self.resolve(st.var.type_ref, s)
            st.var.type = vt
            c = st.collection
            if isinstance(c, ast.BinaryOp) and c.op == "..":
                for bound in (c.left, c.right):
                    self.expr(bound, s, vt)
                    self.coerce(bound, vt, "loop range bound")
                c.type = T.SetType(vt)
            else:
                ctype = T.unwrap(self.expr(c, s))
                elem = ctype.elem if isinstance(ctype, T.HeaderStackType) else None
                if isinstance(ctype, T.TupleType) and ctype.elems:
                    elem = ctype.elems[0]
                if elem is None:
                    raise _err(f"cannot iterate over a value of type {ctype}", c)
                if not T.same_type(elem, vt):
                    raise _err(f"type mismatch: loop variable has type {vt}, the elements {elem}", st.var)
            s.declare(st.var.name, st.var, st.var.loc)
        self.loop_depth += 1
        try:
            self.statement_scoped(st.body, s)
        finally:
            self.loop_depth -= 1

    def statement_scoped(self, st: Any, scope: Scope) -> None:
        if isinstance(st, ast.BlockStatement):
            self.block(st, scope)
        else:
            self.statement_or_decl(st, Scope(scope, "block"))

    def switch(self, st: ast.SwitchStatement, scope: Scope) -> None:
        if scope.enclosing("action") is not None:
            # p4c's front end (EliminateSwitch) rejects them for every target
            raise _err("switch statements are not supported in actions (use if/else)", st)
        saved = self.__dict__.get("_switch_expr")
        self.__dict__["_switch_expr"] = st.expr  # the one place where action_run may appear
        try:
            t = self.expr(st.expr, scope)
        finally:
            self.__dict__["_switch_expr"] = saved
        seen: set[Any] = set()
        default_seen = False
        for i, c in enumerate(st.cases):
            if c.body is None and i == len(st.cases) - 1:
                raise _err("the last switch label needs a block (fall-through to nothing)", c)
            if default_seen and not isinstance(c.label, ast.DefaultExpression):
                label = c.label.name if isinstance(c.label, ast.PathExpression) else "a label"
                line = f" (line {c.loc.line})" if c.loc is not None else ""
                raise _err(f"switch label {label}{line} follows the 'default' label, which must be last", st)
            if isinstance(c.label, ast.DefaultExpression):
                if default_seen:
                    # at the switch, as p4c reports it ("switch has multiple 'default' labels")
                    line = f" (again on line {c.loc.line})" if c.loc is not None else ""
                    raise _err(f"switch has multiple 'default' labels{line}", st)
                default_seen = True
                c.label.type = t
            elif isinstance(t, T.ActionEnumType):
                lab = c.label
                if not isinstance(lab, ast.PathExpression):
                    raise _err("a switch label on action_run must be an action name", lab)
                found = None
                for r in t.table.actions:
                    if r.expr.name == lab.name:
                        found = r.action
                if found is None:
                    raise _err(f"'{lab.name}' is not an action of table {t.table.name}", lab)
                lab.decl = found
                lab.type = t
                if id(found) in seen:
                    raise _err(f"duplicate switch label {lab.name}", lab)
                seen.add(id(found))
            else:
                u = T.unwrap(t)
                if not isinstance(u, (T.BitsType, T.IntType, T.EnumType, T.SerEnumType, T.ErrorType)):
                    raise _err(f"cannot switch on a value of type {t}", st.expr)
                self.expr(c.label, scope, t)
                self.coerce(c.label, t, "switch label")
                if not self.is_constant_expr(c.label):
                    raise _err("a switch label must be a compile-time constant", c.label)
                key = c.label.const_value if c.label.const_value is not None else self.label_key(c.label)
                if key in seen:
                    raise _err("duplicate switch label", c.label)
                seen.add(key)
            if c.body is not None:
                self.block(c.body, scope)

    def label_key(self, e: ast.Expression) -> Any:
        if isinstance(e, ast.Member):
            return ("member", e.member)
        return id(e)

    # ---------------------------------------------------------------------------------------------
    # L-values

    def check_lvalue(self, e: ast.Expression, what: str) -> None:
        """`e` must denote a writable location; `what` is the use, e.g. "assign to" or
        "pass as the out argument 'x' of f" (it starts the error message)."""
        problem = self.lvalue_problem(e)
        if problem is not None:
            node, why = problem
            raise _err(f"cannot {what} {why}", node)

    def lvalue_problem(self, e: ast.Expression) -> tuple[Any, str] | None:
        if isinstance(e, ast.PathExpression):
            d = e.decl
            if isinstance(d, ast.VariableDecl):
                return None
            if isinstance(d, ast.Parameter):
                if d.direction in ("out", "inout"):
                    return None
                kind = "an 'in' parameter" if d.direction == "in" else "a directionless parameter"
                return e, f"'{e.name}': it is {kind} (read-only, not an l-value)"
            if isinstance(d, ast.ConstDecl):
                return e, f"'{e.name}': it is a constant (read-only, not an l-value)"
            return e, f"'{e.name}': it is not a variable (not an l-value)"
        if isinstance(e, ast.Member):
            if e.kind == "field" or (e.kind == "stack_elem_prop" and e.member in ("next", "last")):
                return self.lvalue_problem(e.expr)
            return e, "a value that is not an l-value (a variable, field or out/inout parameter is needed)"
        if isinstance(e, (ast.ArrayIndex, ast.Slice)):
            return self.lvalue_problem(e.expr)
        if isinstance(e, ast.DefaultExpression) and e.is_dontcare:
            return None
        return e, "a value that is not an l-value (a variable, field or out/inout parameter is needed)"
