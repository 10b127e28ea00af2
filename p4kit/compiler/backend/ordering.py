"""The order in which an expression's side effects happen, as P4_16 defines it (section 8 on expressions:
operands and arguments left to right, `&&`/`||` evaluate their right operand only when the left one does
not decide, `?:` evaluates only the branch its condition picks).

BMv2 expressions have no side effects, so everything with effects inside an expression (calls, table
applications, and the short-circuit and conditional operators around them) is evaluated into temporaries
before the expression that uses them, in evaluation order, as p4c's SideEffectOrdering does. `collect`
lists what has to go first; a `Lazy` item stands for a whole `?:`, `&&` or `||` whose skipped side holds a
call: it becomes an `if` assigning its temporary (see `lazy_as_if`), so only what P4 evaluates runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from p4kit.compiler import ast
from p4kit.compiler import types as T  # noqa: N812
from p4kit.compiler.backend.context import Scope
from p4kit.compiler.backend.storage import Loc

# attributes of AST nodes that refer to declarations or types rather than holding sub-expressions
NOT_CHILDREN = {"decl", "type", "loc", "annotations", "target_type", "type_ref", "type_args"}


@dataclass(eq=False)
class Snapshot:
    """An operand read before a call to its right runs: P4 evaluates arguments and operands left to
    right, so in `f(x, g(x))` the first argument is x's value before g changes it."""

    expr: ast.Expression


@dataclass(eq=False)
class Lazy:
    """A `c ? a : b`, `a && b` or `a || b` with a call (or a table application) in a side that P4 may
    skip: evaluated as an `if` into a temporary, at its place in the evaluation order."""

    expr: ast.Expression


def lazy_operator(e: Any) -> bool:
    """Whether `e` is a `?:`, `&&` or `||` that must be evaluated as control flow: a side that may be
    skipped calls something or applies a table."""
    if not isinstance(e, (ast.Mux, ast.BinaryOp)) or e.const_value is not None:
        return False
    if isinstance(e, ast.Mux):
        return hoistable(e.then) or hoistable(e.else_)
    if e.op not in ("&&", "||") or isinstance(e.left.const_value, bool):
        return False
    return hoistable(e.right)


def _chooses(e: Any) -> bool:
    """A `?:`, `&&` or `||` not folded to a constant."""
    if isinstance(e, ast.Mux):
        return e.const_value is None
    return isinstance(e, ast.BinaryOp) and e.op in ("&&", "||") and e.const_value is None


def collect(e: Any, items: list[Any], later: bool = False) -> None:
    """Table results, calls with effects and lazy operators inside an expression, in evaluation order
    (with the operands that must be read before them, as `Snapshot`s). `later`: something evaluated
    after `e` in the enclosing expression is hoisted too, so a plain operand inside `e` is copied."""
    if e is None or not isinstance(e, ast.Node):
        return
    if isinstance(e, ast.Expression) and e.const_value is not None:
        return  # folded (e.g. `true || f()`): nothing inside is evaluated
    if isinstance(e, ast.Member) and e.kind == "apply_result":
        items.append(e)
        return
    if lazy_operator(e) or (later and _chooses(e) and hoistable(e)):
        # (the second: only its condition calls something, but a call after it may change what the
        # side it picks reads, so it is evaluated in its turn, as an if, too)
        items.append(Lazy(e))
        return
    if isinstance(e, ast.BinaryOp) and e.op in ("&&", "||") and isinstance(e.left.const_value, bool):
        if e.left.const_value == (e.op == "||"):
            return  # `true || x`, `false && x`: x is never evaluated
    if isinstance(e, ast.MethodCallExpression):
        c = e.call
        if c is not None and c.kind in ("function", "extern_function", "extern_method", "table_apply"):
            collect_args(c, items)
            items.append(e)
            return
        if c is not None and c.kind == "builtin":
            return
    if isinstance(e, ast.BinaryOp) and e.op not in ("&&", "||"):
        collect_in_order([e.left, e.right], [True, True], items, later)
        return
    for name in ("expr", "left", "right", "cond", "then", "else_", "index"):
        sub = getattr(e, name, None)
        if isinstance(sub, ast.Expression):
            collect(sub, items, later)
    # list and struct initializers are evaluated left to right too: `{x, g(x)}` keeps x's old value
    elems = list(getattr(e, "elems", []) or [])
    if isinstance(e, ast.StructExpression):
        elems = [f.value for f in e.fields]
    if elems:
        collect_in_order(elems, [True] * len(elems), items, later)


def collect_args(c: ast.CallInfo, items: list[Any]) -> None:
    """A call's arguments, left to right; those passed by value are read in their turn (out and inout
    arguments are l-values, their values copied in only once all arguments are evaluated)."""
    directions = [p.direction for p in c.params]
    reads = [i < len(directions) and directions[i] in ("", "in") for i in range(len(c.args))]
    collect_in_order(list(c.args), reads, items)


def collect_in_order(operands: list[Any], reads: list[bool], items: list[Any], later: bool = False) -> None:
    """Operands in evaluation order; a plain operand read as a value is copied (a `Snapshot`) when a
    later operand, here or after this list in the enclosing expression (`later`), calls something
    that may change what it reads."""
    hoisted = [o is not None and hoistable(o) for o in operands]
    for i, o in enumerate(operands):
        if o is None:
            continue
        after = later or any(hoisted[i + 1 :])
        if hoisted[i]:
            collect(o, items, after)
        elif reads[i] and after and o.const_value is None and reads_storage(o):
            if storable(o.type):
                items.append(Snapshot(o))


def storable(t: T.Type | None) -> bool:
    """Whether a value of type `t` can be copied into a temporary (not an extern such as packet_in,
    a string, or something untyped)."""
    if t is None:
        return False
    return not isinstance(T.unwrap(t), (T.ExternType, T.StringType, T.CallableType, T.TableType, T.VoidType))


def hoistable(e: Any) -> bool:
    """Whether evaluating `e` has effects that must be ordered (see `collect`)."""
    items: list[Any] = []
    collect(e, items)
    return bool(items)


def reads_storage(e: Any) -> bool:
    """Whether an expression reads a variable, field or header (and not only constants)."""
    if isinstance(e, ast.PathExpression):
        return not isinstance(e.decl, ast.ConstDecl)
    if isinstance(e, ast.Member) and e.kind in ("enum_member", "error_member"):
        return False
    if isinstance(e, ast.Node):
        for k, v in vars(e).items():
            if k in NOT_CHILDREN:
                continue
            if isinstance(v, ast.Node) and reads_storage(v):
                return True
            if isinstance(v, list) and any(isinstance(x, ast.Node) and reads_storage(x) for x in v):
                return True
    return False


def item_key(it: Any) -> int:
    """The node an item evaluates (a call, a table result, or the operand a snapshot or lazy copies)."""
    return id(it.expr) if isinstance(it, (Snapshot, Lazy)) else id(it)


def once(items: list[Any]) -> list[Any]:
    """Each node evaluated once, where it first occurs: a compound assignment's target and its copy on
    the right share their calls (`hs[f()].v += 1` calls f once)."""
    seen: set[int] = set()
    out: list[Any] = []
    for it in items:
        if item_key(it) not in seen:
            seen.add(item_key(it))
            out.append(it)
    return out


def item_type(it: Any) -> T.Type:
    """The type of the temporary an item is evaluated into."""
    if isinstance(it, ast.Member):
        return T.BoolType()  # t.apply().hit / .miss
    e = it.expr if isinstance(it, (Snapshot, Lazy)) else it
    return e.type or T.BitsType(32)


def temp_ref(scope: Scope, loc: Loc, like: ast.Expression, name: str = "lazy_tmp") -> ast.PathExpression:
    """A synthetic expression naming the temporary `loc` (bound in `scope`), typed as `like`."""
    decl = ast.VariableDecl(name, ast.PrimTypeRef("_", loc=like.loc), loc=like.loc)
    decl.type = like.type
    scope.bind(decl, loc)
    return ast.PathExpression(name, loc=like.loc, decl=decl, type=like.type)


def _bool(value: bool, like: ast.Expression) -> ast.BoolLiteral:
    b = ast.BoolLiteral(value, loc=like.loc)
    b.type = T.BoolType()
    b.const_value = value
    return b


def lazy_as_if(target: ast.Expression, e: ast.Expression) -> ast.IfStatement:
    """`target = e` for a lazy operator `e`, as the `if` that evaluates only what P4 evaluates:
    `c ? a : b` as `if (c) target = a; else target = b;`, `a && b` as `if (a) target = b; else target =
    false;` and `a || b` as `if (a) target = true; else target = b;`."""
    if isinstance(e, ast.Mux):
        then = ast.AssignmentStatement(target, e.then, loc=e.loc)
        else_ = ast.AssignmentStatement(target, e.else_, loc=e.loc)
        return ast.IfStatement(e.cond, then, else_, loc=e.loc)
    assert isinstance(e, ast.BinaryOp) and e.op in ("&&", "||")
    rest = ast.AssignmentStatement(target, e.right, loc=e.loc)
    decided = ast.AssignmentStatement(target, _bool(e.op == "||", e), loc=e.loc)
    if e.op == "&&":
        return ast.IfStatement(e.left, rest, decided, loc=e.loc)
    return ast.IfStatement(e.left, decided, rest, loc=e.loc)
