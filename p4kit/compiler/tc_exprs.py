"""Type checker, part 4: expressions - typing bottom up with literal width inference and folding."""

from __future__ import annotations

from typing import Any

from p4kit.compiler import ast
from p4kit.compiler import types as T  # noqa: N812
from p4kit.compiler.consteval import (
    ConstEvalError,
    fold_binary,
    fold_cast,
    fold_concat,
    fold_slice,
    fold_unary,
    wrap,
)
from p4kit.compiler.diagnostics import UnsupportedError
from p4kit.compiler.scopes import Scope
from p4kit.compiler.tc_common import (
    _ARITH,
    _BIT32,
    _BOOL,
    _COMPARE,
    _DONTCARE,
    _EQUALITY,
    _HEADER_METHODS,
    _INT,
    _SIZE_METHODS,
    _STATE,
    _STRING,
    _VOID,
    MAX_INT_SHIFT,
    CheckerState,
    _err,
    check_width,
    refuse_default_values,
)


class ExprsMixin(CheckerState):
    """Types expressions bottom up (`expr`), folding constants on the way."""

    # ---------------------------------------------------------------------------------------------
    # Expressions

    def expr(self, e: ast.Expression, scope: Scope, expected: T.Type | None = None) -> T.Type:
        """Type `e` (and everything below it); `expected` only guides literals and list expressions."""
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is None:
            raise UnsupportedError(f"expression {type(e).__name__}", e.loc)
        t = method(e, scope, expected)
        e.type = t
        return t

    def e_Constant(self, e: ast.Constant, scope: Scope, expected: T.Type | None) -> T.Type:
        if e.width is not None:
            if e.width <= 0 and not (e.width == 0 and not e.signed):
                raise _err(f"invalid width {e.width} in integer literal", e)
            check_width(e.width, f"{e.width}{'s' if e.signed else 'w'}{e.value}", e)
            t = T.BitsType(e.width, e.signed)
            v = wrap(e.value, t)
            if v != e.value and not (e.signed and e.value < 0):
                if e.value >= 1 << e.width or (e.signed and e.value >= 1 << (e.width - 1)):
                    pass  # p4c only warns that the value does not fit; it is truncated
            e.const_value = v
            return t
        e.const_value = e.value
        return _INT

    def e_BoolLiteral(self, e: ast.BoolLiteral, scope: Scope, expected: T.Type | None) -> T.Type:
        e.const_value = e.value
        return _BOOL

    def e_StringLiteral(self, e: ast.StringLiteral, scope: Scope, expected: T.Type | None) -> T.Type:
        return _STRING

    def e_DotsExpression(self, e: ast.DotsExpression, scope: Scope, expected: T.Type | None) -> T.Type:
        if expected is None or isinstance(expected, T.DontCareType):
            raise _err("'...' needs the type of the value it stands for to be known", e)
        return expected

    def e_DefaultExpression(self, e: ast.DefaultExpression, scope: Scope, expected: T.Type | None) -> T.Type:
        return _DONTCARE

    def e_InvalidHeaderExpression(self, e: Any, scope: Scope, expected: T.Type | None) -> T.Type:
        if expected is not None and isinstance(expected, (T.HeaderType, T.HeaderUnionType)):
            return expected
        raise _err("{#} needs a header or header union type from its context", e)

    def e_ThisExpression(self, e: ast.ThisExpression, scope: Scope, expected: T.Type | None) -> T.Type:
        d = scope.lookup("this")
        if d is None:
            raise _err("'this' can only be used in the initializer of an instance", e)
        return d.type

    def e_PathExpression(self, e: ast.PathExpression, scope: Scope, expected: T.Type | None) -> T.Type:
        cands = (self.globals if e.is_global else scope).lookup_all(e.name)
        if not cands:
            raise _err(f"unknown name '{e.name}' (declaration not found)", e)
        d = cands[-1]
        e.decl = d
        if isinstance(d, (ast.Parameter, ast.VariableDecl)):
            assert d.type is not None
            return d.type
        if isinstance(d, ast.ConstDecl):
            e.const_value = d.const_value
            assert d.type is not None
            return d.type
        if isinstance(d, ast.Instantiation):
            return d.type
        if isinstance(d, ast.TableDecl):
            if d is self.table:
                # p4c: a name inside a table that resolves to the table itself (a key `t` in table t,
                # where t was meant to be a parameter the table shadows)
                raise _err(f"{e.name}: Cannot refer to the containing table {d.name}", e)
            return T.TableType(d)
        if isinstance(d, ast.ParserState):
            return _STATE
        if isinstance(d, ast.ValueSetDecl):
            assert d.elem_type.resolved is not None
            return T.SetType(d.elem_type.resolved)
        if isinstance(d, (ast.ActionDecl, ast.FunctionDecl, ast.ExternFunctionDecl)):
            return d.type
        if isinstance(d, (T.TypeVar, ast.StructLikeDecl, ast.EnumDecl, ast.TypedefDecl, ast.ExternDecl)):
            return T.TypeOfType(self.type_of_type_decl(d, e))
        if isinstance(d, (ast.ControlDecl, ast.ParserDecl)):
            return T.TypeOfType(d.type)
        raise _err(f"'{e.name}' cannot be used as a value", e)

    def e_TypeNameExpression(
        self, e: ast.TypeNameExpression, scope: Scope, expected: T.Type | None
    ) -> T.Type:
        return T.TypeOfType(self.resolve(e.type_ref, scope))

    def e_Member(self, e: ast.Member, scope: Scope, expected: T.Type | None) -> T.Type:
        bt = self.expr(e.expr, scope)
        m = e.member
        if isinstance(bt, T.TypeOfType):
            inner = bt.type
            if isinstance(inner, T.ErrorType):
                if m not in inner.members:
                    raise _err(f"unknown error 'error.{m}' (declaration not found)", e)
                e.kind = "error_member"
                return inner
            if isinstance(inner, T.EnumType):
                if m not in inner.members:
                    raise _err(f"enum {inner.name} has no member '{m}'", e)
                e.kind = "enum_member"
                return inner
            if isinstance(inner, T.SerEnumType):
                if m not in inner.members:
                    raise _err(f"enum {inner.name} has no member '{m}'", e)
                e.kind = "enum_member"
                e.const_value = inner.members[m]
                return inner
            if m in _SIZE_METHODS:
                e.kind = "method"
                return T.FunctionType(m, [], [], None, _INT)
            if m == "apply" and isinstance(inner, (T.ControlType, T.ParserType)):
                # direct application `C.apply(...)`: an implicit instance of C
                e.kind = "method"
                return T.FunctionType(m, [], [], None, _VOID)
            raise _err(f"type {inner} has no member '{m}'", e)
        u = T.unwrap(bt)
        if isinstance(u, T.StructLikeType):
            f = u.field(m)
            if f is not None:
                e.kind = "field"
                agg = self.aggregate_value(e.expr)
                if isinstance(agg, dict) and isinstance(agg.get(m), (int, bool)):
                    e.const_value = agg[m]  # a field of a constant struct
                return f.type
            if m in _SIZE_METHODS or (
                m in _HEADER_METHODS and isinstance(u, (T.HeaderType, T.HeaderUnionType))
            ):
                if m != "isValid" and isinstance(u, T.HeaderUnionType):
                    raise _err(f"header_union {u.name} has no method '{m}'", e)
                e.kind = "method"
                return T.FunctionType(m, [], [], None, _BOOL if m == "isValid" else _VOID)
            raise _err(f"{bt} has no field '{m}'", e)
        if isinstance(u, T.HeaderStackType):
            e.kind = "stack_elem_prop"
            if m in ("next", "last", "lastIndex"):
                if scope.enclosing("control", "action") is not None:
                    # p4c: not inside a control or an action (top-level ones too); functions and
                    # parsers may use them
                    raise _err(
                        f"'{m}' of a header stack can only be used in a parser (not in a control or an action)",
                        e,
                    )
                return _BIT32 if m == "lastIndex" else u.elem
            if m == "size":
                # a compile-time constant; typed like a literal so it fits any integer context
                e.const_value = u.size
                return _INT
            if m in ("push_front", "pop_front"):
                e.kind = "method"
                return T.FunctionType(m, [T.ParamInfo("count", "in", _INT)], [], None, _VOID)
            if m in _SIZE_METHODS:
                e.kind = "method"
                return T.FunctionType(m, [], [], None, _INT)
            raise _err(f"header stack has no member '{m}'", e)
        if isinstance(u, T.ExternType):
            if not u.decl.methods_named(m):
                raise _err(f"extern {u.name} has no method '{m}'", e)
            e.kind = "method"
            e.decl = u.decl
            return T.FunctionType(m, [], [], None, _VOID)
        if isinstance(u, (T.TableType, T.ControlType, T.ParserType)):
            if m != "apply":
                raise _err(f"{bt} has no member '{m}'", e)
            e.kind = "method"
            return T.FunctionType(m, [], [], None, _VOID)
        if isinstance(u, T.ApplyResultType):
            e.kind = "apply_result"
            if m in ("hit", "miss"):
                return _BOOL
            if m == "action_run":
                if e is not self.__dict__.get("_switch_expr"):
                    raise _err(
                        "action_run is only allowed as the whole expression of a switch statement "
                        "(switch (t.apply().action_run) { ... })",
                        e,
                    )
                return T.ActionEnumType(u.table)
            raise _err(f"the result of apply() has no member '{m}' (use hit, miss or action_run)", e)
        raise _err(f"a value of type {bt} has no member '{m}'", e)

    def e_ArrayIndex(self, e: ast.ArrayIndex, scope: Scope, expected: T.Type | None) -> T.Type:
        bt = T.unwrap(self.expr(e.expr, scope))
        it = self.expr(e.index, scope)
        if isinstance(bt, T.HeaderStackType):
            if not T.is_integral(it) and not isinstance(T.unwrap(it), T.SerEnumType):
                raise _err(f"a header stack index must be an integer, not {it}", e.index)
            if isinstance(e.index.const_value, int) and not 0 <= e.index.const_value < bt.size:
                raise _err(
                    f"index {e.index.const_value} is out of the bounds of a stack of {bt.size}", e.index
                )
            if isinstance(it, T.IntType):
                self.retype_int(e.index, _BIT32)
            return bt.elem
        if isinstance(bt, T.TupleType):
            i = e.index.const_value
            if not isinstance(i, int) or not 0 <= i < len(bt.elems):
                raise _err("a tuple index must be a constant within the tuple", e.index)
            agg = self.aggregate_value(e.expr)
            if isinstance(agg, list) and isinstance(agg[i], (int, bool)):
                e.const_value = agg[i]
            return bt.elems[i]
        raise _err(f"cannot index a value of type {bt}", e)

    def e_Slice(self, e: ast.Slice, scope: Scope, expected: T.Type | None) -> T.Type:
        bt = self.expr(e.expr, scope)
        u = T.unwrap(bt)
        if isinstance(u, T.SerEnumType):
            u = u.underlying
        hi = self.const_int(e.hi, scope, "a slice bound")
        lo = self.const_int(e.lo, scope, "a slice bound")
        if hi < lo:
            raise _err(f"slice [{hi}:{lo}]: the high bound is below the low bound", e)
        if lo < 0:
            raise _err("slice bounds must not be negative", e)
        if isinstance(u, T.BitsType):
            if hi >= u.width:
                raise _err(f"slice [{hi}:{lo}] is out of the bounds of {bt}", e)
        elif not isinstance(u, T.IntType):
            raise _err(f"cannot slice a value of type {bt}", e)
        e.hi_value, e.lo_value = hi, lo
        if isinstance(e.expr.const_value, int):
            e.const_value = fold_slice(e.expr.const_value, hi, lo)
        return T.BitsType(hi - lo + 1)

    def e_UnaryOp(self, e: ast.UnaryOp, scope: Scope, expected: T.Type | None) -> T.Type:
        t = self.expr(e.expr, scope, expected if e.op != "!" else _BOOL)
        u = T.unwrap(t)
        if e.op == "!":
            if not isinstance(u, T.BoolType):
                raise _err(f"'!' needs a bool operand, not {t}", e)
        elif e.op == "~":
            if isinstance(u, T.IntType) and isinstance(expected, T.BitsType):
                self.retype_int(e.expr, expected)
                t = u = expected
            if not isinstance(u, T.BitsType):
                raise _err(f"'~' needs a bit<W> or int<W> operand, not {t}", e)
        else:
            if not isinstance(u, (T.BitsType, T.IntType)):
                raise _err(f"'{e.op}' needs an integer operand, not {t}", e)
        if e.expr.const_value is not None:
            e.const_value = fold_unary(e.op, e.expr.const_value, t)
        return t

    def e_Cast(self, e: ast.Cast, scope: Scope, expected: T.Type | None) -> T.Type:
        dst = self.resolve(e.type_ref, scope)
        initializer = isinstance(e.expr, (ast.ListExpression, ast.StructExpression))
        if (
            isinstance(T.unwrap(dst), (T.StructLikeType, T.TupleType, T.HeaderStackType, T.ListType))
            and not initializer
        ):
            raise _err(f"cast to {dst} not supported: only an initializer {{...}} can be cast to it", e)
        src = self.expr(e.expr, scope, dst)
        if not newtype_cast_ok(src, dst):
            raise _err(
                f"cannot cast from {src} to {dst}: a 'type' converts only to and from the type it is "
                "declared from",
                e,
            )
        d, s = T.unwrap(dst), T.unwrap(src)
        if isinstance(d, T.SerEnumType):
            d = d.underlying
        if isinstance(s, T.SerEnumType):
            s = s.underlying
        ok = False
        if isinstance(d, T.BitsType):
            ok = isinstance(s, (T.BitsType, T.IntType)) or (isinstance(s, T.BoolType) and d.width == 1)
        elif isinstance(d, T.BoolType):
            ok = isinstance(s, T.BoolType) or (isinstance(s, T.BitsType) and s.width == 1 and not s.signed)
            ok = ok or (isinstance(s, T.IntType) and e.expr.const_value in (0, 1))
        elif isinstance(d, T.IntType):
            ok = isinstance(s, (T.BitsType, T.IntType))
        elif isinstance(d, (T.StructLikeType, T.TupleType, T.HeaderStackType, T.ListType)):
            if isinstance(e.expr, (ast.ListExpression, ast.StructExpression)):
                # `(S){...}`: the initializer itself, typed S (the cast adds nothing at run time)
                self.coerce(e.expr, dst, "cast")
                inner = e.expr
                e.__class__ = inner.__class__
                e.__dict__.clear()
                e.__dict__.update(inner.__dict__)
                return dst
            if T.same_type(d, s):
                ok = True
        else:
            ok = T.same_type(d, s)
        if not ok:
            raise _err(f"cannot cast a value of type {src} to {dst}", e)
        if isinstance(s, T.IntType) and isinstance(d, T.BitsType) and e.expr.const_value is None:
            self.retype_int(e.expr, d)
        if e.expr.const_value is not None and not isinstance(e.expr.const_value, str):
            v = fold_cast(e.expr.const_value, src, dst)
            if v is not None:
                e.const_value = v
        return dst

    def e_Mux(self, e: ast.Mux, scope: Scope, expected: T.Type | None) -> T.Type:
        ct = self.expr(e.cond, scope, _BOOL)
        if not isinstance(ct, T.BoolType):
            raise _err(f"the condition of '?:' must be a bool, not {ct}", e.cond)
        a = self.expr(e.then, scope, expected)
        b = self.expr(e.else_, scope, expected)
        t = self.unify_operands(e.then, a, e.else_, b, "?:", e)
        if isinstance(t, T.IntType) and expected is not None and isinstance(T.unwrap(expected), T.BitsType):
            self.retype_int(e.then, expected)
            self.retype_int(e.else_, expected)
            t = expected
        if e.cond.const_value is not None:
            chosen = e.then if e.cond.const_value else e.else_
            if chosen.const_value is not None:
                e.const_value = chosen.const_value
        return t

    def unify_operands(
        self, left: ast.Expression, lt: T.Type, right: ast.Expression, rt: T.Type, op: str, node: Any
    ) -> T.Type:
        """The common type of two operands; an `int` operand takes the other's type."""
        lu, ru = T.unwrap(lt), T.unwrap(rt)
        if isinstance(lu, T.IntType) and not isinstance(ru, T.IntType):
            if isinstance(ru, (T.BitsType, T.SerEnumType)) or isinstance(T.unwrap(ru), T.BitsType):
                target = (
                    rt
                    if isinstance(ru, T.BitsType)
                    else ru.underlying
                    if isinstance(ru, T.SerEnumType)
                    else rt
                )
                self.retype_int(left, target)
                return rt
        if isinstance(ru, T.IntType) and not isinstance(lu, T.IntType):
            if isinstance(lu, (T.BitsType, T.SerEnumType)):
                target = lt if isinstance(lu, T.BitsType) else lu.underlying  # type: ignore[union-attr]
                self.retype_int(right, target)
                return lt
        if T.same_type(lt, rt):
            return lt
        # a serializable enum operates with its underlying type
        if isinstance(lu, T.SerEnumType) and T.same_type(lu.underlying, ru):
            return rt
        if isinstance(ru, T.SerEnumType) and T.same_type(ru.underlying, lu):
            return lt
        if T.same_type(lu, ru):
            return lt
        if isinstance(lt, T.TupleType) and isinstance(ru, T.StructLikeType):
            self.coerce(left, rt, op)
            return rt
        if isinstance(rt, (T.TupleType, T.StructInitType)) and isinstance(lu, T.StructLikeType):
            self.coerce(right, lt, op)
            return lt
        if isinstance(lu, T.BitsType) and isinstance(ru, T.BitsType):
            raise _err(
                f"type mismatch: operands of '{op}' have different types {lt} and {rt} (width or signedness differ; cast one)",
                node,
            )
        raise _err(f"type mismatch: operands of '{op}' have types {lt} and {rt}", node)

    def e_BinaryOp(self, e: ast.BinaryOp, scope: Scope, expected: T.Type | None) -> T.Type:
        op = e.op
        if op in ("&&", "||"):
            lt = self.expr(e.left, scope, _BOOL)
            rt = self.expr(e.right, scope, _BOOL)
            for side, st in ((e.left, lt), (e.right, rt)):
                if not isinstance(st, T.BoolType):
                    raise _err(f"'{op}' needs bool operands, not {st}", side)
            lv, rv = e.left.const_value, e.right.const_value
            if lv is not None and rv is not None:
                e.const_value = fold_binary(op, lv, rv, _BOOL)
            return _BOOL
        if op in ("&&&", ".."):
            lt = self.expr(e.left, scope, expected)
            rt = self.expr(e.right, scope, expected)
            t = self.unify_operands(e.left, lt, e.right, rt, op, e)
            return T.SetType(t)
        if op in ("<<", ">>"):
            lt = self.expr(e.left, scope, expected)
            rt = self.expr(e.right, scope)
            lu, ru = T.unwrap(lt), T.unwrap(rt)
            if not isinstance(lu, (T.BitsType, T.IntType)):
                raise _err(f"the left operand of '{op}' must be an integer, not {lt}", e.left)
            if isinstance(ru, T.BitsType) and ru.signed:
                raise _err(f"the shift amount of '{op}' must be unsigned, not {rt}", e.right)
            if not isinstance(ru, (T.BitsType, T.IntType)):
                raise _err(f"the shift amount of '{op}' must be an integer, not {rt}", e.right)
            if isinstance(ru, T.IntType) and isinstance(e.right.const_value, int) and e.right.const_value < 0:
                raise _err("a shift amount must not be negative", e.right)
            amount = e.right.const_value
            if (
                op == "<<"
                and isinstance(lu, T.IntType)
                and isinstance(amount, int)
                and amount > MAX_INT_SHIFT
            ):
                raise _err(
                    f"shift amount {amount} is too large for an int value (at most {MAX_INT_SHIFT})", e.right
                )
            if isinstance(lu, T.IntType) and e.right.const_value is None:
                raise _err(
                    f"'{op}' of an int value by a non-constant amount needs a width; cast the left operand", e
                )
            if e.left.const_value is not None and e.right.const_value is not None:
                e.const_value = self.fold(op, e.left.const_value, e.right.const_value, lt, e)
            return lt
        if op == "++":
            lt = self.expr(e.left, scope)
            rt = self.expr(e.right, scope)
            lu, ru = T.unwrap(lt), T.unwrap(rt)
            if isinstance(lu, T.SerEnumType):
                lu = lu.underlying
            if isinstance(ru, T.SerEnumType):
                ru = ru.underlying
            for side, st in ((e.left, lu), (e.right, ru)):
                if isinstance(st, T.IntType):
                    raise _err(
                        "'++' needs operands of known width; give the integer a width (e.g. 8w1)", side
                    )
                if not isinstance(st, T.BitsType):
                    raise _err(f"'++' needs bit<W> or int<W> operands, not {st}", side)
            assert isinstance(lu, T.BitsType) and isinstance(ru, T.BitsType)
            t = T.BitsType(lu.width + ru.width, lu.signed)
            check_width(t.width, f"'++' of bit<{lu.width}> and bit<{ru.width}>", e)
            lv, rv = e.left.const_value, e.right.const_value
            if isinstance(lv, int) and isinstance(rv, int):
                e.const_value = fold_concat(lv, lu.width, rv, ru.width, lu.signed)
            return t
        lt = self.expr(e.left, scope, expected if op in _ARITH else None)
        rt = self.expr(e.right, scope, expected if op in _ARITH else lt)
        if op in ("/", "%"):
            check_division(op, e, lt, rt)
        if op in _EQUALITY:
            refuse_default_values(e.left, f"a comparison ('{op}')")
            refuse_default_values(e.right, f"a comparison ('{op}')")
        if op in _EQUALITY and any(isinstance(T.unwrap(x), T.ApplyResultType) for x in (lt, rt)):
            raise _err("table application results cannot be compared (use .hit, .miss or action_run)", e)
        t = self.unify_operands(e.left, lt, e.right, rt, op, e)
        u = T.unwrap(t)
        if isinstance(u, T.SerEnumType) and op not in _EQUALITY:
            u = u.underlying
        if op in _EQUALITY:
            if isinstance(u, (T.ExternType, T.CallableType, T.TableType, T.VoidType, T.StringType)):
                raise _err(f"values of type {t} cannot be compared", e)
            result: T.Type = _BOOL
        elif op in _COMPARE:
            if not isinstance(u, (T.BitsType, T.IntType)):
                raise _err(f"'{op}' needs integer operands, not {t}", e)
            result = _BOOL
        else:
            if not isinstance(u, (T.BitsType, T.IntType)):
                raise _err(f"'{op}' needs integer operands, not {t}", e)
            if op in ("/", "%") and e.left.const_value is None:
                # p4c-bm2-ss folds division by a power of two into shifts/masks and rejects any other
                # run-time division, in actions too ("could not evaluate at compilation time")
                rv = e.right.const_value
                if not (isinstance(rv, int) and rv > 0 and rv & (rv - 1) == 0):
                    name = "division" if op == "/" else "modulo (remainder)"
                    raise _err(
                        f"{name} '{op}' could not be evaluated at compilation time "
                        "(BMv2 has no division: only a division by a power of two becomes a shift or mask)",
                        e,
                    )
            result = t if isinstance(T.unwrap(t), (T.BitsType, T.IntType)) else u
            if (
                isinstance(u, T.IntType)
                and isinstance(expected, T.BitsType)
                and (e.left.const_value is None or e.right.const_value is None)
            ):
                self.retype_int(e.left, expected)
                self.retype_int(e.right, expected)
                result = expected
        lv, rv = e.left.const_value, e.right.const_value
        if lv is not None and rv is not None and not isinstance(lv, str) and not isinstance(rv, str):
            e.const_value = self.fold(op, lv, rv, u, e)
        return result

    def fold(self, op: str, a: Any, b: Any, t: T.Type, node: Any) -> Any:
        try:
            return fold_binary(op, a, b, t)
        except ConstEvalError as ex:
            raise _err(str(ex), node) from None

    def retype_int(self, e: ast.Expression, t: T.Type) -> None:
        """Give an `int`-typed expression (a literal or an expression of literals) the type `t`."""
        if not isinstance(e.type, T.IntType):
            return
        u = T.unwrap(t)
        if isinstance(u, T.SerEnumType):
            u = u.underlying
        if not isinstance(u, T.BitsType):
            return
        e.type = t
        if isinstance(e.const_value, int) and not isinstance(e.const_value, bool):
            e.const_value = wrap(e.const_value, u)
        if isinstance(e, ast.BinaryOp) and e.op not in _EQUALITY | _COMPARE | {"&&", "||"}:
            self.retype_int(e.left, t)
            if e.op not in ("<<", ">>"):
                self.retype_int(e.right, t)
        elif isinstance(e, ast.UnaryOp):
            self.retype_int(e.expr, t)
        elif isinstance(e, ast.Mux):
            self.retype_int(e.then, t)
            self.retype_int(e.else_, t)

    def aggregate_value(self, e: ast.Expression) -> Any:
        """The compile-time value of a struct/tuple-valued expression: a dict (struct, by field name) or a
        list (tuple) of ints, bools and nested aggregates; None when not constant."""
        if e.const_value is not None:
            return e.const_value
        if isinstance(e, ast.PathExpression) and isinstance(e.decl, ast.ConstDecl):
            return self.aggregate_value(e.decl.value)
        if isinstance(e, ast.Cast):
            return self.aggregate_value(e.expr)
        if isinstance(e, ast.Member) and e.kind == "field":
            agg = self.aggregate_value(e.expr)
            return agg.get(e.member) if isinstance(agg, dict) else None
        u = T.unwrap(e.type) if e.type is not None else None
        if isinstance(e, ast.ListExpression):
            values = [self.aggregate_value(x) for x in e.elems]
            if any(v is None for v in values):
                return None
            if isinstance(u, T.StructLikeType) and len(u.fields) == len(values):
                return {f.name: v for f, v in zip(u.fields, values, strict=True)}
            return values
        if isinstance(e, ast.StructExpression):
            fields = {f.name: self.aggregate_value(f.value) for f in e.fields}
            return None if any(v is None for v in fields.values()) else fields
        return None

    def e_ListExpression(self, e: ast.ListExpression, scope: Scope, expected: T.Type | None) -> T.Type:
        exp_elems: list[T.Type | None] = [None] * len(e.elems)
        u = T.unwrap(expected) if expected is not None else None
        n = len(e.elems)
        refuse_dots_for_varbit(e, u, expected)
        if isinstance(u, T.StructLikeType) and (len(u.fields) == n or (e.dots and len(u.fields) >= n)):
            exp_elems = [f.type for f in u.fields][:n]
        elif isinstance(u, T.TupleType) and (len(u.elems) == n or (e.dots and len(u.elems) >= n)):
            exp_elems = list(u.elems)[:n]
        elif e.dots:
            raise _err(
                "'...' in a list needs the type it initializes to be known (a struct, header or tuple)", e
            )
        elems = [self.expr(x, scope, et) for x, et in zip(e.elems, exp_elems, strict=True)]
        return T.TupleType(elems)

    def e_StructExpression(self, e: ast.StructExpression, scope: Scope, expected: T.Type | None) -> T.Type:
        if e.type_ref is not None:
            t = self.resolve(e.type_ref, scope)
            u = T.unwrap(t)
            if not isinstance(u, T.StructLikeType):
                raise _err(f"{t} is not a struct or header type", e)
            self.struct_fields(e, u, scope)
            return t
        u = T.unwrap(expected) if expected is not None else None
        if isinstance(u, T.StructLikeType):
            self.struct_fields(e, u, scope)
            return expected  # type: ignore[return-value]
        fields = []
        for f in e.fields:
            fields.append(T.StructField(f.name, self.expr(f.value, scope)))
        return T.StructInitType(fields)

    def struct_fields(self, e: ast.StructExpression, u: T.StructLikeType, scope: Scope) -> None:
        refuse_dots_for_varbit(e, u, u)
        given = set()
        for f in e.fields:
            sf = u.field(f.name)
            if sf is None:
                raise _err(f"{u.name} has no field '{f.name}'", f)
            if f.name in given:
                raise _err(f"field '{f.name}' is given twice", f)
            given.add(f.name)
            self.expr(f.value, scope, sf.type)
            self.coerce(f.value, sf.type, f"field {f.name}")
        missing = [sf.name for sf in u.fields if sf.name not in given]
        if missing and not e.dots:
            raise _err(f"missing field(s) {', '.join(missing)} in the initializer of {u.name}", e)

    def e_SelectExpression(self, e: ast.SelectExpression, scope: Scope, expected: T.Type | None) -> T.Type:
        raise _err("'select' can only be used as the target of 'transition'", e)

    def e_ConstructorCallExpression(
        self, e: ast.ConstructorCallExpression, scope: Scope, expected: Any
    ) -> T.Type:
        t = self.resolve(e.type_ref, scope)
        inst, e.ctor = self.construct(t, e.args, e.type_ref, scope, e)
        return inst


def check_division(op: str, e: ast.BinaryOp, lt: T.Type, rt: T.Type) -> None:
    """p4c's rules for `/` and `%`, checked before an integer literal takes its operand's width (so
    that the `-1` of `a / -1` is still negative): no signed operands and no negative numbers, whose
    quotient P4 leaves undefined, and no division by a constant zero."""
    name = "division" if op == "/" else "modulo"
    sides = ((e.left, lt), (e.right, rt))
    for _, st in sides:
        u = T.unwrap(st)
        if isinstance(u, T.SerEnumType):
            u = u.underlying
        if isinstance(u, T.BitsType) and u.signed:
            raise _err(
                f"'{op}': cannot operate on signed values ({st}): {name} is defined for bit<W> only", e
            )
    for side, st in sides:
        v = side.const_value
        if isinstance(T.unwrap(st), T.IntType) and isinstance(v, int) and not isinstance(v, bool) and v < 0:
            raise _err(f"'{op}': {name} is not defined for negative numbers", e)
    v = e.right.const_value
    if isinstance(v, int) and not isinstance(v, bool) and v == 0:
        raise _err(f"'{op}': {name} by zero", e)


def newtype_cast_ok(src: T.Type, dst: T.Type) -> bool:
    """A cast that involves a `type`-declared type goes one step: between the new type and the type
    it is declared from (or from an unsized literal). `(t1)a` with `type bit<1> t1` and `a` of type
    bit<2> needs an intermediate cast, as p4c says."""
    if not isinstance(src, T.NewType) and not isinstance(dst, T.NewType):
        return True
    if T.same_type(src, dst) or isinstance(src, T.IntType):
        return True
    if isinstance(dst, T.NewType) and T.same_type(dst.underlying, src):
        return True
    return isinstance(src, T.NewType) and T.same_type(src.underlying, dst)


def refuse_dots_for_varbit(e: ast.ListExpression | ast.StructExpression, u: Any, shown: Any) -> None:
    """p4c: a struct, header or tuple holding a varbit cannot be initialized with `...` (a varbit
    has no default width)."""
    if e.dots and isinstance(u, (T.StructLikeType, T.TupleType)) and has_varbit(u):
        raise _err(f"{shown} holds a varbit field and cannot be initialized using '...'", e)


def has_varbit(t: T.Type) -> bool:
    """Whether a value of type `t` holds a varbit somewhere (its width is then known only at run time)."""
    if isinstance(t, T.VarbitType):
        return True
    if isinstance(t, T.StructLikeType):
        return any(has_varbit(T.unwrap(f.type)) for f in t.fields)
    if isinstance(t, T.TupleType):
        return any(has_varbit(T.unwrap(x)) for x in t.elems)
    return False
