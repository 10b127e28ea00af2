"""Type checker, part 1: resolving written types (typedefs, widths, generics, specialisation)."""

from __future__ import annotations

from typing import Any

from p4kit.compiler import ast
from p4kit.compiler import types as T  # noqa: N812
from p4kit.compiler.diagnostics import UnsupportedError
from p4kit.compiler.scopes import Scope
from p4kit.compiler.tc_common import (
    _BOOL,
    _DONTCARE,
    _INT,
    _STRING,
    _VOID,
    MAX_STACK_SIZE,
    CheckerState,
    _err,
    check_width,
    run_time_name,
)


class TypesMixin(CheckerState):
    """Turns `ast.TypeRef`s into `types.Type`s and substitutes generic parameters."""

    # ---------------------------------------------------------------------------------------------
    # Types

    def generic_scope(self, scope: Scope, names: list[str], owner: Any) -> Scope:
        if not names:
            return scope
        s = Scope(scope, "generic", owner)
        for n in names:
            s.declare(n, T.TypeVar(n, owner), getattr(owner, "loc", None))
        return s

    def resolve(self, ref: ast.TypeRef, scope: Scope) -> T.Type:
        t = self._resolve(ref, scope)
        ref.resolved = t
        return t

    def const_int(self, e: ast.Expression, scope: Scope, what: str) -> int:
        """Evaluate `e` as a compile-time integer."""
        self.expr(e, scope)
        v = e.const_value
        if isinstance(v, bool) or not isinstance(v, int):
            raise _err(f"{what} must be a compile-time constant integer", e)
        return v

    def _resolve(self, ref: ast.TypeRef, scope: Scope) -> T.Type:
        if isinstance(ref, ast.BitsTypeRef):
            if ref.width is None:
                return T.BitsType(1, ref.signed)
            w = self.const_int(ref.width, scope, "a width")
            if w <= 0 and not (w == 0 and not ref.signed):
                raise _err(f"invalid width {w} for {'int' if ref.signed else 'bit'}<>", ref)
            check_width(w, f"{'int' if ref.signed else 'bit'}<{w}>", ref)
            return T.BitsType(w, ref.signed)
        if isinstance(ref, ast.VarbitTypeRef):
            w = self.const_int(ref.width, scope, "a width")
            if w <= 0:
                raise _err(f"invalid width {w} for varbit<>", ref)
            check_width(w, f"varbit<{w}>", ref)
            return T.VarbitType(w)
        if isinstance(ref, ast.PrimTypeRef):
            n = ref.name
            if n == "bool":
                return _BOOL
            if n == "error":
                return self.error_type
            if n == "string":
                return _STRING
            if n == "void":
                return _VOID
            if n == "match_kind":
                return self.match_kind_type
            if n == "int":
                return _INT
            return _DONTCARE
        if isinstance(ref, ast.NamedTypeRef):
            d = (self.globals if ref.is_global else scope).lookup(ref.name)
            if d is None:
                raise _err(f"unknown type '{ref.name}' (declaration not found)", ref)
            ref.decl = d
            return self.type_of_type_decl(d, ref)
        if isinstance(ref, ast.SpecializedTypeRef):
            b = ref.base
            if (
                isinstance(b, ast.NamedTypeRef)
                and b.name == "list"
                and not b.is_global
                and not scope.lookup("list")
            ):
                if len(ref.args) != 1:
                    raise _err(f"list<T> takes one type argument, not {len(ref.args)}", ref)
                return T.ListType(self.resolve(ref.args[0], scope))
            base = self.resolve(ref.base, scope)
            args = [self.resolve(a, scope) for a in ref.args]
            return self.specialize(base, args, ref)
        if isinstance(ref, ast.StackTypeRef):
            elem = self.resolve(ref.elem, scope)
            size = self.const_int(ref.size, scope, "a header stack size")
            if size <= 0:
                raise _err(f"header stack size must be positive, not {size}", ref)
            if size > MAX_STACK_SIZE:
                raise _err(f"header stack size {size} is too large: at most {MAX_STACK_SIZE} (as p4c)", ref)
            if not isinstance(elem, (T.HeaderType, T.HeaderUnionType, T.TypeVar)):
                raise _err(f"header stacks must contain headers or header unions, not {elem}", ref)
            return T.HeaderStackType(elem, size)
        if isinstance(ref, ast.TupleTypeRef):
            return T.TupleType([self.resolve(a, scope) for a in ref.args])
        raise UnsupportedError(f"type {type(ref).__name__}", ref.loc)

    def type_of_type_decl(self, d: Any, ref: Any) -> T.Type:
        if isinstance(d, T.TypeVar):
            return d
        t = getattr(d, "type", None)
        if isinstance(d, ast.ExternDecl):
            return T.ExternType(d.name, d, ())
        if isinstance(
            d,
            (
                ast.StructLikeDecl,
                ast.EnumDecl,
                ast.TypedefDecl,
                ast.ParserTypeDecl,
                ast.ControlTypeDecl,
                ast.PackageTypeDecl,
                ast.ParserDecl,
                ast.ControlDecl,
            ),
        ):
            if t is None:
                raise _err(f"type '{d.name}' is used in its own declaration", ref)
            return t
        raise _err(f"'{getattr(d, 'name', '?')}' is not a type", ref)

    def specialize(self, base: T.Type, args: list[T.Type], node: Any) -> T.Type:
        if isinstance(base, T.ExternType):
            n = len(base.decl.type_params)
            if len(args) != n:
                raise _err(f"extern {base.name} takes {n} type arguments, not {len(args)}", node)
            return T.ExternType(base.name, base.decl, tuple(args))
        if isinstance(base, T.StructLikeType) and base.decl is not None:
            tp = base.decl.type_params
            if len(args) != len(tp):
                raise _err(f"{base.name} takes {len(tp)} type arguments, not {len(args)}", node)
            b = dict(zip(tp, args, strict=True))
            fields = [T.StructField(f.name, self.subst(f.type, b), f.annotations) for f in base.fields]
            return type(base)(base.name, fields, base.decl, tuple(args))
        if isinstance(base, T.CallableType):
            tp = base.type_params
            if len(args) != len(tp):
                raise _err(f"{base.name} takes {len(tp)} type arguments, not {len(args)}", node)
            return self.subst(base, dict(zip(tp, args, strict=True)), specialize=True)
        raise _err(f"type {base} is not generic", node)

    def subst(self, t: T.Type, b: dict[str, T.Type], specialize: bool = False) -> T.Type:
        """`t` with the type variables named in `b` replaced."""
        if not b:
            return t
        if isinstance(t, T.TypeVar):
            return b.get(t.name, t)
        if isinstance(t, T.HeaderStackType):
            return T.HeaderStackType(self.subst(t.elem, b), t.size)
        if isinstance(t, T.TupleType):
            return T.TupleType([self.subst(e, b) for e in t.elems])
        if isinstance(t, T.SetType):
            return T.SetType(self.subst(t.elem, b))
        if isinstance(t, T.ListType):
            return T.ListType(self.subst(t.elem, b))
        if isinstance(t, T.ExternType) and t.type_args:
            return T.ExternType(t.name, t.decl, tuple(self.subst(a, b) for a in t.type_args))
        if isinstance(t, T.StructLikeType) and t.type_args:
            args = tuple(self.subst(a, b) for a in t.type_args)
            fields = [T.StructField(f.name, self.subst(f.type, b), f.annotations) for f in t.fields]
            return type(t)(t.name, fields, t.decl, args)
        if isinstance(t, T.CallableType):
            inner = b
            if not specialize:
                inner = {k: v for k, v in b.items() if k not in t.type_params}
            params = [
                T.ParamInfo(p.name, p.direction, self.subst(p.type, inner), p.has_default, p.optional, p.decl)
                for p in t.params
            ]
            tparams = [] if specialize else list(t.type_params)
            if isinstance(t, T.FunctionType):
                return type(t)(t.name, params, tparams, t.decl, self.subst(t.ret, inner))
            if isinstance(t, (T.ParserType, T.ControlType)):
                ctor = [
                    T.ParamInfo(
                        p.name, p.direction, self.subst(p.type, inner), p.has_default, p.optional, p.decl
                    )
                    for p in t.ctor_params
                ]
                return type(t)(t.name, params, tparams, t.decl, ctor)
            return type(t)(t.name, params, tparams, t.decl)
        return t

    def params(self, params: list[ast.Parameter], scope: Scope, owner: str = "") -> list[T.ParamInfo]:
        """Check and type a parameter list; `owner` says whose it is ("action", "parser", "control",
        "function", "method", "parser-ctor", "control-ctor", "package") for the rules that depend on it."""
        out = []
        seen: set[str] = set()
        for p in params:
            if p.name in seen:
                raise _err(f"duplicate parameter '{p.name}'", p)
            seen.add(p.name)
            t = self.resolve(p.type_ref, scope)
            p.type = t
            check_param_type(p, t, owner)
            if p.default is not None:
                if p.direction in ("out", "inout"):
                    raise _err(f"{p.name}: {p.direction} parameters cannot have default values", p)
                if ast.find_annotation(p.annotations, "optional") is not None:
                    raise _err(f"{p.name}: optional parameters cannot have default values", p)
                self.expr(p.default, scope, t)
                self.coerce(p.default, t, "default value")
                if p.default.const_value is None and run_time_name(p.default) is not None:
                    # p4c: a default value is a compile-time constant (not a call or a variable)
                    raise _err(f"{p.name}: its default value must be a compile-time constant", p.default)
            optional = ast.find_annotation(p.annotations, "optional") is not None
            out.append(T.ParamInfo(p.name, p.direction, t, p.default is not None, optional, p))
        return out


def check_param_type(p: ast.Parameter, t: T.Type, owner: str) -> None:
    """The types a parameter may have where it is declared (p4c's rules): strings are compile-time
    data without a direction, actions take no extern objects, and parsers, controls and packages
    are passed to constructors and packages only, never as run-time arguments."""
    u = T.unwrap(t)
    if owner in ("function", "action", "parser-ctor", "control-ctor") and ast.find_annotation(
        p.annotations, "optional"
    ):
        # p4c: "optional parameter not allowed here" (externs and packages take @optional)
        raise _err(f"{p.name}: optional parameter not allowed here (only externs and packages have them)", p)
    if isinstance(u, T.StringType) and p.direction:
        raise _err(f"{p.name}: a parameter with type string cannot have a direction", p)
    if isinstance(u, T.IntType) and p.direction:
        raise _err(f"{p.name}: parameters with type int must be directionless", p)
    if owner == "action" and isinstance(u, T.IntType):
        raise _err(f"{p.name}: actions cannot have parameters with type int (give it a width)", p)
    if owner == "action" and isinstance(u, T.ExternType):
        raise _err(f"{p.name}: action parameters cannot have extern types ({t})", p)
    if (
        owner == "action"
        and not p.direction
        and not isinstance(u, (T.BitsType, T.BoolType, T.SerEnumType, T.IntType))
    ):
        raise _err(
            f"action parameter {p.name} has a type ({t}) which is not bit<>, int<>, bool, type or serializable "
            "enum: directionless parameters are data the control plane supplies",
            p,
        )
    if owner in ("parser", "control", "function", "action", "method") and isinstance(
        u, (T.ParserType, T.ControlType, T.PackageType)
    ):
        kind = (
            "parser"
            if isinstance(u, T.ParserType)
            else "control"
            if isinstance(u, T.ControlType)
            else "package"
        )
        raise _err(f"{p.name}: parameter cannot have type {kind} {u.name}", p)
    if owner == "control-ctor" and isinstance(u, T.ParserType):
        raise _err(
            f"{p.name}: instantiation of parser {u.name} in a control (controls cannot hold parsers)", p
        )
    if owner == "parser-ctor" and isinstance(u, T.ControlType):
        raise _err(
            f"{p.name}: instantiation of control {u.name} in a parser (parsers cannot hold controls)", p
        )
