"""Parser, part 2: declarations at top level and inside parsers and controls."""

from __future__ import annotations

from typing import Any

from p4kit.compiler import ast
from p4kit.compiler.lexer import Token
from p4kit.compiler.parse_base import (
    ParserBase,
    _Backtrack,
)


class DeclParser(ParserBase):
    """Declarations at top level and inside parsers and controls."""

    # ---------------------------------------------------------------------------------------------
    # Program

    def parse_program(self) -> ast.Program:
        prog = ast.Program(loc=self.loc())
        while self.tok.kind != "EOF":
            d = self.declaration()
            if isinstance(d, list):
                prog.decls.extend(d)
            elif d is not None:
                prog.decls.append(d)
        return prog

    def declaration(self) -> Any:
        if self.accept(";"):
            return None
        start = self.tok
        annotations = self.annotations()
        t = self.tok
        txt = t.text
        if t.kind == "KW":
            if txt == "const":
                return self.const_decl(annotations)
            if txt == "extern":
                return self.extern_decl(annotations)
            if txt == "action":
                return self.action_decl(annotations)
            if txt == "parser":
                return self.parser_decl(annotations)
            if txt == "control":
                return self.control_decl(annotations)
            if txt == "package":
                return self.package_decl(annotations)
            if txt in ("header", "header_union", "struct"):
                return self.struct_decl(annotations)
            if txt == "enum":
                return self.enum_decl(annotations)
            if txt == "typedef":
                return self.typedef_decl(annotations, newtype=False)
            if txt == "error":
                if self.peek().text == "{":
                    return self.error_decl(annotations)
            if txt == "match_kind":
                return self.match_kind_decl(annotations)
        if t.kind == "ID" and txt == "type" and not self.is_type_name("type"):
            return self.typedef_decl(annotations, newtype=True)
        if self.at_type_start():
            return self.instantiation_or_function(annotations, start)
        if t.kind == "ID" and self.peek().kind == "ID" and self.peek(2).text == "<":
            # `T f<T>(...)`: a generic function returning its own type parameter
            return self.instantiation_or_function(annotations, start)
        self.error_expected("a declaration")

    # ---------------------------------------------------------------------------------------------
    # Type declarations

    def struct_decl(self, annotations: list[ast.Annotation]) -> ast.StructLikeDecl:
        kw = self.tok
        self.i += 1
        n = self.name(f"a {kw.text} name")
        self.declare_type(n.text)
        tparams = self.type_params_opt()
        self.push_types(tparams)
        try:
            self.expect("{")
            fields: list[ast.StructFieldDecl] = []
            while not self.accept("}"):
                fa = self.annotations()
                if self.at_punct("}"):
                    continue
                start = self.tok
                tref = self.type_ref()
                fn = self.name("a field name")
                self.expect(";")
                fields.append(ast.StructFieldDecl(fn.text, tref, annotations=fa, loc=self.loc(start)))
        finally:
            self.pop_types()
        return ast.StructLikeDecl(n.text, kw.text, fields, tparams, annotations=annotations, loc=self.loc(n))

    def enum_decl(self, annotations: list[ast.Annotation]) -> ast.EnumDecl:
        self.expect("enum")
        underlying = None
        if (self.tok.kind == "KW" and self.tok.text in ("bit", "int")) or (
            self.tok.kind == "ID" and self.peek().kind == "ID" and self.is_type_name(self.tok.text)
        ):
            underlying = self.type_ref()
        n = self.name("an enum name")
        self.declare_type(n.text)
        self.expect("{")
        members: list[ast.EnumMemberDecl] = []
        while not self.at_punct("}"):
            ma = self.annotations()
            m = self.name("an enum member")
            value = None
            if self.accept("="):
                value = self.expression()
            members.append(ast.EnumMemberDecl(m.text, value, ma, loc=self.loc(m)))
            if not self.accept(","):
                break
        self.expect("}", "',' or '}'")
        return ast.EnumDecl(n.text, members, underlying, annotations=annotations, loc=self.loc(n))

    def error_decl(self, annotations: list[ast.Annotation]) -> ast.ErrorDecl:
        start = self.expect("error")
        locs: list[Any] = []
        return ast.ErrorDecl(self.name_list(locs), annotations, loc=self.loc(start), member_locs=locs)

    def match_kind_decl(self, annotations: list[ast.Annotation]) -> ast.MatchKindDecl:
        start = self.expect("match_kind")
        locs: list[Any] = []
        return ast.MatchKindDecl(self.name_list(locs), annotations, loc=self.loc(start), member_locs=locs)

    def name_list(self, locs: list[Any] | None = None) -> list[str]:
        """`{ A, B }`; `locs`, when given, gets each name's location (for a duplicate's error)."""
        self.expect("{")
        names: list[str] = []
        while not self.at_punct("}"):
            self.annotations()
            tok = self.name()
            names.append(tok.text)
            if locs is not None:
                locs.append(self.loc(tok))
            if not self.accept(","):
                break
        self.expect("}", "',' or '}'")
        return names

    def typedef_decl(self, annotations: list[ast.Annotation], newtype: bool) -> Any:
        self.i += 1  # typedef / type
        t = self.tok
        if t.kind == "KW" and t.text in ("header", "header_union", "struct", "enum"):
            # `typedef struct S { ... } N;`: declare S, then N as its alias
            inner = self.struct_decl([]) if t.text != "enum" else self.enum_decl([])
            n = self.name("a type name")
            self.expect(";")
            self.declare_type(n.text)
            ref = ast.NamedTypeRef(inner.name, loc=inner.loc)
            return [inner, ast.TypedefDecl(n.text, ref, newtype, annotations=annotations, loc=self.loc(n))]
        tref = self.type_ref()
        n = self.name("a type name")
        self.expect(";")
        self.declare_type(n.text)
        return ast.TypedefDecl(n.text, tref, newtype, annotations=annotations, loc=self.loc(n))

    # ---------------------------------------------------------------------------------------------
    # Constants, variables, instances

    def const_decl(self, annotations: list[ast.Annotation]) -> ast.ConstDecl:
        self.expect("const")
        tref = self.type_ref()
        n = self.name("a constant name")
        self.declare_value(n.text)  # a local name shadows a type of that name
        self.expect("=")
        value = self.expression()
        self.expect(";")
        return ast.ConstDecl(n.text, tref, value, annotations=annotations, loc=self.loc(n))

    def instantiation_or_function(self, annotations: list[ast.Annotation], start: Token) -> Any:
        """At top level: `T(args) name;`, or a function `R f<T>(params) { ... }`."""
        pre_tparams: list[str] = []
        if self.tok.kind == "ID" and not self.is_type_name(self.tok.text):
            pre_tparams = self.lookahead_type_params()
        self.push_types(pre_tparams)
        try:
            tref = self.type_ref()
            if self.at_punct("("):
                return self.instantiation_rest(tref, annotations, start)
            n = self.name("a name")
            tparams = self.type_params_opt()
            self.push_types(tparams)
            try:
                params = self.parameters()
                body = self.block()
            finally:
                self.pop_types()
        finally:
            self.pop_types()
        return ast.FunctionDecl(n.text, tref, params, tparams, body, annotations=annotations, loc=self.loc(n))

    def lookahead_type_params(self) -> list[str]:
        """For `R name<A, B>(`: the names A, B (so that R may be one of them)."""
        j = self.i + 1
        toks = self.toks
        if toks[j].kind != "ID" or toks[j + 1].text != "<":
            return []
        j += 2
        names = []
        while toks[j].kind == "ID":
            names.append(toks[j].text)
            j += 1
            if toks[j].text == ",":
                j += 1
            else:
                break
        return names if toks[j].text == ">" else []

    def instantiation_rest(
        self, tref: ast.TypeRef, annotations: list[ast.Annotation], start: Token
    ) -> ast.Instantiation:
        args = self.arguments()
        n = self.name("an instance name")
        self.declare_value(n.text)  # a local name shadows a type of that name
        initializer = None
        if self.accept("="):
            initializer = self.instance_initializer()
        self.expect(";")
        return ast.Instantiation(
            n.text, tref, args, initializer, annotations=annotations, loc=self.loc(start)
        )

    def instance_initializer(self) -> list[Any]:
        self.expect("{")
        out: list[Any] = []
        while not self.accept("}"):
            annotations = self.annotations()
            start = self.tok
            if self.at_type_start() or (self.tok.kind == "ID" and self.peek().kind == "ID"):
                d = self.instantiation_or_function(annotations, start)
                out.append(d)
            else:
                self.error_expected("a method implementation or '}'")
        return out

    # ---------------------------------------------------------------------------------------------
    # Externs, packages

    def extern_decl(self, annotations: list[ast.Annotation]) -> Any:
        self.expect("extern")
        t = self.tok
        is_object = False
        if t.kind == "ID":
            nxt = self.peek()
            if nxt.text == "{":
                is_object = True
            elif nxt.text == "<":
                # `extern Name<T> {` vs `extern T f<T>(` / `extern Name<X> f(`: find the matching '>'
                j = self.i + 2
                depth = 1
                while j < len(self.toks) and depth:
                    if self.toks[j].text == "<":
                        depth += 1
                    elif self.toks[j].text == ">":
                        depth -= 1
                    elif self.toks[j].text in (";", "{", "}", "("):
                        break
                    j += 1
                is_object = depth == 0 and self.toks[j].text == "{"
        if t.kind == "ID" and self.peek().text == ";":
            # `extern Name;`: a forward declaration of an extern type (nothing to check)
            self.declare_type(t.text)
            self.i += 2
            return None
        if is_object:
            n = self.name("an extern name")
            self.declare_type(n.text)
            tparams = self.type_params_opt()
            self.push_types(tparams)
            try:
                self.expect("{")
                methods: list[ast.MethodDecl] = []
                while not self.accept("}"):
                    methods.append(self.method_decl(n.text))
            finally:
                self.pop_types()
            return ast.ExternDecl(n.text, tparams, methods, annotations=annotations, loc=self.loc(n))
        pre = self.lookahead_type_params() if t.kind == "ID" and not self.is_type_name(t.text) else []
        self.push_types(pre)
        try:
            ret = self.type_ref()
            n = self.name("an extern function name")
            tparams = self.type_params_opt()
            self.push_types(tparams)
            try:
                params = self.parameters()
            finally:
                self.pop_types()
            self.expect(";")
        finally:
            self.pop_types()
        return ast.ExternFunctionDecl(n.text, ret, params, tparams, annotations=annotations, loc=self.loc(n))

    def method_decl(self, extern_name: str) -> ast.MethodDecl:
        annotations = self.annotations()
        start = self.tok
        abstract = bool(self.accept("abstract"))
        if self.tok.kind == "ID" and self.tok.text == extern_name and self.peek().text in ("(", "<"):
            n = self.name()
            tparams = self.type_params_opt()
            self.push_types(tparams)
            try:
                params = self.parameters()
            finally:
                self.pop_types()
            self.expect(";")
            return ast.MethodDecl(
                n.text, None, params, tparams, True, False, annotations=annotations, loc=self.loc(start)
            )
        pre = (
            self.lookahead_type_params()
            if self.tok.kind == "ID" and not self.is_type_name(self.tok.text)
            else []
        )
        self.push_types(pre)
        try:
            ret = self.type_ref()
            n = self.name("a method name")
            tparams = self.type_params_opt()
            self.push_types(tparams)
            try:
                params = self.parameters()
            finally:
                self.pop_types()
            self.expect(";")
        finally:
            self.pop_types()
        return ast.MethodDecl(
            n.text, ret, params, tparams, False, abstract, annotations=annotations, loc=self.loc(start)
        )

    def package_decl(self, annotations: list[ast.Annotation]) -> ast.PackageTypeDecl:
        self.expect("package")
        n = self.name("a package name")
        self.declare_type(n.text)
        tparams = self.type_params_opt()
        self.push_types(tparams)
        try:
            params = self.parameters()
        finally:
            self.pop_types()
        self.expect(";")
        return ast.PackageTypeDecl(n.text, params, tparams, annotations=annotations, loc=self.loc(n))

    # ---------------------------------------------------------------------------------------------
    # Actions, parsers, controls

    def action_decl(self, annotations: list[ast.Annotation]) -> ast.ActionDecl:
        self.expect("action")
        n = self.name("an action name")
        self.declare_value(n.text)  # a local name shadows a type of that name
        self.push_types([])
        try:
            params = self.parameters()
            body = self.block()
        finally:
            self.pop_types()
        return ast.ActionDecl(n.text, params, body, annotations=annotations, loc=self.loc(n))

    def parser_decl(self, annotations: list[ast.Annotation]) -> Any:
        self.expect("parser")
        n = self.name("a parser name")
        self.declare_type(n.text)
        tparams = self.type_params_opt()
        self.push_types(tparams)
        try:
            params = self.parameters()
            if self.accept(";"):
                return ast.ParserTypeDecl(n.text, params, tparams, annotations=annotations, loc=self.loc(n))
            ctor = self.parameters() if self.at_punct("(") else []
            self.expect("{", "'{' or ';'")
            self.push_types([])
            decl = ast.ParserDecl(n.text, params, tparams, ctor, annotations=annotations, loc=self.loc(n))
            try:
                while not self.accept("}"):
                    if self.accept(";"):
                        continue
                    la = self.annotations()
                    t = self.tok
                    if t.kind == "ID" and t.text == "state" and self.peek().kind == "ID":
                        decl.states.append(self.parser_state(la))
                    elif t.kind == "KW" and t.text == "value_set":
                        decl.locals.append(self.value_set_decl(la))
                    else:
                        decl.locals.append(self.local_declaration(la, "a parser state or declaration"))
            finally:
                self.pop_types()
            return decl
        finally:
            self.pop_types()

    def value_set_decl(self, annotations: list[ast.Annotation]) -> ast.ValueSetDecl:
        start = self.expect("value_set")
        self.expect("<")
        args = self.type_args_rest()
        if len(args) != 1:
            self.error("value_set takes one type argument", start)
        self.expect("(")
        size = self.expression()
        self.expect(")")
        n = self.name("a value set name")
        self.declare_value(n.text)  # a local name shadows a type of that name
        self.expect(";")
        return ast.ValueSetDecl(n.text, args[0], size, annotations=annotations, loc=self.loc(n))

    def local_declaration(self, annotations: list[ast.Annotation], what: str) -> Any:
        """A constant, variable, instance or function declared in a parser or control (or a block)."""
        t = self.tok
        start = t
        if t.kind == "KW" and t.text == "const":
            return self.const_decl(annotations)
        pre: list[str] = []
        if t.kind == "ID" and not self.is_type_name(t.text) and self.peek().kind == "ID":
            pre = self.lookahead_type_params()
        if pre or self.at_type_start():
            self.push_types(pre)
            try:
                tref = self.type_ref()
                if self.at_punct("("):
                    return self.instantiation_rest(tref, annotations, start)
                n = self.name("a variable name")
                if self.at_punct("(") or self.at_punct("<"):
                    tparams = self.type_params_opt()
                    self.push_types(tparams)
                    try:
                        params = self.parameters()
                        body = self.block()
                    finally:
                        self.pop_types()
                    return ast.FunctionDecl(
                        n.text, tref, params, tparams, body, annotations=annotations, loc=self.loc(n)
                    )
            finally:
                self.pop_types()
            self.declare_value(n.text)
            init = None
            if self.accept("="):
                init = self.expression()
            self.expect(";", "';' or '='")
            return ast.VariableDecl(n.text, tref, init, annotations=annotations, loc=self.loc(n))
        self.error_expected(what)

    def parser_state(self, annotations: list[ast.Annotation]) -> ast.ParserState:
        self.i += 1  # state
        n = self.name("a state name")
        st = ast.ParserState(n.text, annotations=annotations, loc=self.loc(n))
        self.expect("{")
        while True:
            t = self.tok
            if t.kind == "KW" and t.text == "transition":
                self.i += 1
                st.transition = self.transition_target()
                self.expect("}", "'}' (the transition ends the state)")
                break
            if self.accept("}"):
                break
            st.components.append(self.statement_or_decl())
        return st

    def transition_target(self) -> ast.Expression:
        t = self.tok
        if t.kind == "KW" and t.text == "select":
            e = self.select_expression()
            self.accept(";")
            return e
        n = self.name("a state name or 'select'")
        self.expect(";")
        return ast.PathExpression(n.text, loc=self.loc(n))

    def select_expression(self) -> ast.SelectExpression:
        start = self.expect("select")
        self.expect("(")
        keys: list[ast.Expression] = []
        if not self.at_punct(")"):
            while True:
                keys.append(self.expression())
                if not self.accept(","):
                    break
        self.expect(")", "',' or ')'")
        self.expect("{")
        cases: list[ast.SelectCase] = []
        while not self.accept("}"):
            ca = self.annotations()
            ks_tok = self.tok
            keyset = self.keyset_expression()
            self.expect(":", "':'")
            sn = self.name("a state name")
            self.expect(";")
            cases.append(
                ast.SelectCase(
                    keyset, ast.PathExpression(sn.text, loc=self.loc(sn)), ca, loc=self.loc(ks_tok)
                )
            )
        return ast.SelectExpression(keys, cases, loc=self.loc(start))

    def keyset_expression(self) -> ast.Expression:
        """A keyset: `default`, `_`, `e`, `e &&& m`, `lo .. hi`, or `(k1, k2, ...)` of those."""
        if self.at_punct("("):
            start = self.tok

            def tuple_keyset() -> ast.Expression:
                self.i += 1
                elems = []
                while True:
                    elems.append(self.simple_keyset())
                    if not self.accept(","):
                        break
                self.expect(")")
                if self.tok.text not in (":",):
                    raise _Backtrack()
                if len(elems) == 1:
                    return elems[0]
                return ast.ListExpression(elems, loc=self.loc(start))

            r = self.speculate(tuple_keyset)
            if r is not None:
                return r
        return self.simple_keyset()

    def simple_keyset(self) -> ast.Expression:
        t = self.tok
        if t.kind == "KW" and t.text == "default":
            self.i += 1
            return ast.DefaultExpression(loc=self.loc(t))
        if t.kind == "ID" and t.text == "_":
            self.i += 1
            return ast.DefaultExpression(True, loc=self.loc(t))
        e = self.expression()
        if self.at_punct("&&&") or self.at_punct(".."):
            op = self.tok
            self.i += 1
            r = self.expression()
            e = ast.BinaryOp(op.text, e, r, loc=self.loc(op))
        return e

    def control_decl(self, annotations: list[ast.Annotation]) -> Any:
        self.expect("control")
        n = self.name("a control name")
        self.declare_type(n.text)
        tparams = self.type_params_opt()
        self.push_types(tparams)
        try:
            params = self.parameters()
            if self.accept(";"):
                return ast.ControlTypeDecl(n.text, params, tparams, annotations=annotations, loc=self.loc(n))
            ctor = self.parameters() if self.at_punct("(") else []
            self.expect("{", "'{' or ';'")
            decl = ast.ControlDecl(n.text, params, tparams, ctor, annotations=annotations, loc=self.loc(n))
            self.push_types([])
            try:
                while True:
                    la = self.annotations()
                    t = self.tok
                    if t.kind == "ID" and t.text == "apply" and self.peek().text == "{":
                        self.i += 1
                        decl.body = self.block()
                        decl.body.annotations = la
                        break
                    if t.kind == "KW" and t.text == "action":
                        decl.locals.append(self.action_decl(la))
                    elif t.kind == "KW" and t.text == "table":
                        decl.locals.append(self.table_decl(la))
                    elif self.accept(";"):
                        continue
                    elif t.kind == "PUNCT" and t.text == "}":
                        self.error_expected("'apply' (a control needs an apply block)")
                    else:
                        decl.locals.append(self.local_declaration(la, "a declaration or 'apply'"))
                self.expect("}", "'}' (nothing may follow the apply block)")
            finally:
                self.pop_types()
            return decl
        finally:
            self.pop_types()
