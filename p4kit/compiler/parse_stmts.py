"""Parser, part 3: tables and statements."""

from __future__ import annotations

from typing import Any

from p4kit.compiler import ast
from p4kit.compiler.parse_base import (
    _COMPOUND,
    ParserBase,
)


class StmtParser(ParserBase):
    """Tables (with keys, actions, entries) and statements (with the for-loops of P4 1.2.4)."""

    # ---------------------------------------------------------------------------------------------
    # Tables

    def table_decl(self, annotations: list[ast.Annotation]) -> ast.TableDecl:
        self.expect("table")
        n = self.name("a table name")
        self.declare_value(n.text)  # a local name shadows a type of that name
        if self.at_punct("(") and self.peek().text == ")":
            self.i += 2  # `table t() {`: the empty parameter list of early P4_16 programs
        table = ast.TableDecl(n.text, annotations=annotations, loc=self.loc(n))
        self.expect("{")
        while not self.accept("}"):
            pa = self.annotations()
            is_const = bool(self.accept("const"))
            pt = self.tok
            if pt.kind not in ("ID", "KW"):
                self.error_expected("a table property")
            self.i += 1
            pname = pt.text
            loc = self.loc(pt)
            if pname == "key":
                self.expect("=")
                self.expect("{")
                keys: list[ast.KeyElement] = []
                while not self.accept("}"):
                    kt = self.tok
                    e = self.expression()
                    self.expect(":", "':'")
                    mk = self.name("a match kind")
                    ka = self.annotations()
                    self.expect(";")
                    keys.append(ast.KeyElement(e, mk.text, ka, loc=self.loc(kt)))
                table.keys = keys
                prop = ast.TableProperty(pname, keys, is_const, pa, loc=loc)
            elif pname == "actions":
                self.expect("=")
                self.expect("{")
                refs: list[ast.ActionRef] = []
                while not self.accept("}"):
                    refs.append(self.action_ref())
                    self.expect(";")
                table.actions = refs
                prop = ast.TableProperty(pname, refs, is_const, pa, loc=loc)
            elif pname == "default_action":
                self.expect("=")
                ref = self.action_ref()
                self.expect(";")
                table.default_action = ref
                table.default_action_const = is_const
                prop = ast.TableProperty(pname, ref, is_const, pa, loc=loc)
            elif pname == "entries":
                self.expect("=")
                self.expect("{")
                entries: list[ast.Entry] = []
                while not self.accept("}"):
                    entries.append(self.table_entry(is_const))
                table.entries = entries
                table.entries_const = is_const
                prop = ast.TableProperty(pname, entries, is_const, pa, loc=loc)
            else:
                self.expect("=")
                e = self.expression()
                self.expect(";")
                prop = ast.TableProperty(pname, e, is_const, pa, loc=loc)
            table.properties.append(prop)
        return table

    def action_ref(self) -> ast.ActionRef:
        annotations = self.annotations()
        t = self.tok
        is_global = bool(self.accept("."))
        n = self.name("an action name")
        path = ast.PathExpression(n.text, is_global, loc=self.loc(t))
        args = None
        if self.at_punct("("):
            args = self.arguments()
        return ast.ActionRef(path, args, annotations, loc=self.loc(t))

    def table_entry(self, table_const: bool) -> ast.Entry:
        annotations = self.annotations()
        start = self.tok
        is_const = bool(self.accept("const")) or table_const
        priority = None
        if self.tok.kind == "ID" and self.tok.text == "priority" and self.peek().text == "=":
            self.i += 2
            priority = self.expression()
            self.expect(":")
        ks = self.keyset_expression()
        keys = ks.elems if isinstance(ks, ast.ListExpression) else [ks]
        self.expect(":", "':'")
        action = self.action_ref()
        annotations += self.annotations()
        self.expect(";")
        return ast.Entry(keys, action, priority, is_const, annotations, loc=self.loc(start))

    # ---------------------------------------------------------------------------------------------
    # Statements

    def block(self) -> ast.BlockStatement:
        start = self.expect("{")
        stmts: list[Any] = []
        self.push_types([])
        try:
            while not self.accept("}"):
                if self.tok.kind == "EOF":
                    self.error_expected("'}'")
                stmts.append(self.statement_or_decl())
        finally:
            self.pop_types()
        return ast.BlockStatement(stmts, loc=self.loc(start))

    def statement_or_decl(self) -> Any:
        annotations = self.annotations()
        t = self.tok
        if t.kind == "KW" and t.text == "const":
            return self.const_decl(annotations)
        if self.at_type_start() and not (t.kind == "KW" and t.text == "error" and self.peek().text == "."):
            # `T x;`, `T x = e;`, `T(args) x;` - but a type name followed by '.' is an expression
            nxt = self.peek()
            if not (nxt.kind == "PUNCT" and nxt.text == "." and t.kind == "ID"):
                return self.local_declaration(annotations, "a statement")
        s = self.statement()
        if isinstance(s, ast.BlockStatement) and annotations:
            s.annotations = annotations
        return s

    def statement(self) -> ast.Statement:
        t = self.tok
        loc = self.loc(t)
        if t.kind == "PUNCT":
            if t.text == "{":
                return self.block()
            if t.text == ";":
                self.i += 1
                return ast.EmptyStatement(loc=loc)
        if t.kind == "KW":
            if t.text == "if":
                self.i += 1
                self.expect("(")
                cond = self.expression()
                self.expect(")")
                then = self.statement_in_branch()
                else_ = None
                if self.accept("else"):
                    else_ = self.statement_in_branch()
                return ast.IfStatement(cond, then, else_, loc=loc)
            if t.text == "switch":
                return self.switch_statement()
            if t.text == "exit":
                self.i += 1
                self.expect(";")
                return ast.ExitStatement(loc=loc)
            if t.text == "return":
                self.i += 1
                e = None
                if not self.at_punct(";"):
                    e = self.expression()
                self.expect(";")
                return ast.ReturnStatement(e, loc=loc)
        if t.kind == "ID" and self.peek().kind == "ID" and self.peek(2).text in (";", "=", "("):
            # `Name x;` where Name is not a type in scope
            self.error(f"unknown type '{t.text}' (no type of that name is declared)")
        if (
            t.kind == "ID"
            or (t.kind == "KW" and t.text in ("this", "error"))
            or (t.kind == "PUNCT" and t.text == ".")
        ):
            if t.kind == "ID" and t.text == "for" and self.peek().text == "(":
                return self.for_statement()
            if t.kind == "ID" and t.text in ("break", "continue") and self.peek().text == ";":
                self.i += 2
                return ast.BreakStatement(loc=loc) if t.text == "break" else ast.ContinueStatement(loc=loc)
            save = self.i
            e = self.expression()
            if self.accept("="):
                rhs = self.expression()
                self.expect(";")
                return ast.AssignmentStatement(e, rhs, loc=loc)
            op = self.compound_assignment_op()
            if op is not None:
                # `x op= e` means `x = x op e`; the target is parsed a second time to get its own nodes
                end = self.i
                self.i = save
                target = _share_calls(e, self.expression())
                self.i = end
                rhs = self.expression()
                self.expect(";")
                return ast.AssignmentStatement(e, ast.BinaryOp(op, target, rhs, loc=loc), loc=loc)
            if isinstance(e, ast.MethodCallExpression):
                self.expect(";")
                return ast.MethodCallStatement(e, loc=loc)
            self.error_expected("'=' or '('")
        self.error_expected("a statement")

    def for_statement(self) -> ast.Statement:
        """`for (init; cond; updates) stmt` or `for (T x in collection) stmt`."""
        start = self.tok
        loc = self.loc(start)
        self.i += 1  # for
        self.expect("(")
        self.push_types([])
        try:
            annotations = self.annotations()
            if self.at_type_start():
                save = self.i
                tref = self.speculate(self.type_ref)
                if tref is not None and self.tok.kind == "ID" and self.peek().text == "in":
                    n = self.name()
                    self.declare_value(n.text)
                    self.i += 1  # in
                    coll = self.expression()
                    if self.at_punct(".."):
                        op = self.tok
                        self.i += 1
                        coll = ast.BinaryOp("..", coll, self.expression(), loc=self.loc(op))
                    self.expect(")")
                    var = ast.VariableDecl(n.text, tref, None, annotations=annotations, loc=self.loc(n))
                    body = self.statement_in_branch()
                    return ast.ForInStatement(var, coll, body, annotations, loc=loc)
                self.i = save
            init: list[Any] = []
            while not self.at_punct(";"):
                tref = None
                if self.at_type_start():
                    save = self.i
                    tref = self.speculate(self.type_ref)
                    if tref is None or self.tok.kind != "ID":
                        tref = None
                        self.i = save
                if tref is not None:
                    n = self.name("a variable name")
                    self.declare_value(n.text)
                    value = None
                    if self.accept("="):
                        value = self.expression()
                    init.append(ast.VariableDecl(n.text, tref, value, loc=self.loc(n)))
                else:
                    init.append(self.simple_statement())
                if not self.accept(","):
                    break
            self.expect(";")
            cond = None if self.at_punct(";") else self.expression()
            self.expect(";")
            updates: list[ast.Statement] = []
            while not self.at_punct(")"):
                updates.append(self.simple_statement())
                if not self.accept(","):
                    break
            self.expect(")", "',' or ')'")
            body = self.statement_in_branch()
            return ast.ForStatement(init, cond, updates, body, annotations, loc=loc)
        finally:
            self.pop_types()

    def simple_statement(self) -> ast.Statement:
        """An assignment (also `op=`) or a call, without the final ';' (in for-loop headers)."""
        t = self.tok
        loc = self.loc(t)
        save = self.i
        e = self.expression()
        if self.accept("="):
            return ast.AssignmentStatement(e, self.expression(), loc=loc)
        op = self.compound_assignment_op()
        if op is not None:
            end = self.i
            self.i = save
            target = _share_calls(e, self.expression())
            self.i = end
            return ast.AssignmentStatement(e, ast.BinaryOp(op, target, self.expression(), loc=loc), loc=loc)
        if isinstance(e, ast.MethodCallExpression):
            return ast.MethodCallStatement(e, loc=loc)
        self.error_expected("'=' or '('")

    def compound_assignment_op(self) -> str | None:
        """At `+=`, `<<=`, `|+|=` ...: consume it and return the operator, else None."""
        t = self.tok
        if t.kind != "PUNCT":
            return None
        nxt = self.peek()
        if t.text == ">" and nxt.text == ">=" and nxt.adjacent:
            self.i += 2
            return ">>"
        if (
            t.text == ">"
            and nxt.text == ">"
            and nxt.adjacent
            and self.peek(2).text == "="
            and self.peek(2).adjacent
        ):
            self.i += 3
            return ">>"
        if t.text in _COMPOUND and nxt.text == "=" and nxt.adjacent:
            self.i += 2
            return t.text
        return None

    def statement_in_branch(self) -> ast.Statement:
        # A declaration cannot be the whole branch of an if; a block may carry annotations (@likely).
        annotations = self.annotations()
        st = self.statement()
        if annotations and isinstance(st, ast.BlockStatement):
            st.annotations = annotations
        return st

    def switch_statement(self) -> ast.SwitchStatement:
        start = self.expect("switch")
        self.expect("(")
        e = self.expression()
        self.expect(")")
        self.expect("{")
        cases: list[ast.SwitchCase] = []
        while not self.accept("}"):
            t = self.tok
            if t.kind == "KW" and t.text == "default":
                self.i += 1
                label: ast.Expression = ast.DefaultExpression(loc=self.loc(t))
            else:
                label = self.expression()
            self.expect(":", "':'")
            body = None
            if self.at_punct("{"):
                body = self.block()
            cases.append(ast.SwitchCase(label, body, loc=self.loc(t)))
        return ast.SwitchStatement(e, cases, loc=self.loc(start))


def _share_calls(target: Any, copy: Any) -> Any:
    """The second parse of a compound assignment's target, with each call in it replaced by the same
    node as in the target: `hs[f(x)].v += 1` evaluates `f(x)` once (P4 evaluates the left-hand side
    of `op=` once, as p4c does), so the value read and the element written are the same one, and the
    lowering, which evaluates a call node once, sees one call."""
    if isinstance(copy, ast.MethodCallExpression) and isinstance(target, ast.MethodCallExpression):
        return target
    if isinstance(copy, list) and isinstance(target, list) and len(copy) == len(target):
        return [_share_calls(t, c) for t, c in zip(target, copy, strict=True)]
    if isinstance(copy, ast.Node) and type(copy) is type(target):
        for name, value in vars(copy).items():
            if isinstance(value, (ast.Node, list)):
                setattr(copy, name, _share_calls(getattr(target, name, None), value))
    return copy
