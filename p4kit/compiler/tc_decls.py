"""Type checker, part 2: declarations - types, constants, externs, functions, actions, parsers,
controls, instances and tables."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from p4kit.compiler import ast
from p4kit.compiler import types as T  # noqa: N812
from p4kit.compiler.consteval import (
    wrap,
)
from p4kit.compiler.diagnostics import CompileError, UnsupportedError
from p4kit.compiler.scopes import Scope
from p4kit.compiler.tc_common import (
    _STATE,
    _VOID,
    CheckerState,
    _err,
    run_time_name,
)
from p4kit.compiler.tc_v1model import check_v1model_instance


class DeclsMixin(CheckerState):
    """Checks declarations in order and declares them in their scope."""

    # ---------------------------------------------------------------------------------------------
    # Type declarations

    def struct_decl(self, d: ast.StructLikeDecl, scope: Scope) -> None:
        cls = {"struct": T.StructType, "header": T.HeaderType, "header_union": T.HeaderUnionType}[d.kind]
        t = cls(d.name, [], d, tuple(T.TypeVar(n, d) for n in d.type_params))
        if not d.type_params:
            t.type_args = ()
        fs = self.generic_scope(scope, d.type_params, d)
        seen: set[str] = set()
        for f in d.fields:
            if f.name in seen:
                raise _err(f"duplicate field '{f.name}' in {d.kind} {d.name}", f)
            seen.add(f.name)
            ft = self.resolve(f.type_ref, fs)
            self.check_field_type(d.kind, ft, f)
            t.fields.append(T.StructField(f.name, ft, f.annotations))
        if d.kind == "header":
            varbits = [f for f in d.fields if isinstance(T.unwrap(f.type_ref.resolved), T.VarbitType)]
            if len(varbits) > 1:
                raise _err(
                    f"{varbits[0].name} and {varbits[1].name}: header {d.name} has more than one varbit field",
                    varbits[0],
                )
        d.type = t
        scope.declare(d.name, d, d.loc)

    def check_field_type(self, kind: str, ft: T.Type, node: Any) -> None:
        u = T.unwrap(ft)
        if kind == "header":
            if not isinstance(u, (T.BitsType, T.VarbitType, T.BoolType, T.SerEnumType, T.TypeVar)):
                if isinstance(u, T.StructType) and _fixed_width_struct(u):
                    return
                raise _err(f"a header field cannot have type {ft}", node)
        elif kind == "header_union":
            if not isinstance(u, (T.HeaderType, T.TypeVar)):
                raise _err(f"a header_union field must be a header, not {ft}", node)
        elif isinstance(u, (T.ExternType, T.CallableType, T.VoidType)):
            raise _err(f"a struct field cannot have type {ft}", node)

    def enum_decl(self, d: ast.EnumDecl, scope: Scope) -> None:
        names: set[str] = set()
        for m in d.members:
            if m.name in names:
                raise _err(f"duplicate enum member '{m.name}' in {d.name}", m)
            names.add(m.name)
        if d.underlying is None:
            d.type = T.EnumType(d.name, [m.name for m in d.members], d)
        else:
            declared = self.resolve(d.underlying, scope)
            if isinstance(declared, T.NewType):
                # p4c: "Illegal type for enum; only bit<> and int<> are allowed" (a typedef is fine)
                raise _err(
                    f"the underlying type of enum {d.name} must be bit<W> or int<W>, not the new type "
                    f"{declared}",
                    d.underlying,
                )
            u = T.unwrap(declared)
            if not isinstance(u, T.BitsType):
                raise _err(f"the underlying type of enum {d.name} must be bit<W> or int<W>, not {u}", d)
            members: dict[str, int] = {}
            nxt = 0
            for m in d.members:
                if m.value is None:
                    v = nxt
                else:
                    self.expr(m.value, scope, u)
                    self.coerce(m.value, u, "enum value")
                    if not isinstance(m.value.const_value, int) or isinstance(m.value.const_value, bool):
                        raise _err(f"the value of {d.name}.{m.name} must be a compile-time constant", m)
                    v = m.value.const_value
                members[m.name] = wrap(v, u)
                nxt = v + 1
            d.type = T.SerEnumType(d.name, u, members, d)
        scope.declare(d.name, d, d.loc)

    def const_decl(self, d: ast.ConstDecl, scope: Scope) -> None:
        t = self.resolve(d.type_ref, scope)
        d.type = t
        self.expr(d.value, scope, t)
        self.coerce(d.value, t, f"constant {d.name}")
        if d.value.const_value is None and not self.is_constant_expr(d.value):
            raise _err(f"the value of constant '{d.name}' must be a compile-time constant", d.value)
        d.const_value = d.value.const_value
        scope.declare(d.name, d, d.loc)

    def is_constant_expr(self, e: ast.Expression) -> bool:
        if e.const_value is not None:
            return True
        if isinstance(e, ast.ListExpression):
            return all(self.is_constant_expr(x) for x in e.elems)
        if isinstance(e, ast.StructExpression):
            return all(self.is_constant_expr(f.value) for f in e.fields)
        if isinstance(e, (ast.StringLiteral, ast.InvalidHeaderExpression)):
            return True
        if isinstance(e, ast.Member) and e.kind in ("enum_member", "error_member"):
            return True
        if isinstance(e, ast.Member) and e.kind == "field":
            return self.is_constant_expr(e.expr)  # a field of a constant struct
        if isinstance(e, ast.ArrayIndex) and isinstance(T.unwrap(e.expr.type or T.VoidType()), T.TupleType):
            return self.is_constant_expr(e.expr)
        if isinstance(e, ast.PathExpression) and isinstance(e.decl, ast.ConstDecl):
            return True
        if isinstance(e, ast.PathExpression) and isinstance(e.decl, ast.Parameter) and not e.decl.direction:
            # a constructor parameter of the enclosing parser/control: known when it is instantiated
            return True
        if isinstance(e, (ast.BinaryOp, ast.UnaryOp, ast.Mux, ast.Cast)):
            parts = {
                ast.BinaryOp: lambda x: (x.left, x.right),
                ast.UnaryOp: lambda x: (x.expr,),
                ast.Mux: lambda x: (x.cond, x.then, x.else_),
                ast.Cast: lambda x: (x.expr,),
            }[type(e)](e)
            return all(self.is_constant_expr(x) for x in parts)
        return False

    def extern_decl(self, d: ast.ExternDecl, scope: Scope) -> None:
        scope.declare(d.name, d, d.loc)
        es = self.generic_scope(scope, d.type_params, d)
        seen: dict[tuple[str, int], ast.MethodDecl] = {}
        for m in d.methods:
            if m.is_constructor and m.name != d.name:
                raise _err(f"constructor name {m.name} differs from extern {d.name}", m)
            if not m.is_constructor and m.name == d.name:
                raise _err(f"{m.name}: a constructor cannot have a return type", m)
            if m.is_constructor and m.type_params:
                raise _err(
                    f"{m.name}: a constructor cannot have type parameters (the extern's own are in scope)", m
                )
            shadowed = [t for t in m.type_params if t in d.type_params]
            if shadowed:
                raise _err(
                    f"{shadowed[0]}: type parameter of method {m.name} shadows the type parameter of extern "
                    f"{d.name} (give it another name)",
                    m,
                )
            ms = self.generic_scope(es, m.type_params, m)
            ret = _VOID if m.return_type is None else self.resolve(m.return_type, ms)
            m.type = T.FunctionType(m.name, self.params(m.params, ms, "method"), list(m.type_params), m, ret)
            key = (m.name + ("#ctor" if m.is_constructor else ""), len(m.params))
            if key in seen and not m.is_abstract and not m.is_constructor:
                raise _err(
                    f"ambiguous method {m.name} with {len(m.params)} parameters: {d.name} declares it "
                    f"twice (again on line {m.loc.line if m.loc else '?'}); overloads need different "
                    "numbers of parameters",
                    seen[key],
                )
            seen[key] = m

    # ---------------------------------------------------------------------------------------------
    # Functions, actions

    def function_decl(self, d: ast.FunctionDecl, scope: Scope) -> None:
        fs = self.generic_scope(scope, d.type_params, d)
        ret = self.resolve(d.return_type, fs)
        d.type = T.FunctionType(d.name, self.params(d.params, fs, "function"), list(d.type_params), d, ret)
        scope.declare(d.name, d, d.loc)
        body_scope = Scope(fs, "function", d)
        for p in d.params:
            body_scope.declare(p.name, p, p.loc)
        saved = self.return_type
        self.return_type = ret
        self.in_action += 1
        self.bodies.append(d)
        try:
            self.block(d.body, body_scope)
        finally:
            self.bodies.pop()
            self.return_type = saved
            self.in_action -= 1
        if not isinstance(ret, T.VoidType) and not self.always_returns(d.body):
            raise _err(f"function '{d.name}' does not return a value on every path", d)

    def always_returns(self, s: Any) -> bool:
        if isinstance(s, (ast.ReturnStatement, ast.ExitStatement)):
            return True
        if isinstance(s, ast.BlockStatement):
            return any(self.always_returns(x) for x in s.stmts)
        if isinstance(s, ast.IfStatement):
            return s.else_ is not None and self.always_returns(s.then) and self.always_returns(s.else_)
        if isinstance(s, ast.SwitchStatement):
            has_default = any(isinstance(c.label, ast.DefaultExpression) for c in s.cases)
            return has_default and all(c.body is None or self.always_returns(c.body) for c in s.cases)
        return False

    def action_decl(self, d: ast.ActionDecl, scope: Scope) -> None:
        params = self.params(d.params, scope, "action")
        seen_dirless = False
        for p in d.params:
            if not p.direction:
                seen_dirless = True
            elif seen_dirless:
                raise _err(
                    f"action parameter '{p.name}' with a direction follows a directionless parameter", p
                )
        d.type = T.ActionType(d.name, params, [], d, _VOID)
        scope.declare(d.name, d, d.loc)
        s = Scope(scope, "action", d)
        for p in d.params:
            s.declare(p.name, p, p.loc)
        saved = self.return_type
        self.return_type = _VOID
        self.in_action += 1
        self.bodies.append(d)
        try:
            self.block(d.body, s)
        finally:
            self.bodies.pop()
            self.in_action -= 1
            self.return_type = saved

    # ---------------------------------------------------------------------------------------------
    # Parsers and controls

    def keep_generic(self, d: ast.ParserDecl | ast.ControlDecl, scope: Scope) -> None:
        """Keep an unchecked copy of a generic parser or control, to check once per set of type
        arguments it is instantiated with (p4c's SpecializeAll makes such copies too)."""
        if d.type_params:
            pristine = self.__dict__.setdefault("_generic_decls", {})
            pristine.setdefault(id(d), (copy.deepcopy(d), scope))

    def specialized(self, t: T.ParserType | T.ControlType, ref: Any, info: ast.CallInfo) -> T.Type | None:
        """The type of a copy of generic parser/control `t.decl` checked with its type arguments (from
        `Name<args>` or inferred from the constructor arguments), or None when they are not known."""
        decl = t.decl
        names = list(getattr(decl, "type_params", []) or [])
        kept = self.__dict__.get("_generic_decls", {}).get(id(decl))
        if not names or kept is None:
            return None
        if isinstance(ref, ast.SpecializedTypeRef) and len(ref.args) == len(names):
            args = [a.resolved for a in ref.args]
        else:
            args = [info.type_bindings.get(n) for n in names]
        if any(a is None or self.has_typevars(a) for a in args):
            return None
        cache = self.__dict__.setdefault("_specialized", {})
        key = (id(decl), tuple(str(a) for a in args))
        if key not in cache:
            pristine, home = kept
            clone = copy.deepcopy(pristine)
            clone.type_params = []
            sc = Scope(home, "generic", clone)
            for n, a in zip(names, args, strict=True):
                alias = ast.TypedefDecl(n, ast.PrimTypeRef("_", loc=clone.loc), loc=clone.loc)
                alias.type = a
                sc.declare(n, alias, clone.loc)
            if isinstance(clone, ast.ParserDecl):
                self.parser_decl(clone, sc)
            else:
                self.control_decl(clone, sc)
            cache[key] = clone.type
        return cache[key]

    def parser_decl(self, d: ast.ParserDecl, scope: Scope) -> None:
        self.keep_generic(d, scope)
        distinct_parameter_names(d)
        gs = self.generic_scope(scope, d.type_params, d)
        params = self.params(d.params, gs, "parser")
        ctor = self.params(d.ctor_params, gs, "parser-ctor")
        d.type = T.ParserType(d.name, params, list(d.type_params), d, ctor)
        scope.declare(d.name, d, d.loc)
        self.generic_body(d, lambda: self.parser_body(d, gs))

    def parser_body(self, d: ast.ParserDecl, gs: Scope) -> None:
        ps = Scope(gs, "parser", d)
        for p in [*d.params, *d.ctor_params]:
            ps.declare(p.name, p, p.loc)
        accept = ast.ParserState("accept", loc=d.loc)
        reject = ast.ParserState("reject", loc=d.loc)
        ps.declare("accept", accept)
        ps.declare("reject", reject)
        for st in d.states:
            if st.name in ("accept", "reject"):
                raise _err(f"state '{st.name}' is predefined and cannot be declared", st)
            ps.declare(st.name, st, st.loc)
        if not any(st.name == "start" for st in d.states):
            raise _err(f"parser {d.name} has no 'start' state", d)
        if not reaches_an_end(d):
            raise _err(f"parser {d.name}: the parser never reaches the accept or reject state", d)
        saved = self.in_parser
        self.in_parser = True
        try:
            for loc in d.locals:
                self.local_decl(loc, ps)
            for st in d.states:
                ss = Scope(ps, "state", st)
                for c in st.components:
                    self.statement_or_decl(c, ss)
                if st.transition is not None:
                    self.transition(st.transition, ss)
        finally:
            self.in_parser = saved

    def transition(self, tr: ast.Expression, scope: Scope) -> None:
        if isinstance(tr, ast.PathExpression):
            self.state_ref(tr, scope)
            return
        assert isinstance(tr, ast.SelectExpression)
        key_types = []
        for k in tr.keys:
            kt = self.expr(k, scope)
            u = T.unwrap(kt)
            if isinstance(u, (T.StructLikeType, T.HeaderStackType, T.VarbitType, T.IntType)):
                # p4c: "Expression ... with a component of type ... cannot be used in 'select'"
                # (a select matches fixed-width values; an unsized int has no width to match)
                raise _err(f"a value of type {kt} cannot be used in 'select' (use bit<W> fields)", k)
            key_types.append(kt)
        tr.type = _STATE
        for c in tr.cases:
            try:
                self.keyset(c.keyset, key_types, scope)
            except CompileError as ex:
                if not ex.message.startswith("type mismatch in keyset value") or not (ex.loc and tr.loc):
                    raise
                # p4c reports a case whose type does not fit the key at the select expression
                raise CompileError(f"{ex.message} (the case on line {ex.loc.line})", tr.loc) from None
            self.state_ref(c.state, scope)

    def state_ref(self, e: ast.PathExpression, scope: Scope) -> None:
        d = scope.lookup(e.name)
        if not isinstance(d, ast.ParserState):
            raise _err(f"unknown parser state '{e.name}'", e)
        e.decl = d
        e.type = _STATE

    def keyset(self, ks: ast.Expression, key_types: list[T.Type], scope: Scope) -> None:
        """Check a select/entry keyset against the key types."""
        if isinstance(ks, ast.DefaultExpression):
            ks.type = T.SetType(key_types[0] if len(key_types) == 1 else T.TupleType(key_types))
            return
        if len(key_types) == 1:
            if isinstance(ks, ast.ListExpression) and len(ks.elems) == 1:
                self.keyset(ks.elems[0], key_types, scope)
                ks.type = ks.elems[0].type
                return
            self.simple_keyset(ks, key_types[0], scope)
            return
        if isinstance(ks, ast.ListExpression):
            if len(ks.elems) != len(key_types):
                raise _err(f"keyset has {len(ks.elems)} elements but the key has {len(key_types)}", ks)
            for e, kt in zip(ks.elems, key_types, strict=True):
                self.simple_keyset(e, kt, scope)
            ks.type = T.SetType(T.TupleType(key_types))
            return
        # a value_set of a struct/tuple type can match a tuple key
        t = self.expr(ks, scope)
        if isinstance(t, T.SetType):
            return
        raise _err(f"keyset must have {len(key_types)} elements", ks)

    def simple_keyset(self, e: ast.Expression, kt: T.Type, scope: Scope) -> None:
        call = find_call(e)
        if call is not None:
            raise _err(
                "no function calls allowed in a keyset (its values must be known at compile time)", call
            )
        if isinstance(e, ast.DefaultExpression):
            e.type = T.SetType(kt)
            return
        if isinstance(e, ast.BinaryOp) and e.op in ("&&&", ".."):
            self.expr(e.left, scope, kt)
            self.keyset_coerce(e.left, kt, "keyset value")
            self.expr(e.right, scope, kt)
            self.keyset_coerce(e.right, kt, "keyset mask" if e.op == "&&&" else "keyset bound")
            e.type = T.SetType(kt)
            return
        t = self.expr(e, scope, kt)
        if isinstance(t, T.SetType):
            return
        self.keyset_coerce(e, kt, "keyset value")

    def keyset_coerce(self, e: ast.Expression, kt: T.Type, what: str) -> None:
        """A keyset value for a key of type `kt`. A key of a serializable enum type also matches values
        of its underlying type (`(bit<16>)E.A &&& 0xff00`): p4c converts between the two in keysets."""
        ku, vu = T.unwrap(kt), T.unwrap(e.type) if e.type is not None else None
        if isinstance(ku, T.SerEnumType) and isinstance(vu, T.BitsType) and T.same_type(ku.underlying, vu):
            return
        if isinstance(ku, T.SerEnumType) and isinstance(vu, T.IntType) and e.const_value is not None:
            self.retype_int(e, ku.underlying)  # a literal keyset value matches the enum's bits
            return
        self.coerce(e, kt, what)

    def control_decl(self, d: ast.ControlDecl, scope: Scope) -> None:
        self.keep_generic(d, scope)
        distinct_parameter_names(d)
        gs = self.generic_scope(scope, d.type_params, d)
        params = self.params(d.params, gs, "control")
        ctor = self.params(d.ctor_params, gs, "control-ctor")
        d.type = T.ControlType(d.name, params, list(d.type_params), d, ctor)
        scope.declare(d.name, d, d.loc)
        self.generic_body(d, lambda: self.control_body(d, gs))

    def generic_body(self, d: ast.ParserDecl | ast.ControlDecl, check: Any) -> None:
        """Check a body now; for a generic parser or control, an error is kept and reported only if
        no instantiation is checked instead (each instantiation's copy is checked with its types,
        where, say, an extract of H is fine)."""
        if not d.type_params:
            check()
            return
        try:
            check()
        except CompileError as e:
            self.__dict__.setdefault("_generic_errors", []).append((d, e))

    def unused_generic_errors(self) -> None:
        """Raise the first error of a generic parser/control body that was never instantiated."""
        used = {k[0] for k in self.__dict__.get("_specialized", {})}
        for d, e in self.__dict__.get("_generic_errors", []):
            if id(d) not in used:
                raise e

    def control_body(self, d: ast.ControlDecl, gs: Scope) -> None:
        # The parameters are a scope around the locals: p4c lets a table shadow a parameter (a
        # warning) and then refuses only a reference from inside that table to the name. Other
        # locals named like a parameter stay refused, as before.
        pscope = Scope(gs, "control-parameters", d)
        for p in [*d.params, *d.ctor_params]:
            pscope.declare(p.name, p, p.loc)
        cs = Scope(pscope, "control", d)
        for loc in d.locals:
            name = getattr(loc, "name", None)
            if name and pscope.names.get(name) and not isinstance(loc, ast.TableDecl):
                raise _err(f"duplicate declaration of '{name}'", loc)
            self.local_decl(loc, cs)
        saved = self.return_type
        self.return_type = _VOID
        try:
            self.block(d.body, Scope(cs, "block"))
        finally:
            self.return_type = saved

    def local_decl(self, d: Any, scope: Scope) -> None:
        if isinstance(d, ast.ActionDecl):
            self.action_decl(d, scope)
        elif isinstance(d, ast.TableDecl):
            self.table_decl(d, scope)
        elif isinstance(d, ast.ValueSetDecl):
            t = self.resolve(d.elem_type, scope)
            if isinstance(T.unwrap(t), (T.IntType, T.StringType, T.VarbitType)):
                raise _err(f"{t}: illegal type for a value_set element (bit<W>, int<W>, a struct of them)", d)
            d.size_value = self.const_int(d.size, scope, "a value_set size")
            scope.declare(d.name, d, d.loc)
            del t
        elif isinstance(d, ast.FunctionDecl):
            self.function_decl(d, scope)
        else:
            self.statement_or_decl(d, scope)

    def instantiation(self, d: ast.Instantiation, scope: Scope) -> None:
        t = self.resolve(d.type_ref, scope)
        outer = scope.enclosing("control", "parser")
        if outer is not None and outer.owner is not None and getattr(t, "decl", None) is outer.owner:
            # p4c: "Self-referencing types not supported" (an instance of itself would never end)
            kind = "control" if isinstance(t, T.ControlType) else "parser"
            raise _err(f"{d.name}: {kind} {outer.owner.name} cannot instantiate itself", d.type_ref)
        d.type, d.ctor = self.construct(t, d.args, d.type_ref, scope, d)
        check_v1model_instance(d)
        if scope is self.globals and isinstance(d.type, (T.ParserType, T.ControlType)):
            kind = "parser" if isinstance(d.type, T.ParserType) else "control"
            raise _err(
                f"{d.name}: cannot instantiate a {kind} at top-level (instantiate it inside the parser or "
                "control that applies it, or pass it to the package)",
                d,
            )
        if d.initializer is not None:
            s = Scope(scope, "instance", d)
            s.declare("this", d)
            for f in d.initializer:
                if isinstance(f, ast.FunctionDecl):
                    self.function_decl(f, s)
                else:
                    raise UnsupportedError("this declaration in an instance initializer", f.loc)
        scope.declare(d.name, d, d.loc)

    def construct(
        self, t: T.Type, args: list[ast.Argument], ref: Any, scope: Scope, node: Any
    ) -> tuple[T.Type, Any]:
        """Check a constructor call of type `t`; returns the instance type and the matching ctor."""
        if isinstance(t, T.ExternType):
            ctors = t.decl.constructors()
            if not ctors:
                raise _err(f"extern {t.name} has no constructor", node)
            explicit = bool(t.type_args)
            bindings = dict(t.bindings)
            fn, info = self.match_call(ctors, args, scope, node, f"constructor of {t.name}", bindings)
            info.kind, info.decl, info.extern, info.name = "constructor", fn, t.decl, t.name
            node.ctor_call = info
            require_constant_ctor_args(info)
            if not explicit and t.decl.type_params:
                targs = tuple(info.type_bindings.get(n, T.TypeVar(n, t.decl)) for n in t.decl.type_params)
                # parameters not fixed by the constructor (v1model's counter<I>) are inferred per call
                t = T.ExternType(t.name, t.decl, targs)
            return t, fn
        if isinstance(t, (T.ParserType, T.ControlType, T.PackageType)):
            params = t.ctor_params if isinstance(t, (T.ParserType, T.ControlType)) else t.params
            if isinstance(t, (T.ParserType, T.ControlType)) and not isinstance(
                t.decl, (ast.ParserDecl, ast.ControlDecl)
            ):
                raise _err(f"cannot instantiate {t.name}: it is a type without an implementation", node)
            ftype = T.FunctionType(t.name, params, list(t.type_params), t.decl, _VOID)
            try:
                info = self.bind_and_check(ftype, args, scope, node, f"constructor of {t.name}", {})
            except CompileError as ex:
                raise at_package_decl(ex, t) from None
            info.kind, info.decl, info.name = "constructor", t.decl, t.name
            node.ctor_call = info
            require_constant_ctor_args(info)
            if t.type_params and info.type_bindings:
                t = self.subst(t, info.type_bindings)
            if isinstance(t, (T.ParserType, T.ControlType)):
                special = self.specialized(t, ref, info)
                if special is not None:
                    return self.construct(special, args, None, scope, node)  # binds the copy's params
            return t, None
        raise _err(f"cannot instantiate type {t}", node)

    # ---------------------------------------------------------------------------------------------
    # Tables

    def table_decl(self, d: ast.TableDecl, scope: Scope) -> None:
        scope.declare(d.name, d, d.loc)
        saved, self.table = self.table, d
        try:
            self.table_body(d, scope)
        finally:
            self.table = saved

    def table_body(self, d: ast.TableDecl, scope: Scope) -> None:
        key_types: list[T.Type] = []
        names: set[str] = set()
        for prop in d.properties:
            if prop.name in names:
                raise _err(f"table {d.name} has property '{prop.name}' twice", prop)
            names.add(prop.name)
        for k in d.keys:
            kt = self.expr(k.expr, scope)
            if k.match_kind not in self.match_kind_type.members:
                raise _err(f"unknown match kind '{k.match_kind}'", k)
            u = T.unwrap(kt)
            if not isinstance(u, (T.BitsType, T.BoolType, T.SerEnumType, T.ErrorType, T.EnumType, T.IntType)):
                raise _err(f"a table key cannot have type {kt}", k.expr)
            unnamed = None if ast.find_annotation(k.annotations, "name") else unnameable_key_part(k.expr)
            if unnamed is not None:
                raise _err(
                    "complex key expression requires a @name annotation (the control plane names a key "
                    "after its expression: fields, stack elements, slices, '&' masks and isValid() only)",
                    unnamed,
                )
            key_types.append(kt)
        lpm = [k for k in d.keys if k.match_kind == "lpm"]
        if len(lpm) > 1:
            # p4c-bm2-ss: "multiple LPM keys in table" (a BMv2 table matches one longest prefix)
            raise _err(
                f"multiple LPM keys in table {d.name} (BMv2 takes at most one lpm key; "
                f"the second is on line {lpm[1].loc.line if lpm[1].loc else '?'})",
                d,
            )
        for ref in d.actions:
            self.action_ref(ref, scope, "list")
        if not d.actions and d.property("actions") is None:
            raise _err(f"table {d.name} has no 'actions' property", d)
        listed = {id(r.action) for r in d.actions}
        if d.default_action is None:
            # the default action of a table without one is core.p4's NoAction
            noaction = self.globals.lookup("NoAction")
            if isinstance(noaction, ast.ActionDecl) and noaction.params:
                raise _err(
                    "NoAction: expected an action with no parameters (the default action of a table "
                    "without one); did you include core.p4?",
                    noaction,
                )
        order = [p.name for p in d.properties]
        if "entries" in order and "key" in order and order.index("entries") < order.index("key"):
            raise _err(
                f"table {d.name}: its entries come before its key, whose type they need "
                "(a table's properties are read in order: declare the key first)",
                d.properties[order.index("key")],
            )
        if (
            "default_action" in order
            and "actions" in order
            and order.index("default_action") < order.index("actions")
        ):
            name = d.default_action.expr.name if d.default_action is not None else "its default action"
            raise _err(
                f"{d.name} has no action list before its default_action, so it cannot invoke '{name}()' "
                "(a table's properties are read in order: declare actions first)",
                d,
            )
        if d.default_action is not None:
            self.action_ref(d.default_action, scope, "default", d)
            if id(d.default_action.action) not in listed:
                raise _err(
                    f"default action {d.default_action.expr.name} is not in the actions list of table {d.name}",
                    d.default_action,
                )
        if d.entries is not None:
            if not d.keys:
                raise _err(f"table {d.name} has entries but no key", d)
            for entry in d.entries:
                if len(entry.keys) != len(key_types):
                    raise _err(
                        f"entry has {len(entry.keys)} key values but the key has {len(key_types)}", entry
                    )
                for kv, kt in zip(entry.keys, key_types, strict=True):
                    self.simple_keyset(kv, kt, scope)
                self.action_ref(entry.action, scope, "entry", d)
                if id(entry.action.action) not in listed:
                    raise _err(
                        f"action {entry.action.expr.name} is not in the actions list of table {d.name}", entry
                    )
                if entry.priority is not None and d.entries_const:
                    raise _err(
                        f"table {d.name} has 'const entries', which cannot have priorities "
                        "(their order gives the priority)",
                        entry.priority,
                    )
                if entry.priority is not None:
                    entry.priority_value = self.const_int(entry.priority, scope, "an entry priority")
                else:
                    pa = ast.find_annotation(entry.annotations, "priority")
                    if pa is not None and pa.args:
                        entry.priority_value = self.const_int(pa.args[0], scope, "an entry priority")
                        entry.priority_is_annotation = True
            if any(e.priority is not None for e in d.entries) and all(
                k.match_kind in ("exact", "lpm") for k in d.keys
            ):
                # p4c: "Key key match type does not require priorities, but some are specified"
                # (only ternary, range and optional keys let entries overlap)
                raise _err(
                    f"table {d.name}: its key's match kinds ({', '.join(k.match_kind for k in d.keys)}) "
                    "do not use priorities, but some entries give one",
                    d.property("key") or d,
                )
        for prop in d.properties:
            if prop.name in ("key", "actions", "default_action", "entries"):
                continue
            e = prop.value
            if prop.name == "size":
                d.size_value = self.const_int(e, scope, "the table size")
                if d.size_value < 0:
                    raise _err("the table size must not be negative", e)
            elif prop.name in (
                "implementation",
                "counters",
                "meters",
                "support_timeout",
                "psa_implementation",
            ):
                t = self.expr(e, scope)
                if prop.name in _DIRECT_EXTERNS:
                    check_direct_extern(prop.name, t, d, e)
            else:
                # a target-specific property: check it when it makes sense, never reject the table
                with contextlib.suppress(CompileError):
                    self.expr(e, scope)

    def action_ref(self, ref: ast.ActionRef, scope: Scope, mode: str, table: Any = None) -> None:
        """An action in `actions = {...}` (mode "list": only directional parameters may be bound),
        `default_action` ("default") or an entry ("entry": the control-plane parameters too)."""
        path = ref.expr
        cands = (self.globals if path.is_global else scope).lookup_all(path.name)
        if not cands:
            raise _err(f"unknown action '{path.name}' (declaration not found)", path)
        d = cands[-1]
        if not isinstance(d, ast.ActionDecl):
            raise _err(f"'{path.name}' is not an action", path)
        path.decl = d
        path.type = d.type
        if mode == "list":
            unbound = [p for p in d.params[len(ref.args or []) :] if p.direction]
            if unbound:
                raise _err(
                    f"parameter '{unbound[0].name}' of action {d.name} has a direction and must be bound "
                    f"in the actions list (write {d.name}(...))",
                    path,
                )
        if ref.args is None:
            if mode != "list" and any(not p.direction for p in d.params):
                # `default_action = a;` with parameters is not allowed
                raise _err(f"action {d.name} needs arguments for its parameters", path)
            return
        params = d.params
        args = ref.args
        if mode == "list":
            bound = params[: len(args)]
            if any(not p.direction for p in bound):
                raise _err(
                    f"only the parameters with a direction of action {d.name} can be bound in the actions list",
                    path,
                )
            ftype = T.ActionType(d.name, [self.param_info(p) for p in bound], [], d, _VOID)
        else:
            listed = None
            if table is not None:
                for r in table.actions:
                    if r.action is d:
                        listed = r
                        break
            skip = len(listed.args) if listed is not None and listed.args else 0
            directional = [p for p in params if p.direction]
            if len(args) == len(params):
                bound = params
                for given, listed_arg in zip(
                    args[:skip], (listed.args or []) if listed is not None else [], strict=False
                ):
                    if not same_expression(given.value, listed_arg.value):
                        raise _err(
                            f"argument does not match the one bound in the actions list of table {table.name} "
                            f"(line {listed.loc.line if listed.loc else '?'})",
                            given,
                        )
            elif len(args) == len(params) - skip or len(args) == len(params) - len(directional):
                bound = params[len(params) - len(args) :]
            else:
                raise _err(f"action {d.name} takes {len(params)} arguments but {len(args)} were given", path)
            ftype = T.ActionType(d.name, [self.param_info(p) for p in bound], [], d, _VOID)
        call = ast.MethodCallExpression(path, [], args, loc=ref.loc)
        info = self.bind_and_check(ftype, args, scope, call, f"action {d.name}", {})
        info.kind = "action"
        info.decl = d
        call.call = info
        call.type = _VOID
        ref.call = call

    def param_info(self, p: ast.Parameter) -> T.ParamInfo:
        assert p.type is not None
        optional = ast.find_annotation(p.annotations, "optional") is not None
        return T.ParamInfo(p.name, p.direction, p.type, p.default is not None, optional, p)


def reaches_an_end(d: ast.ParserDecl) -> bool:
    """Whether some path of transitions from `start` ends in accept or reject (a state without a
    transition goes to reject): a parser that only loops is an error, as p4c says."""
    states = {st.name: st for st in d.states}
    seen: set[str] = set()
    todo = ["start"]
    while todo:
        name = todo.pop()
        if name in ("accept", "reject") or name not in states:
            return True  # an unknown name is reported by the transition check itself
        if name in seen:
            continue
        seen.add(name)
        tr = states[name].transition
        if tr is None:
            return True
        if isinstance(tr, ast.PathExpression):
            todo.append(tr.name)
        elif isinstance(tr, ast.SelectExpression):
            todo.extend(c.state.name for c in tr.cases)
        else:
            return True
    return False


def same_expression(a: Any, b: Any) -> bool:
    """Whether two expressions are written the same (names, members, indices and constants): the
    directional arguments of a default action or entry must repeat those of the actions list."""
    if type(a) is not type(b):
        return False
    if isinstance(a, ast.Constant):
        return a.value == b.value
    if isinstance(a, ast.PathExpression):
        return a.name == b.name and a.is_global == b.is_global
    if isinstance(a, ast.Member):
        return a.member == b.member and same_expression(a.expr, b.expr)
    if isinstance(a, ast.ArrayIndex):
        return same_expression(a.expr, b.expr) and same_expression(a.index, b.index)
    if isinstance(a, ast.Slice):
        return a.hi_value == b.hi_value and a.lo_value == b.lo_value and same_expression(a.expr, b.expr)
    return a is b


def find_call(e: Any) -> ast.MethodCallExpression | None:
    """The first call inside expression `e`, if any."""
    if isinstance(e, ast.MethodCallExpression):
        return e
    if not isinstance(e, ast.Expression):
        return None
    for x in vars(e).values():
        for y in x if isinstance(x, list) else [x]:
            found = find_call(y) if isinstance(y, ast.Expression) else None
            if found is not None:
                return found
    return None


def unnameable_key_part(e: ast.Expression) -> ast.Expression | None:
    """The innermost part of a key expression that the control plane cannot name (p4c's
    KeyNameGenerator), or None: names exist for paths, members, constant or named stack indices,
    slices, `&` of named parts and `isValid()`; constants are their own names."""
    if e.const_value is not None and not isinstance(e, ast.PathExpression):
        return None
    if isinstance(e, ast.PathExpression):
        return None
    if isinstance(e, ast.Member):
        return unnameable_key_part(e.expr)
    if isinstance(e, ast.ArrayIndex):
        return unnameable_key_part(e.expr) or unnameable_key_part(e.index)
    if isinstance(e, ast.Slice):
        return unnameable_key_part(e.expr)
    if isinstance(e, ast.BinaryOp) and e.op == "&":
        return unnameable_key_part(e.left) or unnameable_key_part(e.right)
    if isinstance(e, ast.MethodCallExpression):
        m = e.method
        if isinstance(m, ast.Member) and m.member == "isValid" and not e.args:
            return unnameable_key_part(m.expr)
        inner = unnameable_key_part(m.expr) if isinstance(m, ast.Member) else None
        return inner or e
    parts = [x for x in vars(e).values() if isinstance(x, ast.Expression)]
    for p in parts:
        inner = unnameable_key_part(p)
        if inner is not None:
            return inner
    return e


def distinct_parameter_names(d: ast.ParserDecl | ast.ControlDecl) -> None:
    """A parser's or control's type parameters, parameters and constructor parameters are one name
    space (p4c: "Duplicated parameter name"): `control C<p>(inout bit<32> p)` is an error."""
    seen: dict[str, Any] = {name: d for name in d.type_params}
    for p in [*d.params, *d.ctor_params]:
        first = seen.get(p.name)
        if first is not None:
            # at the first of the two, as p4c reports it (a type parameter: at the declaration)
            line = f" (again on line {p.loc.line})" if p.loc is not None else ""
            what = "a type parameter and a parameter" if first is d else "two parameters"
            raise _err(f"duplicated parameter name '{p.name}': {what} of {d.name}{line}", first)
        seen[p.name] = p


def _fixed_width_struct(t: T.StructType) -> bool:
    """A struct a header may hold: only bit<W>, int<W>, bool, serializable enums and such structs,
    nested to any depth (the spec's rule; p4c flattens them all into the header's fields)."""
    for f in t.fields:
        u = T.unwrap(f.type)
        if isinstance(u, T.StructType):
            if not _fixed_width_struct(u):
                return False
        elif not isinstance(u, (T.BitsType, T.BoolType, T.SerEnumType)):
            return False
    return True


def require_constant_ctor_args(info: ast.CallInfo) -> None:
    """Constructor arguments are fixed when the program is compiled: a number or bool given to an
    instance must be a compile-time constant (p4c: "cannot evaluate to a compile-time constant")."""
    for p, a in zip(info.params, info.args, strict=False):
        if a is None or a.const_value is not None:
            continue
        if not isinstance(T.unwrap(p.type), (T.BitsType, T.IntType, T.BoolType)):
            continue
        culprit = run_time_name(a)
        if culprit is not None:
            text = culprit.name if isinstance(culprit, ast.PathExpression) else "a call"
            raise _err(f"{text}: cannot evaluate to a compile-time constant (argument '{p.name}')", culprit)


# the table properties that name a direct extern instance, and the v1model extern each must be
_DIRECT_EXTERNS = {"counters": ("direct_counter", "counter"), "meters": ("direct_meter", "meter")}


def check_direct_extern(prop: str, t: Any, table: ast.TableDecl, e: Any) -> None:
    """p4c's P4Runtime rules for `counters` and `meters`: the value is an instance (p4c: "Expected
    counters property value for table t to resolve to an extern instance") of direct_counter or
    direct_meter ("Expected a direct counter"); an indexed counter there is a common mistake."""
    want, kind = _DIRECT_EXTERNS[prop]
    u = T.unwrap(t) if t is not None else None
    if not isinstance(u, T.ExternType):
        raise _err(
            f"expected the {prop} property of table {table.name} to name an extern instance ({want})", e
        )
    if u.name != want:
        raise _err(f"expected a direct {kind}: {u.name} is not a {want} (table {table.name}, {prop})", e)


def at_package_decl(ex: CompileError, t: T.Type) -> CompileError:
    """p4c reports an argument of a package instantiation whose type does not fit its parameter at
    the package's declaration (`error: 'package P'`, then where the argument is); the same here, with
    the argument's place as a note. Other errors stay where they are."""
    decl = getattr(t, "decl", None)
    if not isinstance(t, T.PackageType) or not ex.message.startswith("type mismatch in argument"):
        return ex
    if decl is None or decl.loc is None or ex.loc is None:
        return ex
    return CompileError(
        f"package {t.name}: {ex.message}", decl.loc, [("the argument that does not fit", ex.loc), *ex.notes]
    )
