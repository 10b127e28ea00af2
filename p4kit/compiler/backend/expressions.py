"""Typed AST expressions -> BMv2 JSON expressions, following p4c's conventions.

BMv2 computes with unbounded integers and truncates only when storing into a field, so fixed-width
P4 semantics must be spelled out: unsigned `+ - * << ~` and negation are masked (`& 0xff..`), signed
results go through `two_comp_mod`, saturating operators through `usat_cast`/`sat_cast`, narrowing casts
mask, and booleans and data are converted explicitly with `d2b`/`b2d` (BMv2 has no implicit
conversion).

`value()` returns a *data* value, `cond()` a *boolean* one; `loc()` resolves lvalues and structured
values (headers, structs, stacks) to their storage. Calls inside expressions are handed to `call_hook`
(set by whoever lowers statements), which evaluates them into a temporary first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from p4kit.compiler import ast
from p4kit.compiler import types as T  # noqa: N812
from p4kit.compiler.backend import values as V  # noqa: N812
from p4kit.compiler.backend.context import Ctx, Scope, unsupported
from p4kit.compiler.backend.storage import (
    DynFieldLoc,
    DynHeaderLoc,
    ExternLoc,
    FieldLoc,
    HeaderLoc,
    Loc,
    StackLoc,
    StructLoc,
    UnionLoc,
    ValueLoc,
    header_leaves,
)
from p4kit.compiler.diagnostics import CompileError

JSON = dict[str, Any]

_ARITH = {"+", "-", "*", "<<"}
_CMP = {"==", "!=", "<", "<=", ">", ">="}


def is_bool(t: T.Type | None) -> bool:
    return isinstance(T.unwrap(t), T.BoolType) if t is not None else False


def width_of(t: T.Type | None) -> int | None:
    t = T.unwrap(t) if t is not None else None
    if isinstance(t, T.BitsType):
        return t.width
    if isinstance(t, T.SerEnumType):
        return t.underlying.width
    if isinstance(t, T.BoolType):
        return 1
    return None


def signed(t: T.Type | None) -> bool:
    t = T.unwrap(t) if t is not None else None
    return isinstance(t, T.BitsType) and t.signed


@dataclass
class ExprLowering:
    ctx: Ctx
    scope: Scope
    call_hook: Callable[[ast.MethodCallExpression], Loc] | None = None
    overrides: dict[int, Loc] | None = None  # sub-expressions already computed (e.g. parser lookaheads)

    # --- locations ------------------------------------------------------------------------------------
    def loc(self, e: ast.Expression) -> Loc:
        """Storage of an lvalue or structured value (field, header, stack, union, struct, extern)."""
        if self.overrides and id(e) in self.overrides:
            return self.overrides[id(e)]
        if isinstance(e, ast.PathExpression):
            loc = self.scope.lookup(e.decl)
            if loc is not None:
                return loc
            if isinstance(e.decl, ast.ConstDecl):
                return ValueLoc(self.const_json(e.decl.const_value, e.type, e), e.type or T.IntType())
            raise unsupported(f"reference to '{e.name}' here", e)
        if isinstance(e, ast.Member):
            if e.kind == "field":
                base = self.loc(e.expr)
                return self._member(base, e.member, e)
            if e.kind == "stack_elem_prop":
                base = self.loc(e.expr)
                if not isinstance(base, StackLoc):
                    raise unsupported("stack property of a non-stack", e)
                if e.member == "last":
                    idx = V.expr("last_stack_index", None, base.json())
                    return DynHeaderLoc(base, idx, base.type.elem)
                if e.member == "next":
                    raise unsupported("'next' outside a parser's extract", e)
            if e.kind == "apply_result" and self.call_hook is not None:
                return self.call_hook(e)  # type: ignore[arg-type]
            return ValueLoc(self.value(e), e.type or T.IntType())
        if isinstance(e, ast.ArrayIndex):
            base = self.loc(e.expr)
            if isinstance(base, StructLoc) and e.index.const_value is not None:
                return base.fields[str(int(e.index.const_value))]  # a tuple element
            if not isinstance(base, StackLoc):
                raise unsupported("indexing a value that is not a header stack", e)
            if e.index.const_value is not None:
                i = int(e.index.const_value)
                if not 0 <= i < len(base.elems):
                    raise CompileError(
                        f"index {i} is out of bounds for a stack of size {len(base.elems)}", e.loc
                    )
                return base.elems[i]
            return DynHeaderLoc(base, self.value(e.index), base.type.elem)
        if isinstance(e, ast.MethodCallExpression):
            if self.call_hook is None:
                raise unsupported("a call inside this expression", e)
            return self.call_hook(e)
        if isinstance(e, (ast.ListExpression, ast.StructExpression)):
            raise unsupported("a list or struct expression here", e)
        if isinstance(e, ast.DefaultExpression) and e.is_dontcare:
            # `_` as an out argument: the value is written to a fresh temporary nobody reads
            # (p4c's DontcareArgs pass declares one per call the same way)
            if e.type is None or isinstance(T.unwrap(e.type), (T.DontCareType, T.TypeVar)):
                raise CompileError("'_' needs the type of the parameter it is passed to", e.loc)
            return self.ctx.temp(e.type)
        return ValueLoc(self.value(e), e.type or T.IntType())

    def _member(self, base: Loc, name: str, e: ast.Node) -> Loc:
        if isinstance(base, HeaderLoc):
            if name not in base.fields:
                raise unsupported(f"field {name}", e)
            return base.fields[name]
        if isinstance(base, StructLoc):
            return base.fields[name]
        if isinstance(base, UnionLoc):
            return base.members[name]
        if isinstance(base, DynHeaderLoc):
            elem = T.unwrap(base.type)
            if not isinstance(elem, T.HeaderType):
                raise unsupported("a union member of a run-time stack index", e)
            for i, (leaf, ft) in enumerate(header_leaves(elem)):
                if leaf == name:  # offsets count the header's stored (flattened) fields
                    return DynFieldLoc(base, i, ft)
            if any(f.name == name for f in elem.fields):
                raise unsupported(f"struct field '{name}' of a run-time stack index", e)
        raise unsupported(f"member '{name}' of this value", e)

    # --- data values --------------------------------------------------------------------------------
    def const_json(self, value: Any, t: T.Type | None, node: ast.Node | None = None) -> JSON:
        if isinstance(value, bool):
            return V.boolean(value)
        if isinstance(value, int):
            return V.hexstr(value, width_of(t))
        raise unsupported("a constant of this type", node)

    def value(self, e: ast.Expression) -> JSON:
        """A data value (integral); booleans are converted with b2d."""
        t = e.type
        if is_bool(t):
            return V.b2d(self.cond(e))
        cv = e.const_value
        if isinstance(cv, int) and not isinstance(cv, bool):
            return V.hexstr(cv, width_of(t))
        if self.overrides and id(e) in self.overrides:
            return self.overrides[id(e)].json()  # type: ignore[attr-defined]
        if isinstance(e, ast.Member) and e.kind == "error_member":
            return V.hexstr(self.ctx.error_value(e.member, e.loc), 32)
        if isinstance(e, ast.Member) and e.kind == "enum_member":
            return self.enum_value(e)
        if isinstance(e, ast.Member) and e.kind == "stack_elem_prop":
            base = self.loc(e.expr)
            assert isinstance(base, StackLoc)
            if e.member == "lastIndex":
                return V.expr("last_stack_index", None, base.json())
            if e.member == "size":
                return V.hexstr(len(base.elems), 32)
        if isinstance(e, (ast.PathExpression, ast.Member, ast.ArrayIndex, ast.MethodCallExpression)):
            loc = self.loc(e)
            if isinstance(loc, (FieldLoc, ValueLoc, DynFieldLoc)):
                return loc.json()
            raise unsupported("a non-scalar value where a number is expected", e)
        if isinstance(e, ast.Slice):
            v = self.value(e.expr)
            lo, hi = e.lo_value, e.hi_value
            if lo:
                v = V.expr(">>", v, V.hexstr(lo))
            return V.truncate(v, hi - lo + 1)
        if isinstance(e, ast.UnaryOp):
            return self._unary(e)
        if isinstance(e, ast.BinaryOp):
            return self._binary(e)
        if isinstance(e, ast.Mux):
            return V.expr("?", self.value(e.then), self.value(e.else_), self.cond(e.cond))
        if isinstance(e, ast.Cast):
            return self._cast(e)
        if isinstance(e, ast.Constant):
            return V.hexstr(e.value, width_of(t))
        raise unsupported(f"expression {type(e).__name__} here", e)

    def enum_value(self, e: ast.Member) -> JSON:
        t = T.unwrap(e.type) if e.type is not None else None
        if isinstance(t, T.SerEnumType):
            return V.hexstr(t.members[e.member], t.underlying.width)
        if isinstance(t, T.EnumType):
            return V.hexstr(t.members.index(e.member), 32)
        raise unsupported("this enum member", e)

    def _fit(self, v: JSON, t: T.Type | None) -> JSON:
        """Bring an unbounded result back into its type's range."""
        w = width_of(t)
        if w is None:
            return v
        return V.to_signed(v, w) if signed(t) else V.truncate(v, w)

    def _unary(self, e: ast.UnaryOp) -> JSON:
        if e.op == "+":
            return self.value(e.expr)
        if e.op == "-":
            return self._fit(V.expr("-", V.hexstr(0), self.value(e.expr)), e.type)
        if e.op == "~":
            return self._fit(V.expr("~", None, self.value(e.expr)), e.type)
        raise unsupported(f"unary operator {e.op} on numbers", e)

    def _binary(self, e: ast.BinaryOp) -> JSON:
        op = e.op
        if op in ("|+|", "|-|"):
            w = width_of(e.type) or 32
            inner = V.expr("+" if op == "|+|" else "-", self.value(e.left), self.value(e.right))
            return V.expr("sat_cast" if signed(e.type) else "usat_cast", inner, V.hexstr(w))
        if op == "++":
            wr = width_of(e.right.type)
            if wr is None:
                raise unsupported("concatenation of values without a width", e)
            shifted = V.expr("<<", self.value(e.left), V.hexstr(wr))
            right = self.value(e.right)
            if signed(e.right.type):  # its bits, not its (possibly negative) value
                right = V.truncate(right, wr)
            return self._fit(V.expr("|", shifted, right), e.type)
        if op in ("&&", "||") or op in _CMP:
            return V.b2d(self.cond(e))
        if op in ("/", "%"):
            return V.expr(op, self.value(e.left), self.value(e.right))
        if op in ("&", "|", "^"):
            v = V.expr(op, self.value(e.left), self.value(e.right))
            return self._fit(v, e.type) if signed(e.type) else v
        if op == ">>":
            return V.expr(">>", self.value(e.left), self.value(e.right))
        if op in _ARITH:
            return self._fit(V.expr(op, self.value(e.left), self.value(e.right)), e.type)
        raise unsupported(f"operator {op}", e)

    def _cast(self, e: ast.Cast) -> JSON:
        src = T.unwrap(e.expr.type) if e.expr.type is not None else None
        dst = T.unwrap(e.type) if e.type is not None else None
        if isinstance(dst, T.BoolType):
            return V.b2d(self.cond(e))
        v = self.value(e.expr)
        wd = width_of(dst)
        if wd is None:
            return v
        if isinstance(src, T.BoolType):
            return v  # b2d already gives 0/1
        ws = width_of(src)
        if signed(dst):
            if ws is not None and ws <= wd and signed(src):
                return v
            return V.to_signed(v, wd)
        if ws is not None and ws <= wd and not signed(src):
            return v
        return V.truncate(v, wd)

    # --- booleans -------------------------------------------------------------------------------------
    def cond(self, e: ast.Expression) -> JSON:
        """A boolean JSON expression (what conditionals, verify and `and`/`or` want)."""
        cv = e.const_value
        if isinstance(cv, bool):
            return V.boolean(cv)
        if self.overrides and id(e) in self.overrides:  # computed first (a call or a lazy operator)
            return V.d2b(self.overrides[id(e)].json())  # type: ignore[attr-defined]
        if isinstance(e, ast.BoolLiteral):
            return V.boolean(e.value)
        if isinstance(e, ast.UnaryOp) and e.op == "!":
            return V.expr("not", None, self.cond(e.expr))
        if isinstance(e, ast.BinaryOp):
            if e.op in ("&&", "||"):
                if isinstance(e.left.const_value, bool):  # short circuit: the right side may not run
                    if e.left.const_value == (e.op == "||"):
                        return V.boolean(e.left.const_value)
                    return self.cond(e.right)
                return V.expr("and" if e.op == "&&" else "or", self.cond(e.left), self.cond(e.right))
            if e.op in _CMP:
                return self._compare(e)
        if isinstance(e, ast.Mux):
            return V.d2b(V.expr("?", V.b2d(self.cond(e.then)), V.b2d(self.cond(e.else_)), self.cond(e.cond)))
        if isinstance(e, ast.Cast):
            return V.d2b(self.value(e.expr))
        if isinstance(e, ast.MethodCallExpression) and e.call is not None and e.call.kind == "builtin":
            if e.call.name == "isValid":
                assert e.call.obj is not None
                return self.is_valid(self.loc(e.call.obj), e)
        loc = self.loc(e)
        if isinstance(loc, ValueLoc):
            v = loc.json()
            return v if v.get("type") == "bool" or _is_bool_expr(v) else V.d2b(v)
        if isinstance(loc, (FieldLoc, DynFieldLoc)):
            return V.d2b(loc.json())
        raise unsupported("this boolean expression", e)

    def is_valid(self, loc: Loc, e: ast.Node) -> JSON:
        if isinstance(loc, HeaderLoc):
            return V.d2b(loc.valid().json())
        if isinstance(loc, DynHeaderLoc):
            return V.expr("valid", None, loc.json())
        if isinstance(loc, UnionLoc):
            return V.expr("valid_union", None, loc.json())
        raise unsupported("isValid() on this value", e)

    def _compare(self, e: ast.BinaryOp) -> JSON:
        lt = T.unwrap(e.left.type) if e.left.type is not None else None
        if isinstance(lt, T.BoolType):
            return V.expr(e.op, self.cond(e.left), self.cond(e.right))
        if isinstance(lt, (T.HeaderType, T.StructType, T.HeaderUnionType, T.HeaderStackType, T.TupleType)):
            return self._compare_structured(e)
        return V.expr(e.op, self.value(e.left), self.value(e.right))

    def _compare_structured(self, e: ast.BinaryOp) -> JSON:
        """`==`/`!=` on headers, structs, tuples, stacks and list/struct expressions: element by
        element (p4c's SimplifyComparisons does the same); headers compare whole, validity included."""
        if e.op not in ("==", "!="):
            raise unsupported(f"operator {e.op} on structured values", e)
        parts = self._eq_parts(self._tree(e.left), self._tree(e.right), e)
        acc: JSON | None = None
        for part in parts:
            acc = part if acc is None else V.expr("and", acc, part)
        res = acc if acc is not None else V.boolean(True)
        return res if e.op == "==" else V.expr("not", None, res)

    def _tree(self, x: ast.Expression | Loc) -> tuple[str, Any]:
        """A value to compare, as ("list", [...]), ("struct", {name: ...}), ("header", loc),
        ("stack", [...]) or ("leaf", data JSON)."""
        if isinstance(x, ast.ListExpression):
            return ("list", [self._tree(el) for el in x.elems])
        if isinstance(x, ast.StructExpression):
            return ("struct", {f.name: self._tree(f.value) for f in x.fields})
        if isinstance(x, ast.Expression):
            t = T.unwrap(x.type) if x.type is not None else None
            if isinstance(t, (T.HeaderType, T.StructType, T.HeaderUnionType, T.HeaderStackType, T.TupleType)):
                return self._tree(self.loc(x))
            return ("leaf", self.value(x))
        if isinstance(x, StructLoc):
            return ("struct", {n: self._tree(sub) for n, sub in x.fields.items()})
        if isinstance(x, HeaderLoc) and isinstance(T.unwrap(x.type), T.StructType):
            return ("struct", {n: self._tree(sub) for n, sub in x.fields.items()})  # a metadata struct
        if isinstance(x, (HeaderLoc, DynHeaderLoc)):
            return ("header", x)
        if isinstance(x, StackLoc):
            return ("stack", [self._tree(el) for el in x.elems])
        if isinstance(x, (FieldLoc, DynFieldLoc, ValueLoc)):
            return ("leaf", x.json())
        raise unsupported("comparison of these structured values", None)

    def _eq_parts(self, a: tuple[str, Any], b: tuple[str, Any], e: ast.Node) -> list[JSON]:
        ka, kb = a[0], b[0]
        if ka == "leaf" and kb == "leaf":
            return [V.expr("==", a[1], b[1])]
        if ka == "header" and kb == "header":
            return [V.expr("==", a[1].json(), b[1].json())]
        if ka == "stack" and kb == "stack":
            if any(x[0] != "header" for x in [*a[1], *b[1]]):
                raise unsupported("comparison of header union stacks", e)
            return [p for x, y in zip(a[1], b[1], strict=True) for p in self._eq_parts(x, y, e)]
        if ka in ("struct", "list") and kb in ("struct", "list"):
            if ka == "struct" and kb == "struct":
                pairs = [(a[1][n], b[1][n]) for n in a[1]]
            else:
                xs = list(a[1].values()) if ka == "struct" else a[1]
                ys = list(b[1].values()) if kb == "struct" else b[1]
                pairs = list(zip(xs, ys, strict=True))
            return [p for x, y in pairs for p in self._eq_parts(x, y, e)]
        raise unsupported("comparison of these structured values", e)

    def extern(self, e: ast.Expression) -> ExternLoc:
        loc = self.loc(e)
        if not isinstance(loc, ExternLoc):
            raise unsupported("an extern method on this object", e)
        return loc


def _is_bool_expr(v: JSON) -> bool:
    if v.get("type") != "expression":
        return False
    op = v["value"].get("op")
    return op in _CMP or op in ("and", "or", "not", "d2b", "valid", "valid_union")
