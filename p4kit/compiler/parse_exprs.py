"""Parser, part 4: expressions (precedence climbing), keysets and calls."""

from __future__ import annotations

from p4kit.compiler import ast
from p4kit.compiler.diagnostics import SourceLoc
from p4kit.compiler.lexer import Token
from p4kit.compiler.parse_base import (
    _BASE_TYPE_KW,
    _BINARY,
    _COMPOUND,
    _SHIFT_PREC,
    ParserBase,
    _Backtrack,
)


class ExprParser(ParserBase):
    """Expressions by precedence climbing, with casts, generic calls and keysets."""

    # ---------------------------------------------------------------------------------------------
    # Expressions

    def arguments(self) -> list[ast.Argument]:
        self.expect("(")
        args: list[ast.Argument] = []
        if self.accept(")"):
            return args
        while True:
            t = self.tok
            if t.kind in ("ID", "KW") and self.peek().kind == "PUNCT" and self.peek().text == "=":
                self.i += 2
                args.append(ast.Argument(self.argument_value(), t.text, loc=self.loc(t)))
            else:
                args.append(ast.Argument(self.argument_value(), loc=self.loc(t)))
            if not self.accept(","):
                break
        self.expect(")", "',' or ')'")
        return args

    def argument_value(self) -> ast.Expression:
        t = self.tok
        if t.kind == "ID" and t.text == "_":
            self.i += 1
            return ast.DefaultExpression(True, loc=self.loc(t))
        return self.expression()

    def expression(self) -> ast.Expression:
        """An expression, including the conditional operator (lowest precedence)."""
        cond = self.binary(1)
        if self.at_punct("?"):
            q = self.tok
            self.i += 1
            then = self.expression()
            self.expect(":", "':'")
            else_ = self.expression()
            return ast.Mux(cond, then, else_, loc=self.loc(q) if cond.loc is None else cond.loc)
        return cond

    def binary(self, min_prec: int) -> ast.Expression:
        left = self.unary()
        while True:
            t = self.tok
            if t.kind != "PUNCT":
                return left
            txt = t.text
            nxt = self.peek()
            if (
                nxt.adjacent
                and nxt.kind == "PUNCT"
                and ((nxt.text == "=" and txt in _COMPOUND) or (txt == ">" and nxt.text == ">="))
            ):
                return left  # a compound assignment `x op= e` follows
            if txt == ">" and nxt.text == ">" and nxt.adjacent and nxt.kind == "PUNCT":
                nn = self.peek(2)
                if nn.text == "=" and nn.adjacent:
                    return left  # `x >>= e`
                prec, op, width = _SHIFT_PREC, ">>", 2
            else:
                entry = _BINARY.get(txt)
                if entry is None:
                    return left
                prec, op = entry
                width = 1
            if prec < min_prec:
                return left
            self.i += width
            right = self.binary(prec + 1)
            left = ast.BinaryOp(op, left, right, loc=left.loc)

    def unary(self) -> ast.Expression:
        t = self.tok
        if t.kind == "PUNCT":
            if t.text in ("!", "~", "-", "+"):
                self.i += 1
                e = self.unary()
                if t.text == "-" and isinstance(e, ast.Constant) and e.loc is not None and e.width is None:
                    pass
                return ast.UnaryOp(t.text, e, loc=self.loc(t))
            if t.text == "(" and self.cast_follows():
                self.i += 1
                tref = self.type_ref()
                self.expect(")")
                e = self.unary()
                return ast.Cast(tref, e, loc=self.loc(t))
        return self.postfix(self.primary())

    def cast_follows(self) -> bool:
        """At '(': is this a cast `(Type) e`?"""
        nxt = self.peek()
        if nxt.kind == "KW" and nxt.text in _BASE_TYPE_KW:
            return not (nxt.text == "error" and self.peek(2).text == ".")
        builtin_list = nxt.text == "list" and not self.is_type_name("list") and self.peek(2).text == "<"
        if nxt.kind == "ID" and (self.is_type_name(nxt.text) or builtin_list):
            after = self.peek(2)
            if (after.text == ")" or after.text == "[") and not builtin_list:
                return True
            if after.text == "<":

                def probe() -> bool:
                    self.i += 1
                    self.type_ref()
                    if not self.at_punct(")"):
                        raise _Backtrack()
                    return True

                save = self.i
                ok = self.speculate(probe)
                self.i = save
                return bool(ok)
        return False

    def primary(self) -> ast.Expression:
        t = self.tok
        loc = self.loc(t)
        k = t.kind
        if k == "INT":
            self.i += 1
            return self.make_constant(t)
        if k == "STR":
            self.i += 1
            return ast.StringLiteral(str(t.value), loc=loc)
        if k == "KW":
            txt = t.text
            if txt in ("true", "false"):
                self.i += 1
                return ast.BoolLiteral(txt == "true", loc=loc)
            if txt == "this":
                self.i += 1
                return ast.ThisExpression(loc=loc)
            if txt == "default":
                self.i += 1
                return ast.DefaultExpression(loc=loc)
            if txt in _BASE_TYPE_KW:
                tref = self.type_ref()
                return self.after_type_in_expression(tref, loc)
            self.error_expected("an expression")
        if k == "ID":
            if t.text == "_":
                self.i += 1
                return ast.DefaultExpression(True, loc=loc)
            if self.is_type_name(t.text):
                tref = self.type_ref()
                return self.after_type_in_expression(tref, loc)
            self.i += 1
            return ast.PathExpression(t.text, loc=loc)
        if k == "PUNCT":
            txt = t.text
            if txt == "(":
                self.i += 1
                e = self.expression()
                self.expect(")", "')'")
                return e
            if txt == "{":
                return self.brace_expression()
            if txt == "...":
                self.i += 1
                return ast.DotsExpression(loc=loc)
            if txt == "." and self.peek().kind == "ID":
                self.i += 1
                n = self.name()
                if self.is_type_name(n.text):
                    self.i -= 2
                    tref = self.type_ref()
                    return self.after_type_in_expression(tref, loc)
                return ast.PathExpression(n.text, True, loc=loc)
        self.error_expected("an expression")

    def after_type_in_expression(self, tref: ast.TypeRef, loc: SourceLoc) -> ast.Expression:
        """A type in value position: constructor call `T(args)`, struct expression `T {..}`, or a
        type name used before '.' (`E.A`, `error.X`, `H.minSizeInBits()`)."""
        if self.at_punct("("):
            args = self.arguments()
            return ast.ConstructorCallExpression(tref, args, loc=loc)
        if self.at_punct("{"):
            save = self.i
            e = self.speculate(self.brace_expression)
            if isinstance(e, ast.StructExpression):
                e.type_ref = tref
                e.loc = loc
                return e
            if isinstance(e, ast.ListExpression) and not e.elems:
                return ast.StructExpression(tref, [], loc=loc)
            self.i = save
        return ast.TypeNameExpression(tref, loc=loc)

    def brace_expression(self) -> ast.Expression:
        start = self.expect("{")
        loc = self.loc(start)
        if self.accept("#"):
            self.expect("}")
            return ast.InvalidHeaderExpression(loc=loc)
        if self.accept("}"):
            return ast.ListExpression([], loc=loc)
        if self.tok.kind in ("ID", "KW") and self.peek().kind == "PUNCT" and self.peek().text == "=":
            fields: list[ast.NamedExpression] = []
            dots = False
            while True:
                if self.accept("..."):
                    dots = True
                    self.expect("}", "'}' ('...' must come last)")
                    break
                n = self.member_name()
                self.expect("=")
                fields.append(ast.NamedExpression(n.text, self.expression(), loc=self.loc(n)))
                if not self.accept(","):
                    self.expect("}", "',' or '}'")
                    break
                if self.accept("}"):
                    break
            return ast.StructExpression(None, fields, loc=loc, dots=dots)
        elems: list[ast.Expression] = []
        dots = False
        while True:
            if self.accept("..."):
                dots = True
                self.expect("}", "'}' ('...' must come last)")
                break
            elems.append(self.keyset_or_expression())
            if not self.accept(","):
                self.expect("}", "',' or '}'")
                break
            if self.accept("}"):
                break
        return ast.ListExpression(elems, loc=loc, dots=dots)

    def keyset_or_expression(self) -> ast.Expression:
        return self.simple_keyset()

    def postfix(self, e: ast.Expression) -> ast.Expression:
        while True:
            t = self.tok
            if t.kind != "PUNCT":
                return e
            txt = t.text
            if txt == ".":
                self.i += 1
                m = self.member_name()
                e = ast.Member(e, m.text, loc=e.loc)
            elif txt == "[":
                self.i += 1
                idx = self.expression()
                if self.accept(":"):
                    lo = self.expression()
                    self.expect("]")
                    e = ast.Slice(e, idx, lo, loc=e.loc)
                else:
                    self.expect("]", "']' or ':'")
                    e = ast.ArrayIndex(e, idx, loc=e.loc)
            elif txt == "(":
                args = self.arguments()
                e = ast.MethodCallExpression(e, [], args, loc=e.loc)
            elif txt == "<" and isinstance(e, (ast.PathExpression, ast.Member)):
                targs = self.speculate(self.generic_call_type_args)
                if targs is None:
                    return e
                args = self.arguments()
                e = ast.MethodCallExpression(e, targs, args, loc=e.loc)
            else:
                return e

    def generic_call_type_args(self) -> list[ast.TypeRef]:
        """`<types>` followed by '(' (a generic call); backtracks otherwise."""
        self.expect("<")
        t = self.tok
        if not (t.kind == "KW" and t.text in _BASE_TYPE_KW) and not (
            t.kind == "ID" and (self.is_type_name(t.text) or t.text == "_")
        ):
            raise _Backtrack()
        args = self.type_args_rest()
        if not self.at_punct("("):
            raise _Backtrack()
        return args

    def make_constant(self, t: Token) -> ast.Constant:
        assert isinstance(t.value, int)
        return ast.Constant(t.value, t.width, t.signed, t.base, loc=self.loc(t))
