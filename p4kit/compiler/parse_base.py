"""Parser, part 1: tokens, look-ahead and backtracking, the scopes of type names, annotations, types and
parameters - the pieces every other part of the parser uses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from p4kit.compiler import ast
from p4kit.compiler.diagnostics import CompileError, SourceLoc, SourceMap
from p4kit.compiler.lexer import Token, describe, tokenize

_BASE_TYPE_KW = frozenset({"bit", "int", "varbit", "bool", "error", "string", "void", "match_kind", "tuple"})

# Binary operators: token text -> (precedence, op). Higher binds tighter. `>>` is two `>` tokens.
_BINARY: dict[str, tuple[int, str]] = {
    "||": (1, "||"),
    "&&": (2, "&&"),
    "==": (3, "=="),
    "!=": (3, "!="),
    "<": (4, "<"),
    ">": (4, ">"),
    "<=": (4, "<="),
    ">=": (4, ">="),
    "|": (5, "|"),
    "^": (6, "^"),
    "&": (7, "&"),
    "<<": (8, "<<"),
    "++": (9, "++"),
    "+": (9, "+"),
    "-": (9, "-"),
    "|+|": (9, "|+|"),
    "|-|": (9, "|-|"),
    "*": (10, "*"),
    "/": (10, "/"),
    "%": (10, "%"),
}
_SHIFT_PREC = 8
_COMPOUND = frozenset({"+", "-", "*", "/", "%", "&", "|", "^", "<<", "|+|", "|-|"})


class _Backtrack(Exception):
    """Raised inside a speculative parse to abandon it."""


class ParserBase:
    """Token access, errors, speculation and type-name scopes (see parser.py for the why)."""

    def __init__(self, source_map: SourceMap) -> None:
        self.sm = source_map
        self.text = source_map.clean_text
        self.toks = tokenize(source_map)
        self.i = 0
        # innermost last; name -> True for a type, False for a value that shadows a type
        self.type_scopes: list[dict[str, bool]] = [{}]
        self.speculating = 0

    # ---------------------------------------------------------------------------------------------
    # Token helpers

    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> Token:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else self.toks[-1]

    def loc(self, tok: Token | None = None) -> SourceLoc:
        t = tok or self.tok
        return self.sm.locate(t.line, t.col)

    def at(self, text: str) -> bool:
        t = self.tok
        return t.text == text and t.kind in ("PUNCT", "KW", "ID")

    def at_punct(self, text: str) -> bool:
        t = self.tok
        return t.kind == "PUNCT" and t.text == text

    def accept(self, text: str) -> Token | None:
        t = self.tok
        if t.text == text and t.kind != "STR" and t.kind != "INT":
            self.i += 1
            return t
        return None

    def expect(self, text: str, what: str | None = None) -> Token:
        t = self.tok
        if t.text == text and t.kind != "STR" and t.kind != "INT":
            self.i += 1
            return t
        self.error_expected(what or f"'{text}'")

    def error_expected(self, what: str, tok: Token | None = None) -> NoReturn:
        if self.speculating:
            raise _Backtrack()
        t = tok or self.tok
        raise CompileError(f"syntax error: unexpected {describe(t)}, expected {what}", self.loc(t))

    def error(self, msg: str, tok: Token | None = None) -> NoReturn:
        if self.speculating:
            raise _Backtrack()
        raise CompileError(msg, self.loc(tok))

    def speculate(self, fn: Callable[[], Any]) -> Any:
        """Run `fn`; on a syntax error restore the position and return None."""
        save = self.i
        self.speculating += 1
        try:
            return fn()
        except (_Backtrack, CompileError):
            self.i = save
            return None
        finally:
            self.speculating -= 1

    # ---------------------------------------------------------------------------------------------
    # Type-name scopes

    def is_type_name(self, name: str) -> bool:
        for scope in reversed(self.type_scopes):
            r = scope.get(name)
            if r is not None:
                return r
        return False

    def declare_type(self, name: str) -> None:
        self.type_scopes[-1][name] = True

    def declare_value(self, name: str) -> None:
        """A parameter or variable: in its scope the name is not a type even if a type has it."""
        if self.is_type_name(name):
            self.type_scopes[-1][name] = False

    def push_types(self, names: list[str]) -> None:
        self.type_scopes.append(dict.fromkeys(names, True))

    def pop_types(self) -> None:
        self.type_scopes.pop()

    def at_type_name(self, k: int = 0) -> bool:
        t = self.peek(k) if k else self.tok
        return t.kind == "ID" and self.is_type_name(t.text)

    def at_type_start(self) -> bool:
        """Does a type start here (a base type keyword, a type name or `.TypeName`)?"""
        t = self.tok
        if t.kind == "KW" and t.text in _BASE_TYPE_KW:
            return True
        if t.kind == "ID":
            return self.is_type_name(t.text) or (t.text == "list" and self.peek().text == "<")
        if t.kind == "PUNCT" and t.text == "." and self.peek().kind == "ID":
            return self.is_type_name(self.peek().text)
        return False

    # ---------------------------------------------------------------------------------------------
    # Names

    def name(self, what: str = "a name") -> Token:
        """Any identifier (type names and soft keywords included)."""
        t = self.tok
        if t.kind == "ID":
            self.i += 1
            return t
        self.error_expected(what)

    def member_name(self) -> Token:
        """A name after `.`: any identifier, and keywords too (`hdr.type`, `x.apply`)."""
        t = self.tok
        if t.kind in ("ID", "KW"):
            self.i += 1
            return t
        self.error_expected("a member name")

    # ---------------------------------------------------------------------------------------------
    # Annotations

    def annotations(self) -> list[ast.Annotation]:
        out: list[ast.Annotation] = []
        while self.at_punct("@"):
            out.append(self.annotation())
        return out

    def annotation(self) -> ast.Annotation:
        at = self.expect("@")
        t = self.tok
        if t.kind not in ("ID", "KW"):
            self.error_expected("an annotation name")
        self.i += 1
        loc = self.loc(at)
        if t.text == "pragma":
            # `@pragma name tokens...` up to the end of the line
            line = t.line
            if self.tok.line != line or self.tok.kind == "EOF":
                self.error_expected("a pragma name")
            name_tok = self.tok
            self.i += 1
            first = self.i
            while self.tok.kind != "EOF" and self.tok.line == line:
                self.i += 1
            body = self.text[self.toks[first].pos : self.toks[self.i - 1].end] if self.i > first else ""
            ann = ast.Annotation(name_tok.text, body, loc=loc)
            ann.args = self.try_parse_args(first, self.i)
            return ann
        if (self.at_punct("(") and self.tok.adjacent) or (self.at_punct("(") and self.tok.line == t.line):
            open_tok = self.tok
            self.i += 1
            first = self.i
            depth = 1
            while True:
                c = self.tok
                if c.kind == "EOF":
                    self.error("unterminated annotation: missing ')'", open_tok)
                if c.kind == "PUNCT":  # only parentheses nest in an unstructured body (as in p4c)
                    if c.text == "(":
                        depth += 1
                    elif c.text == ")":
                        depth -= 1
                        if depth == 0:
                            break
                self.i += 1
            last = self.i
            self.i += 1  # ')'
            body = self.text[open_tok.end : self.toks[last].pos]
            ann = ast.Annotation(t.text, body.strip(), loc=loc)
            ann.args = self.try_parse_args(first, last)
            return ann
        if self.at_punct("[") and self.tok.adjacent:
            open_tok = self.tok
            self.i += 1
            kv: dict[str, ast.Expression] = {}
            args: list[ast.Expression] = []
            first = self.i
            if self.tok.kind == "ID" and self.peek().text == "=":
                while not self.at_punct("]"):
                    k = self.name("a key")
                    self.expect("=")
                    kv[k.text] = self.expression()
                    if not self.accept(","):
                        break
            elif not self.at_punct("]"):
                while True:
                    args.append(self.expression())
                    if not self.accept(","):
                        break
            close = self.expect("]")
            body = self.text[open_tok.end : close.pos]
            del first
            return ast.Annotation(t.text, body.strip(), args if not kv else None, kv or None, True, loc=loc)
        return ast.Annotation(t.text, "", [], loc=loc)

    def try_parse_args(self, first: int, last: int) -> list[ast.Expression] | None:
        """Parse tokens [first, last) as a comma-separated expression list, or return None."""
        if first == last:
            return []
        save_i, save_toks = self.i, self.toks
        end_tok = Token("EOF", "", self.toks[last - 1].end, self.toks[last - 1].end, 0, 0)
        self.toks = [*self.toks[first:last], end_tok]
        self.i = 0
        self.speculating += 1
        try:
            out = []
            while True:
                out.append(self.expression())
                if not self.accept(","):
                    break
            if self.tok.kind != "EOF":
                return None
            return out
        except (_Backtrack, CompileError):
            return None
        finally:
            self.speculating -= 1
            self.i, self.toks = save_i, save_toks

    # ---------------------------------------------------------------------------------------------
    # Types

    def type_ref(self, allow_dontcare: bool = False) -> ast.TypeRef:
        t = self.tok
        loc = self.loc(t)
        ref: ast.TypeRef
        if t.kind == "KW":
            txt = t.text
            if txt in ("bit", "int"):
                self.i += 1
                signed = txt == "int"
                if self.at_punct("<"):
                    self.i += 1
                    width = self.width_expr()
                    self.expect(">")
                    ref = ast.BitsTypeRef(width, signed, loc=loc)
                elif signed:
                    ref = ast.PrimTypeRef("int", loc=loc)
                else:
                    ref = ast.BitsTypeRef(ast.Constant(1, loc=loc), False, loc=loc)
            elif txt == "varbit":
                self.i += 1
                self.expect("<")
                width = self.width_expr()
                self.expect(">")
                ref = ast.VarbitTypeRef(width, loc=loc)
            elif txt in ("bool", "error", "string", "void", "match_kind"):
                self.i += 1
                ref = ast.PrimTypeRef(txt, loc=loc)
            elif txt == "tuple":
                self.i += 1
                self.expect("<")
                args = self.type_args_rest()
                ref = ast.TupleTypeRef(args, loc=loc)
            else:
                self.error_expected("a type")
        elif t.kind == "ID" and t.text == "_" and allow_dontcare:
            self.i += 1
            ref = ast.PrimTypeRef("_", loc=loc)
        elif t.kind == "ID" or (t.kind == "PUNCT" and t.text == "."):
            is_global = bool(self.accept("."))
            n = self.name("a type")
            # `list<T>` (P4_16 v1.2.3) is a built-in type unless the program declares a type `list`;
            # it is kept as list specialized with T
            builtin_list = n.text == "list" and not is_global and self.at_punct("<")
            if not self.is_type_name(n.text) and not builtin_list:
                self.error(f"unknown type '{n.text}' (no type of that name is declared)", n)
            base = ast.NamedTypeRef(n.text, is_global, loc=loc)
            ref = base
            if self.at_punct("<"):
                self.i += 1
                ref = ast.SpecializedTypeRef(base, self.type_args_rest(), loc=loc)
        else:
            self.error_expected("a type")
        while self.at_punct("["):
            self.i += 1
            size = self.expression()
            self.expect("]")
            ref = ast.StackTypeRef(ref, size, loc=loc)
        return ref

    def width_expr(self) -> ast.Expression:
        t = self.tok
        if t.kind == "INT":
            self.i += 1
            return self.make_constant(t)
        if self.at_punct("("):
            self.i += 1
            e = self.expression()
            self.expect(")")
            return e
        if t.kind == "ID":
            self.i += 1
            return ast.PathExpression(t.text, loc=self.loc(t))
        self.error_expected("a width")

    def type_args_rest(self) -> list[ast.TypeRef]:
        """Type arguments after '<', through the closing '>'."""
        args: list[ast.TypeRef] = []
        if self.accept(">"):
            return args
        while True:
            if self.tok.kind == "INT" or (self.tok.kind == "ID" and not self.is_type_name(self.tok.text)):
                if self.tok.text == "_":
                    args.append(self.type_ref(allow_dontcare=True))
                else:
                    # a non-type argument (e.g. an integer) - not supported in v1model programs
                    self.error_expected("a type")
            else:
                args.append(self.type_ref(allow_dontcare=True))
            if not self.accept(","):
                break
        self.expect(">")
        return args

    def type_params_opt(self) -> list[str]:
        """`<A, B>` after a declaration's name (generic parameters), or nothing."""
        if not self.at_punct("<"):
            return []
        self.i += 1
        names: list[str] = []
        while True:
            names.append(self.name("a type parameter").text)
            if not self.accept(","):
                break
        self.expect(">")
        return names

    # ---------------------------------------------------------------------------------------------
    # Parameters

    def parameters(self) -> list[ast.Parameter]:
        self.expect("(")
        params: list[ast.Parameter] = []
        if self.accept(")"):
            return params
        while True:
            annotations = self.annotations()
            start = self.tok
            direction = ""
            if self.tok.kind == "KW" and self.tok.text in ("in", "out", "inout"):
                direction = self.tok.text
                self.i += 1
            tref = self.type_ref()
            n = self.name("a parameter name")
            self.declare_value(n.text)
            default = None
            if self.accept("="):
                default = self.expression()
            params.append(
                ast.Parameter(n.text, direction, tref, default, annotations=annotations, loc=self.loc(start))
            )
            if not self.accept(","):
                break
        self.expect(")", "',' or ')'")
        return params
