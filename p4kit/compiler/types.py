"""Semantic types of P4_16, as the type checker computes them and the back end reads them.

Syntax (`ast.TypeRef`) says what the programmer wrote; these classes say what it means after typedefs
were unfolded, widths were evaluated and generic parameters were substituted. Every checked expression
carries one of these in `expr.type`, every `ast.TypeRef` in `ref.resolved`.

Equality: base types (`BitsType`, `BoolType`, ...) are plain values and compare structurally. Named types
(struct, header, enum, extern, ...) are created once per declaration (and once per specialisation), so
compare them with `same_type(a, b)`, which handles both cases; never rely on `is` for base types.

Widths: `bit_width(t)` gives the number of bits a value of `t` occupies in a header or in BMv2's
`scalars` (bool counts 1, a serializable enum counts its underlying width, a struct or header the sum
of its fields); it raises `ValueError` for types without a fixed width (int, varbit's *current*
width, externs, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only for annotations: ast imports nothing from here at runtime either
    from p4kit.compiler import ast


class Type:
    """Base class of all semantic types."""

    def __str__(self) -> str:  # pragma: no cover - overridden
        return type(self).__name__


# ---------------------------------------------------------------------------------------------------
# Base types (value semantics)


@dataclass(frozen=True)
class BitsType(Type):
    """`bit<W>` (signed=False) or `int<W>` (signed=True): fixed-width two's complement integers."""

    width: int
    signed: bool = False

    def __str__(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"


@dataclass(frozen=True)
class IntType(Type):
    """`int`: the type of unsized integer literals and compile-time integers (infinite precision).
    In an operation with a `bit<W>`/`int<W>` operand the literal takes that operand's type."""

    def __str__(self) -> str:
        return "int"


@dataclass(frozen=True)
class VarbitType(Type):
    """`varbit<W>`: a variable-length bit string of at most `max_width` bits (only in headers)."""

    max_width: int

    def __str__(self) -> str:
        return f"varbit<{self.max_width}>"


@dataclass(frozen=True)
class BoolType(Type):
    def __str__(self) -> str:
        return "bool"


@dataclass(frozen=True)
class StringType(Type):
    """`string`: only for compile-time strings (log_msg formats, annotations)."""

    def __str__(self) -> str:
        return "string"


@dataclass(frozen=True)
class VoidType(Type):
    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True)
class DontCareType(Type):
    """The type of `_` used as an argument or a type argument: matches anything."""

    def __str__(self) -> str:
        return "_"


@dataclass(frozen=True)
class StateType(Type):
    """The type of a parser state name (target of `transition`)."""

    def __str__(self) -> str:
        return "state"


@dataclass(frozen=True)
class SetType(Type):
    """`set<T>`: the type of a keyset (`a &&& m`, `lo .. hi`, `default`, a value_set) in select cases
    and table entries; `elem` is the element type."""

    elem: Type

    def __str__(self) -> str:
        return f"set<{self.elem}>"


# ---------------------------------------------------------------------------------------------------
# Declared / named types (one object per declaration or specialisation)


@dataclass(eq=False)
class ErrorType(Type):
    """`error`: the single program-wide enumeration; every `error { ... }` declaration adds to
    `members` (in declaration order, which is also BMv2's numbering)."""

    members: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return "error"


@dataclass(eq=False)
class MatchKindType(Type):
    """`match_kind`: the program-wide set of match kinds (exact, ternary, lpm, range, selector, ...)."""

    members: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return "match_kind"


@dataclass(eq=False)
class StructField:
    """A field of a struct, header or header union with its resolved type."""

    name: str
    type: Type
    annotations: list[ast.Annotation] = field(default_factory=list)


@dataclass(eq=False)
class StructLikeType(Type):
    """Common base of struct, header and header_union types. `fields` keeps declaration order.
    `type_args` is non-empty for a specialisation of a generic struct (`S<bit<8>>`)."""

    name: str
    fields: list[StructField] = field(default_factory=list)
    decl: ast.StructLikeDecl | None = None
    type_args: tuple[Type, ...] = ()

    def field(self, name: str) -> StructField | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None

    def __str__(self) -> str:
        if self.type_args:
            return f"{self.name}<{', '.join(map(str, self.type_args))}>"
        return self.name


@dataclass(eq=False)
class StructType(StructLikeType):
    pass


@dataclass(eq=False)
class HeaderType(StructLikeType):
    pass


@dataclass(eq=False)
class HeaderUnionType(StructLikeType):
    pass


@dataclass(eq=False)
class HeaderStackType(Type):
    """`H[N]`: a stack of `size` headers (or header unions) of type `elem`."""

    elem: Type
    size: int

    def __str__(self) -> str:
        return f"{self.elem}[{self.size}]"


@dataclass(eq=False)
class TupleType(Type):
    """`tuple<A, B>`, and the type of a list expression `{a, b}` until it is converted to a struct or
    header by its context."""

    elems: list[Type] = field(default_factory=list)

    def __str__(self) -> str:
        return f"tuple<{', '.join(map(str, self.elems))}>"


@dataclass(eq=False)
class ListType(Type):
    """`list<T>` (P4_16 v1.2.3): a compile-time sequence of values of one type, such as an extern's
    constructor argument `(list<bit<32>>){2, 3, 4}`."""

    elem: Type

    def __str__(self) -> str:
        return f"list<{self.elem}>"


@dataclass(eq=False)
class StructInitType(Type):
    """The type of a struct-valued expression `{f = e, ...}` written without a type name, until its
    context gives it a struct or header type."""

    fields: list[StructField] = field(default_factory=list)

    def __str__(self) -> str:
        return "{" + ", ".join(f"{f.name}: {f.type}" for f in self.fields) + "}"


@dataclass(eq=False)
class EnumType(Type):
    """A plain `enum E { A, B }`: members have no numeric value in P4 (BMv2 numbers them 0, 1, ...)."""

    name: str
    members: list[str] = field(default_factory=list)
    decl: ast.EnumDecl | None = None

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class SerEnumType(Type):
    """A serializable enum `enum bit<8> E { A = 1 }`: `members` maps names to their values."""

    name: str
    underlying: BitsType
    members: dict[str, int] = field(default_factory=dict)
    decl: ast.EnumDecl | None = None

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class NewType(Type):
    """`type bit<32> T;`: a distinct type with the representation of `underlying` (casts convert)."""

    name: str
    underlying: Type
    decl: ast.TypedefDecl | None = None

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class TypeVar(Type):
    """A generic type parameter (`T` in `extern register<T>`); `owner` is the declaring node."""

    name: str
    owner: Any = None

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class ExternType(Type):
    """An extern object type, possibly specialised (`register<bit<32>>`): `type_args` in the order of
    `decl.type_params`; `bindings` maps parameter names to those types."""

    name: str
    decl: ast.ExternDecl
    type_args: tuple[Type, ...] = ()

    @property
    def bindings(self) -> dict[str, Type]:
        return {p: t for p, t in zip(self.decl.type_params, self.type_args, strict=False)}

    def __str__(self) -> str:
        if self.type_args:
            return f"{self.name}<{', '.join(map(str, self.type_args))}>"
        return self.name


@dataclass(eq=False)
class ParamInfo:
    """A parameter of a callable type after type substitution."""

    name: str
    direction: str  # "" (directionless), "in", "out" or "inout"
    type: Type
    has_default: bool = False
    optional: bool = False  # annotated @optional
    decl: ast.Parameter | None = None


@dataclass(eq=False)
class CallableType(Type):
    """Common base of parser/control/package types and of functions, actions and methods."""

    name: str
    params: list[ParamInfo] = field(default_factory=list)
    type_params: list[str] = field(default_factory=list)
    decl: Any = None

    def __str__(self) -> str:
        return self.name


@dataclass(eq=False)
class ParserType(CallableType):
    """A parser type or declaration; instances are applied with `p.apply(args)`.
    `ctor_params` are the constructor parameters of a parser declaration."""

    ctor_params: list[ParamInfo] = field(default_factory=list)


@dataclass(eq=False)
class ControlType(CallableType):
    ctor_params: list[ParamInfo] = field(default_factory=list)


@dataclass(eq=False)
class PackageType(CallableType):
    """A package (`V1Switch`): only its constructor parameters (`params`) matter."""


@dataclass(eq=False)
class FunctionType(CallableType):
    """A function, extern function, method or action: `ret` is the return type (void for actions)."""

    ret: Type = field(default_factory=VoidType)


@dataclass(eq=False)
class ActionType(FunctionType):
    """An action; directionless parameters are the control-plane (action data) parameters."""


@dataclass(eq=False)
class TableType(Type):
    """The type of a table name: `t.apply()` returns `ApplyResultType(t)`."""

    decl: ast.TableDecl

    def __str__(self) -> str:
        return f"table {self.decl.name}"


@dataclass(eq=False)
class ApplyResultType(Type):
    """The result of `t.apply()`: a struct with `hit`, `miss` (bool) and `action_run`."""

    table: ast.TableDecl

    def __str__(self) -> str:
        return f"{self.table.name}.apply_result"


@dataclass(eq=False)
class ActionEnumType(Type):
    """The type of `t.apply().action_run`: switch labels are the table's action names."""

    table: ast.TableDecl

    def __str__(self) -> str:
        return f"action_list({self.table.name})"


@dataclass(eq=False)
class TypeOfType(Type):
    """The type of an expression that names a type (`E` in `E.A`, `error` in `error.NoError`)."""

    type: Type

    def __str__(self) -> str:
        return f"type {self.type}"


# ---------------------------------------------------------------------------------------------------
# Helpers


def unwrap(t: Type) -> Type:
    """The representation of `t`: a `type`-declared NewType becomes its underlying type."""
    while isinstance(t, NewType):
        t = t.underlying
    return t


def same_type(a: Type, b: Type) -> bool:
    """Type equality as P4 defines it (structural for base types, nominal for declared types)."""
    if a is b:
        return True
    if isinstance(a, DontCareType) or isinstance(b, DontCareType):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (BitsType, IntType, VarbitType, BoolType, StringType, VoidType, StateType)):
        return a == b
    if isinstance(a, (ErrorType, MatchKindType)):
        return True
    if isinstance(a, StructLikeType):
        assert isinstance(b, StructLikeType)
        if a.decl is not None and a.decl is b.decl:
            return len(a.type_args) == len(b.type_args) and all(
                same_type(x, y) for x, y in zip(a.type_args, b.type_args, strict=True)
            )
        return False
    if isinstance(a, HeaderStackType):
        assert isinstance(b, HeaderStackType)
        return a.size == b.size and same_type(a.elem, b.elem)
    if isinstance(a, TupleType):
        assert isinstance(b, TupleType)
        return len(a.elems) == len(b.elems) and all(
            same_type(x, y) for x, y in zip(a.elems, b.elems, strict=True)
        )
    if isinstance(a, (SetType, ListType)):
        assert isinstance(b, (SetType, ListType))
        return same_type(a.elem, b.elem)
    if isinstance(a, ExternType):
        assert isinstance(b, ExternType)
        return (
            a.decl is b.decl
            and len(a.type_args) == len(b.type_args)
            and all(same_type(x, y) for x, y in zip(a.type_args, b.type_args, strict=True))
        )
    if isinstance(a, (EnumType, SerEnumType, NewType)):
        return a.decl is not None and a.decl is getattr(b, "decl", None)
    if isinstance(a, TypeVar):
        assert isinstance(b, TypeVar)
        return a.name == b.name and a.owner is b.owner
    if isinstance(a, CallableType):
        return a.decl is not None and a.decl is getattr(b, "decl", None)
    if isinstance(a, (TableType, ApplyResultType, ActionEnumType)):
        return getattr(a, "decl", getattr(a, "table", None)) is getattr(b, "decl", getattr(b, "table", None))
    return False


def is_integral(t: Type) -> bool:
    """bit<W>, int<W> or int (after unwrapping `type` declarations)."""
    return isinstance(unwrap(t), (BitsType, IntType))


def bit_width(t: Type, minimum: bool = False) -> int:
    """Number of bits of a value of `t` as stored by BMv2 (see the module docstring). With `minimum`,
    a varbit counts 0 bits and a header union its smallest member (P4's `minSizeInBits`)."""
    t = unwrap(t)
    if isinstance(t, BitsType):
        return t.width
    if isinstance(t, BoolType):
        return 1
    if isinstance(t, VarbitType):
        return 0 if minimum else t.max_width
    if isinstance(t, SerEnumType):
        return t.underlying.width
    if isinstance(t, HeaderUnionType) and minimum:
        return min((bit_width(f.type, minimum) for f in t.fields), default=0)
    if isinstance(t, StructLikeType):
        return sum(bit_width(f.type, minimum) for f in t.fields)
    if isinstance(t, HeaderStackType):
        return bit_width(t.elem, minimum) * t.size
    if isinstance(t, TupleType):
        return sum(bit_width(e, minimum) for e in t.elems)
    raise ValueError(f"type {t} has no fixed width")


def is_header_like(t: Type) -> bool:
    """Header or header union: values with a validity bit."""
    return isinstance(t, (HeaderType, HeaderUnionType))
