"""Type checker, part 5: calls (overloads, named/default arguments, generic inference, directions)
and assignability (implicit conversions of literals, lists and struct initializers)."""

from __future__ import annotations

from typing import Any

from p4kit.compiler import ast
from p4kit.compiler import types as T  # noqa: N812
from p4kit.compiler.diagnostics import CompileError
from p4kit.compiler.scopes import Scope
from p4kit.compiler.tc_common import (
    _BOOL,
    _INT,
    _SIZE_METHODS,
    _VOID,
    CheckerState,
    _err,
    check_not_recursive,
    refuse_default_values,
)
from p4kit.compiler.tc_exprs import has_varbit

# What p4c's BMv2 back end turns into parser operations; any other extern call in a parser state is
# refused there ("Unsupported in parser on this target"): mark_to_drop, hash, registers, counters, ...
# belong to controls. static_assert is evaluated by the compiler and leaves nothing to run.
_PARSER_FUNCTIONS = frozenset({"verify", "assert", "assume", "log_msg", "static_assert"})
_PARSER_METHODS = frozenset({("packet_in", "extract"), ("packet_in", "lookahead"), ("packet_in", "advance")})
_NOT_IN_PARSER = (
    "unsupported in parser on this target (a BMv2 parser state runs only extract, lookahead, advance, "
    "verify, assert, assume and log_msg; call it from a control)"
)


def obj_text(e: Any) -> str:
    """A short source-like name for the object a method is called on (`pkt`, `meta.r`)."""
    if isinstance(e, ast.PathExpression):
        return e.name
    if isinstance(e, ast.Member):
        return f"{obj_text(e.expr)}.{e.member}"
    return "..."


def refuse_out_nested_struct(info: ast.CallInfo, call: ast.MethodCallExpression, shown: str) -> None:
    """p4c's mid end (NestedStructs) flattens structs that hold structs, headers, tuples or stacks
    into separate variables, which an extern cannot write back through: an `out` or `inout`
    parameter of an extern function or method with such a type is refused ("extern functions with
    'out' nested struct argument not supported")."""
    for p in info.params:
        if p.direction not in ("out", "inout"):
            continue
        t = T.unwrap(p.type)
        nested = (T.StructLikeType, T.TupleType, T.HeaderStackType)
        if isinstance(t, T.StructType) and any(isinstance(T.unwrap(f.type), nested) for f in t.fields):
            raise _err(
                f"{shown}(...): extern functions with 'out' nested struct argument "
                f"({p.name}: {p.type}) not supported (pass the header or the fields one by one)",
                call,
            )


# v1model calls whose `result` BMv2 writes as one field (a hash, a random number, a meter colour,
# a register cell): a struct or header there has no field to write.
_SCALAR_RESULTS = {(None, "hash"), (None, "random"), ("meter", "execute_meter"), ("direct_meter", "read")}


def check_scalar_result(extern: Any, fn: Any, info: ast.CallInfo, call: ast.MethodCallExpression) -> None:
    """Refuse a v1model hash/random/meter call whose result is not a bit<W>, int<W> or bool value
    (it crashed the back end); BMv2's primitives write a single field."""
    owner = extern.name if extern is not None else None
    if (owner, fn.name) not in _SCALAR_RESULTS or not str(getattr(fn.loc, "file", "")).endswith("v1model.p4"):
        return
    for p, a in zip(info.params, info.args, strict=False):
        if p.name != "result" or a is None or a.type is None:
            continue
        t = T.unwrap(a.type)
        if isinstance(t, T.SerEnumType):
            t = t.underlying
        if not isinstance(t, (T.BitsType, T.BoolType)):
            what = f"{owner}.{fn.name}" if owner else fn.name
            raise _err(
                f"{what}: its result must be a bit<W>, int<W> or bool field on BMv2, not {a.type} "
                "(BMv2 writes it as one field)",
                a,
            )


def check_digest_type(t: T.Type | None, call: ast.MethodCallExpression) -> None:
    """p4c's BMv2 back end names a digest after its data's type, which must then be a struct: a
    header or header union is refused, and p4c reports it at that type's declaration ("expected a
    struct type"); a list `{a, b}` or a bit<W> value is a digest of its own (and enums and `type`s
    are bit<W> by then: p4c's mid end replaces them)."""
    named = (T.HeaderType, T.HeaderUnionType)
    if not isinstance(t, named) or t.decl is None:
        return
    name = getattr(t, "name", str(t))
    raise CompileError(
        f"{name}: expected a struct type (the data of a digest is a struct, or a list {{...}} of fields)",
        t.decl.loc,
        notes=[(f"digest of {name} here", call.loc)],
    )


class CallsMixin(CheckerState):
    """Resolves calls to their callee and checks that values fit where they are used."""

    # ---------------------------------------------------------------------------------------------
    # Calls

    def e_MethodCallExpression(self, e: ast.MethodCallExpression, scope: Scope, expected: Any) -> T.Type:
        m = e.method
        targs = [self.resolve(a, scope) for a in e.type_args]
        if isinstance(m, ast.PathExpression):
            cands = (self.globals if m.is_global else scope).lookup_all(m.name)
            if not cands:
                raise _err(f"unknown name '{m.name}' (declaration not found)", m)
            first = cands[-1]
            if isinstance(first, ast.ActionDecl):
                if self.in_parser:
                    raise _err(f"{first.name}(...): action calls are not allowed within parsers", e)
                if self.bodies and isinstance(self.bodies[-1], ast.FunctionDecl):
                    # p4c: "Functions cannot call actions" (a function may run where no action may)
                    raise _err(f"{first.name}: functions cannot call actions", e)
                check_not_recursive(self, first, m)
                m.decl = first
                m.type = first.type
                if targs:
                    raise _err("an action takes no type arguments", m)
                info = self.bind_and_check(first.type, e.args, scope, e, f"action {first.name}", {})
                info.kind = "action"
                info.decl = first
                e.call = info
                return _VOID
            if all(isinstance(c, (ast.FunctionDecl, ast.ExternFunctionDecl)) for c in cands):
                fn, info = self.match_call(cands, e.args, scope, e, f"function {m.name}", {}, targs)
                check_not_recursive(self, fn, m)
                m.decl = fn
                m.type = fn.type
                info.kind = "function" if isinstance(fn, ast.FunctionDecl) else "extern_function"
                info.decl = fn
                e.call = info
                if fn.name == "static_assert" and isinstance(fn, ast.ExternFunctionDecl):
                    self.static_assert(info, e)
                if isinstance(fn, ast.ExternFunctionDecl):
                    refuse_out_nested_struct(info, e, fn.name)
                    check_scalar_result(None, fn, info, e)
                if fn.name == "digest" and isinstance(fn, ast.ExternFunctionDecl):
                    check_digest_type(info.type_bindings.get("T"), e)
                if (
                    self.in_parser
                    and isinstance(fn, ast.ExternFunctionDecl)
                    and fn.name not in _PARSER_FUNCTIONS
                ):
                    raise _err(f"{fn.name}(...): {_NOT_IN_PARSER}", e)
                if (
                    fn.name == "verify"
                    and isinstance(fn, ast.ExternFunctionDecl)
                    and not self.in_parser
                    and scope.enclosing("control") is not None
                ):
                    raise _err("verify: may only be invoked in parsers", e)
                return self.subst(fn.type.ret, info.type_bindings)
            self.expr(m, scope)
            raise _err(f"'{m.name}' is not a function or action and cannot be called", m)
        if isinstance(m, ast.Member):
            self.expr(m, scope)
            obj = m.expr
            bt = obj.type
            assert bt is not None
            u = T.unwrap(bt)
            name = m.member
            if isinstance(u, T.ExternType):
                methods = u.decl.methods_named(name)
                # type arguments of the instance that its constructor could not fix stay open here
                known = {k: v for k, v in u.bindings.items() if not isinstance(v, T.TypeVar)}
                fn, info = self.match_call(methods, e.args, scope, e, f"method {u.name}.{name}", known, targs)
                m.decl = fn
                refuse_out_nested_struct(info, e, f"{obj_text(obj)}.{name}")
                check_scalar_result(u.decl, fn, info, e)
                if self.in_parser and (u.decl.name, name) not in _PARSER_METHODS:
                    raise _err(f"{obj_text(obj)}.{name}(...): {_NOT_IN_PARSER}", e)
                self.check_packet_method(u.decl.name, name, info, e)
                info.kind = "extern_method"
                info.decl = fn
                info.extern = u.decl
                info.obj = obj
                e.call = info
                return self.subst(fn.type.ret, info.type_bindings)
            if isinstance(u, T.TableType):
                if self.in_action:
                    raise _err(f"table {u.decl.name} cannot be applied inside an action or function", e)
                if self.in_parser:
                    raise _err("a table cannot be applied in a parser", e)
                if e.args:
                    raise _err("apply() of a table takes no arguments", e)
                e.call = ast.CallInfo("table_apply", decl=u.decl, obj=obj, name="apply")
                return T.ApplyResultType(u.decl)
            if isinstance(bt, T.TypeOfType) and isinstance(bt.type, (T.ControlType, T.ParserType)):
                u = bt.type
                if not isinstance(u.decl, (ast.ControlDecl, ast.ParserDecl)):
                    raise _err(f"{u.name} is a type without an implementation and cannot be applied", e)
                if u.ctor_params:
                    raise _err(
                        f"{u.name} has constructor parameters and must be instantiated to be applied", e
                    )
                obj = self.instantiate_direct_call(m, u, scope)
            if isinstance(u, (T.ControlType, T.ParserType)):
                if self.in_action:
                    raise _err(f"{u.name}.apply() cannot be called inside an action or function", e)
                kind = "control_apply" if isinstance(u, T.ControlType) else "parser_apply"
                if kind == "parser_apply" and not self.in_parser:
                    raise _err("a parser can only be applied in a parser", e)
                if kind == "control_apply" and self.in_parser:
                    raise _err("a control cannot be applied in a parser", e)
                ftype = T.FunctionType(u.name, u.params, [], u.decl, _VOID)
                info = self.bind_and_check(ftype, e.args, scope, e, f"{u.name}.apply", {})
                info.kind = kind
                # the Instantiation for `inst.apply()`, the ControlDecl/ParserDecl for `C.apply()`
                info.decl = obj.decl if isinstance(obj, ast.PathExpression) else u.decl
                info.obj = obj
                info.name = "apply"
                e.call = info
                return _VOID
            if m.kind == "method":
                # built-in methods of headers, unions, stacks and types
                if name in ("push_front", "pop_front"):
                    if len(e.args) != 1:
                        raise _err(f"{name} takes one argument", e)
                    cnt = self.const_int(e.args[0].value, scope, f"the argument of {name}")
                    if cnt < 0:
                        raise _err(f"the argument of {name} must not be negative", e)
                    self.check_lvalue(obj, "modify")
                    e.call = ast.CallInfo(
                        "builtin",
                        obj=obj,
                        name=name,
                        args=[e.args[0].value],
                        params=[T.ParamInfo("count", "in", _INT)],
                    )
                    return _VOID
                if e.args:
                    raise _err(f"{name}() takes no arguments", e)
                e.call = ast.CallInfo("builtin", obj=obj, name=name)
                if name in _SIZE_METHODS:
                    target = bt.type if isinstance(bt, T.TypeOfType) else bt
                    try:
                        bits = T.bit_width(target, minimum=name.startswith("min"))
                    except ValueError:
                        raise _err(f"{name}() is not defined for type {target}", e) from None
                    e.const_value = bits if "Bits" in name else (bits + 7) // 8
                    return _INT
                if name in ("setValid", "setInvalid"):
                    self.check_lvalue(obj, "modify")
                    return _VOID
                return _BOOL
            raise _err(f"'{name}' is not a method and cannot be called", m)
        t = self.expr(m, scope)
        raise _err(f"a value of type {t} cannot be called", e)

    def instantiate_direct_call(self, m: ast.Member, u: T.CallableType, scope: Scope) -> ast.PathExpression:
        """`C.apply(args)` applies an implicit instance of C; as p4c does, declare that instance in the
        enclosing parser or control (named `C_inst`, `C_inst_1`, ...) and apply it by name."""
        owner_scope = scope.enclosing("parser", "control")
        if owner_scope is None or not isinstance(owner_scope.owner, (ast.ParserDecl, ast.ControlDecl)):
            raise _err(f"{u.name}.apply() can only be called in a parser or control", m)
        owner = owner_scope.owner
        taken = {d.name for d in owner.locals} | set(owner_scope.names)
        name = f"{u.name}_inst"
        n = 0
        while name in taken:
            n += 1
            name = f"{u.name}_inst_{n}"
        ref = ast.NamedTypeRef(u.name, loc=m.loc)
        ref.resolved = u
        ref.decl = u.decl
        inst = ast.Instantiation(name, ref, [], None, loc=m.loc)
        inst.type = u
        owner.locals.append(inst)
        owner_scope.declare(name, inst, m.loc)
        path = ast.PathExpression(name, loc=m.expr.loc, decl=inst, type=u)
        m.expr = path
        m.type = T.FunctionType("apply", [], [], None, _VOID)
        return path

    def static_assert(self, info: ast.CallInfo, node: Any) -> None:
        """core.p4's static_assert(check[, message]) is evaluated now, as p4c does."""
        check = info.args[0] if info.args else None
        if check is None or not isinstance(check.const_value, bool):
            raise _err("static_assert needs a compile-time constant condition", node)
        node.const_value = True
        if not check.const_value:
            msg = info.args[1] if len(info.args) > 1 else None
            text = msg.value if isinstance(msg, ast.StringLiteral) else "static_assert failed"
            raise _err(f"static assertion failed: {text}", node)

    def check_packet_method(self, extern: str, method: str, info: ast.CallInfo, node: Any) -> None:
        """extract/emit/lookahead only move headers (and, for emit, structs and stacks of them)."""
        if extern == "packet_in" and method == "extract" and info.args and info.args[0] is not None:
            t = T.unwrap(info.args[0].type or _VOID)
            if not isinstance(t, T.HeaderType):
                raise _err(f"extract needs a header, not a value of type {t}", info.args[0])
        if extern == "packet_in" and method == "lookahead":
            looked = info.type_bindings.get("T")
            if looked is not None and has_varbit(T.unwrap(looked)):
                raise _err(f"{looked}: the type argument of lookahead must be a fixed-width type", node)
        if extern == "packet_out" and method == "emit" and info.args and info.args[0] is not None:
            if not self.emittable(T.unwrap(info.args[0].type or _VOID)):
                raise _err(
                    f"emit needs a header, header stack, header union or a struct of them, not {info.args[0].type}",
                    info.args[0],
                )

    def emittable(self, t: T.Type) -> bool:
        if isinstance(t, (T.HeaderType, T.HeaderUnionType)):
            return True
        if isinstance(t, T.HeaderStackType):
            return True
        if isinstance(t, T.StructType):
            return all(self.emittable(T.unwrap(f.type)) for f in t.fields)
        if isinstance(t, T.TupleType):
            return all(self.emittable(T.unwrap(x)) for x in t.elems)
        return False

    def match_call(
        self,
        cands: list[Any],
        args: list[ast.Argument],
        scope: Scope,
        node: Any,
        what: str,
        bindings: dict[str, T.Type],
        targs: list[T.Type] | None = None,
    ) -> tuple[Any, ast.CallInfo]:
        """Pick the overload that fits the arguments (count and names) and check the call."""
        check_argument_names(args, what)
        fitting = [c for c in cands if self.arity_fits(c.type, args)]
        if not fitting:
            counts = sorted({len(c.type.params) for c in cands})
            cs = " or ".join(str(c) for c in counts)
            raise _err(f"wrong number of arguments for {what}: expected {cs}, got {len(args)}", node)
        if targs:
            with_targs = [c for c in fitting if len(c.type.type_params) == len(targs)]
            if not with_targs:
                raise _err(
                    f"{what} takes {len(fitting[0].type.type_params)} type arguments, not {len(targs)}", node
                )
            fitting = with_targs
        last_error: CompileError | None = None
        for c in fitting:
            b = dict(bindings)
            if targs:
                b.update(zip(c.type.type_params, targs, strict=True))
            if len(fitting) == 1:
                return c, self.bind_and_check(c.type, args, scope, node, what, b)
            try:
                return c, self.bind_and_check(c.type, args, scope, node, what, b)
            except CompileError as ex:
                last_error = ex
        assert last_error is not None
        raise last_error

    def arity_fits(self, ft: T.CallableType, args: list[ast.Argument]) -> bool:
        params = ft.params
        names = {p.name for p in params}
        if any(a.name is not None for a in args):
            if not all(a.name in names for a in args):
                return False
            given = {a.name for a in args}
            return all(p.name in given or p.has_default or p.optional for p in params)
        if len(args) > len(params):
            return False
        return all(p.has_default or p.optional for p in params[len(args) :])

    def bind_and_check(
        self,
        ft: T.CallableType,
        args: list[ast.Argument],
        scope: Scope,
        node: Any,
        what: str,
        bindings: dict[str, T.Type],
    ) -> ast.CallInfo:
        """Match `args` to the parameters of `ft`, infer type variables, check types and directions."""
        params = ft.params
        slots: list[ast.Expression | None] = [None] * len(params)
        check_argument_names(args, what)
        named = any(a.name is not None for a in args)
        if named:
            index = {p.name: i for i, p in enumerate(params)}
            for a in args:
                if a.name not in index:
                    raise _err(f"{what} has no parameter named '{a.name}'", a)
                i = index[a.name]
                if slots[i] is not None:
                    raise _err(f"argument '{a.name}' is given twice", a)
                slots[i] = a.value
        else:
            if len(args) > len(params):
                raise _err(
                    f"wrong number of arguments for {what}: expected {len(params)}, got {len(args)}", node
                )
            for i, a in enumerate(args):
                slots[i] = a.value
        for p, s in zip(params, slots, strict=True):
            if s is None and not (p.has_default or p.optional):
                raise _err(f"wrong number of arguments for {what}: missing argument for '{p.name}'", node)
        # type the arguments; bind type variables from arguments whose type does not come from context
        b = dict(bindings)
        for p, s in zip(params, slots, strict=True):
            if s is None:
                continue
            pt = self.subst(p.type, b)
            refuse_default_values(s, f"an argument of {what}")
            exp = pt if not self.has_typevars(pt) else None
            at = self.expr(s, scope, exp)
            self.unify(pt, at, b)
        info = ast.CallInfo("", params=[], args=list(slots), type_bindings={})
        for p, s in zip(params, slots, strict=True):
            pt = self.subst(p.type, b)
            # an int argument of a still-generic type: bind it as int (p4c does the same)
            if self.has_typevars(pt) and s is not None:
                self.unify(pt, s.type or _INT, b, weak=True)
                pt = self.subst(p.type, b)
                if (
                    isinstance(p.type, T.TypeVar)
                    and isinstance(pt, T.IntType)
                    and p.type.name not in bindings
                ):
                    # p4c: a type variable needs a width; an unsized literal gives none
                    raise _err(
                        f"could not infer a width for the unsized integer given for '{p.name}' of {what}: "
                        f"its type parameter {p.type.name} needs one (write e.g. 16w0 or (bit<16>)0)",
                        s,
                    )
            if isinstance(p.type, T.TypeVar) and isinstance(pt, T.StringType) and p.direction:
                where = p.decl if p.decl is not None else s
                raise _err(f"{p.name}: a parameter with type string cannot have a direction", where)
            info.params.append(T.ParamInfo(p.name, p.direction, pt, p.has_default, p.optional, p.decl))
            if s is None:
                continue
            if isinstance(s, ast.DefaultExpression) and s.is_dontcare:
                if p.direction not in ("out", "inout") and not isinstance(p.type, T.TypeVar):
                    raise _err(f"'_' can only be passed to an out parameter ('{p.name}' of {what})", s)
                s.type = pt
                continue
            self.coerce(s, pt, f"argument '{p.name}' of {what}")
            if p.direction in ("out", "inout"):
                self.check_lvalue(s, f"pass as the {p.direction} argument '{p.name}' of {what}")
            is_ctor = isinstance(ft.decl, ast.MethodDecl) and ft.decl.is_constructor
            if is_ctor and not p.direction:
                # extern constructor arguments configure the target: they must be known now
                if not self.is_constant_expr(s) and not isinstance(s.type, (T.ExternType, T.CallableType)):
                    raise _err(f"argument '{p.name}' of {what} must be a compile-time constant", s)
        info.type_bindings = b
        return info

    def has_typevars(self, t: T.Type) -> bool:
        if isinstance(t, T.TypeVar):
            return True
        if isinstance(t, T.HeaderStackType):
            return self.has_typevars(t.elem)
        if isinstance(t, T.TupleType):
            return any(self.has_typevars(x) for x in t.elems)
        if isinstance(t, (T.ExternType, T.StructLikeType)):
            return any(self.has_typevars(x) for x in t.type_args)
        if isinstance(t, T.CallableType):
            return any(self.has_typevars(p.type) for p in t.params)
        return False

    def unify(self, pattern: T.Type, actual: T.Type, b: dict[str, T.Type], weak: bool = False) -> None:
        """Bind type variables of `pattern` so that it matches `actual` (no error here: the argument
        check that follows reports mismatches). An `int` binds only when `weak` (no better evidence)."""
        if isinstance(pattern, T.TypeVar):
            if pattern.name in b:
                return
            if isinstance(actual, T.IntType) and not weak:
                return
            if isinstance(actual, (T.DontCareType, T.SetType)):
                return
            if isinstance(actual, T.StructInitType):
                return
            b[pattern.name] = actual
            return
        if isinstance(pattern, T.HeaderStackType) and isinstance(actual, T.HeaderStackType):
            self.unify(pattern.elem, actual.elem, b, weak)
        elif isinstance(pattern, T.TupleType) and isinstance(actual, T.TupleType):
            for p, a in zip(pattern.elems, actual.elems, strict=False):
                self.unify(p, a, b, weak)
        elif isinstance(pattern, (T.ExternType, T.StructLikeType)) and type(pattern) is type(actual):
            for p, a in zip(pattern.type_args, actual.type_args, strict=False):  # type: ignore[attr-defined]
                self.unify(p, a, b, weak)
        elif isinstance(pattern, T.CallableType) and isinstance(actual, T.CallableType):
            for p, a in zip(pattern.params, actual.params, strict=False):
                self.unify(p.type, a.type, b, weak)

    # ---------------------------------------------------------------------------------------------
    # Assignability

    def coerce(self, e: ast.Expression, target: T.Type, what: str) -> None:
        """Check that `e` (already typed) can be used where a `target` is expected, converting literals,
        lists and struct initializers; raises a type-mismatch error otherwise."""
        src = e.type
        assert src is not None
        if isinstance(target, (T.DontCareType, T.TypeVar)):
            return
        if isinstance(src, T.DontCareType):
            return
        tu, su = T.unwrap(target), T.unwrap(src)
        if T.same_type(src, target):
            return
        if isinstance(su, T.IntType):
            bits = tu.underlying if isinstance(tu, T.SerEnumType) else tu
            if isinstance(bits, T.BitsType):
                if isinstance(tu, T.SerEnumType):
                    # p4c: no implicit conversion into an enum, not even of a constant
                    raise _err(
                        f"type mismatch in {what}: values of type 'int' cannot be implicitly cast to type "
                        f"{target} (write ({target}){e.const_value if e.const_value is not None else '...'})",
                        e,
                    )
                self.retype_int(e, target)
                return
            if isinstance(tu, T.IntType):
                return
        if isinstance(su, T.SerEnumType) and isinstance(tu, T.BitsType) and T.same_type(su.underlying, tu):
            return
        # a `type` (NewType) and its underlying type do not convert implicitly (p4c: "Cannot cast
        # implicitly type 'bit<32>' to type 'N32'"); an explicit cast does
        if isinstance(e, ast.ListExpression) and isinstance(tu, (T.StructLikeType, T.TupleType)):
            fields = [f.type for f in tu.fields] if isinstance(tu, T.StructLikeType) else tu.elems
            if e.dots and len(e.elems) <= len(fields):
                fields = fields[: len(e.elems)]
            if len(fields) != len(e.elems):
                raise _err(
                    f"type mismatch in {what}: {len(e.elems)} values given for {target} which has {len(fields)}",
                    e,
                )
            for x, ft in zip(e.elems, fields, strict=True):
                self.coerce(x, ft, what)
            e.type = target
            e.target_type = target
            return
        if isinstance(e, ast.ListExpression) and isinstance(tu, T.ListType) and isinstance(su, T.TupleType):
            # `{a, b, c}` as a list<T>: every element a T
            for x in e.elems:
                self.coerce(x, tu.elem, what)
            e.type = target
            e.target_type = target
            return
        if isinstance(e, ast.StructExpression) and e.type_ref is None and isinstance(tu, T.StructLikeType):
            given = {f.name: f for f in e.fields}
            for f in tu.fields:
                if f.name not in given:
                    if e.dots:
                        continue
                    raise _err(f"missing field '{f.name}' in the initializer of {target}", e)
                self.coerce(given[f.name].value, f.type, what)
            extra = set(given) - {f.name for f in tu.fields}
            if extra:
                raise _err(f"{target} has no field '{sorted(extra)[0]}'", e)
            e.type = target
            return
        if isinstance(e, ast.InvalidHeaderExpression) and isinstance(tu, (T.HeaderType, T.HeaderUnionType)):
            e.type = target
            return
        if isinstance(e, ast.Mux):
            self.coerce(e.then, target, what)
            self.coerce(e.else_, target, what)
            e.type = target
            return
        if isinstance(tu, T.TupleType) and isinstance(su, T.TupleType) and len(tu.elems) == len(su.elems):
            if isinstance(e, ast.ListExpression):
                for x, ft in zip(e.elems, tu.elems, strict=True):
                    self.coerce(x, ft, what)
                e.type = target
                return
            if all(T.same_type(a, c) for a, c in zip(su.elems, tu.elems, strict=True)):
                return
        if isinstance(tu, T.CallableType) and isinstance(su, T.CallableType):
            # a parser/control instance passed for a parser/control type parameter
            if type(T.unwrap(tu)) is type(su) and len(tu.params) == len(su.params):
                for pp, ap in zip(tu.params, su.params, strict=True):
                    # an `in` parameter where `inout` is expected only reads: old v1model programs do this
                    dir_ok = pp.direction == ap.direction or (
                        pp.direction == "inout" and ap.direction == "in"
                    )
                    if not self.compatible(pp.type, ap.type) or not dir_ok:
                        raise _err(
                            f"type mismatch in {what}: {su.name} does not match {tu.name} "
                            f"(parameter '{ap.name}' has type {ap.type}, expected {pp.direction} {pp.type})",
                            e,
                        )
                return
        if isinstance(tu, T.ErrorType) and isinstance(su, T.ErrorType):
            return
        if isinstance(su, T.BitsType) and isinstance(tu, T.BitsType):
            # p4c inserts no casts between widths: widening needs one as much as narrowing
            raise _err(
                f"type mismatch in {what}: values of type {src} cannot be implicitly cast to type {target}", e
            )
        raise _err(f"type mismatch in {what}: cannot use a value of type {src} as {target}", e)

    def compatible(self, a: T.Type, b: T.Type) -> bool:
        if isinstance(a, (T.TypeVar, T.DontCareType)) or isinstance(b, (T.TypeVar, T.DontCareType)):
            return True
        if T.same_type(a, b):
            return True
        return T.same_type(T.unwrap(a), T.unwrap(b))


def check_argument_names(args: list[ast.Argument], what: str) -> None:
    """p4c's rules for named arguments, before any overload is looked for (else the message would be
    about a count that is right): all or none named, and no name twice."""
    named = [a for a in args if a.name is not None]
    if named and len(named) < len(args):
        first = next(a for a in args if a.name is None)
        text = first.value.name if isinstance(first.value, ast.PathExpression) else "an argument"
        raise _err(f"{text}: either all or none of the arguments of a call to {what} must be named", first)
    seen: set[str] = set()
    for a in named:
        if a.name in seen:
            raise _err(f"{a.name}: the same argument name is given twice in a call to {what}", a)
        seen.add(a.name)
