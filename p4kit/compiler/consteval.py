"""Compile-time arithmetic with P4's semantics.

The type checker folds every expression whose operands are known: `bit<W>` values wrap modulo 2**W,
`int<W>` values wrap into the two's complement range, `int` values are exact, saturating operators
clamp. Keeping the arithmetic here (pure functions on Python ints) makes it testable on its own.
"""

from __future__ import annotations

from p4kit.compiler import types as T  # noqa: N812


def wrap(value: int, t: T.Type) -> int:
    """`value` represented in `t`: modulo 2**W for bit<W>, two's complement range for int<W>."""
    t = T.unwrap(t)
    if isinstance(t, T.SerEnumType):
        t = t.underlying
    if isinstance(t, T.BitsType):
        w = t.width
        if w <= 0:
            return 0
        v = value & ((1 << w) - 1)
        if t.signed and v >= 1 << (w - 1):
            v -= 1 << w
        return v
    return value


def saturate(value: int, t: T.Type) -> int:
    t = T.unwrap(t)
    if isinstance(t, T.BitsType):
        if t.signed:
            lo, hi = -(1 << (t.width - 1)), (1 << (t.width - 1)) - 1
        else:
            lo, hi = 0, (1 << t.width) - 1
        return min(max(value, lo), hi)
    return value


class ConstEvalError(Exception):
    """An operation that cannot be folded because it is an error (e.g. division by zero)."""


def fold_binary(op: str, a: int | bool, b: int | bool, t: T.Type) -> int | bool:
    """The value of `a op b` where the operands have (after unification) type `t`; for comparisons
    the result is a bool. Raises ConstEvalError for division by zero or a negative shift amount."""
    if op == "&&":
        return bool(a) and bool(b)
    if op == "||":
        return bool(a) or bool(b)
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    if op == "<":
        return a < b
    if op == ">":
        return a > b
    if op == "<=":
        return a <= b
    if op == ">=":
        return a >= b
    a, b = int(a), int(b)
    if op == "+":
        return wrap(a + b, t)
    if op == "-":
        return wrap(a - b, t)
    if op == "*":
        return wrap(a * b, t)
    if op in ("/", "%"):
        if b == 0:
            raise ConstEvalError("division by zero")
        if a < 0 or b < 0:
            # P4 leaves division of negative values to targets; p4c rejects it in constants
            q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
            return wrap(q if op == "/" else a - q * b, t)
        return wrap(a // b if op == "/" else a % b, t)
    if op == "|+|":
        return saturate(a + b, t)
    if op == "|-|":
        return saturate(a - b, t)
    if op == "&":
        return wrap(a & b, t)
    if op == "|":
        return wrap(a | b, t)
    if op == "^":
        return wrap(a ^ b, t)
    if op == "<<":
        if b < 0:
            raise ConstEvalError("negative shift amount")
        if isinstance(T.unwrap(t), T.BitsType) and b >= T.unwrap(t).width:  # type: ignore[attr-defined]
            return 0
        return wrap(a << b, t)
    if op == ">>":
        if b < 0:
            raise ConstEvalError("negative shift amount")
        return wrap(a >> b, t)
    raise ConstEvalError(f"operator {op} cannot be evaluated")


def fold_concat(a: int, wa: int, b: int, wb: int, signed: bool) -> int:
    """`a ++ b` where a has wa bits and b has wb bits."""
    v = ((a & ((1 << wa) - 1)) << wb) | (b & ((1 << wb) - 1))
    return wrap(v, T.BitsType(wa + wb, signed))


def fold_unary(op: str, a: int | bool, t: T.Type) -> int | bool:
    if op == "!":
        return not a
    if op == "-":
        return wrap(-int(a), t)
    if op == "+":
        return a
    if op == "~":
        tt = T.unwrap(t)
        if isinstance(tt, T.BitsType):
            return wrap(~int(a), tt)
        return ~int(a)
    raise ConstEvalError(f"operator {op} cannot be evaluated")


def fold_slice(a: int, hi: int, lo: int) -> int:
    """Bits hi..lo of `a` (unsigned result)."""
    return (a >> lo) & ((1 << (hi - lo + 1)) - 1)


def fold_cast(value: int | bool, src: T.Type, dst: T.Type) -> int | bool | None:
    """The value of `(dst) value` for a value of type `src`; None when it is not a scalar cast."""
    d = T.unwrap(dst)
    if isinstance(d, T.SerEnumType):
        d = d.underlying
    if isinstance(d, T.BoolType):
        return bool(value)
    if isinstance(d, (T.BitsType, T.IntType)):
        return wrap(int(value), d)
    return None
