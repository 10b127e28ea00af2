"""The P4_16 abstract syntax tree: what the parser builds and the checker annotates.

Contract with the back end (the checker guarantees this for every program `frontend.check` accepts):

- Every `Expression` has `.type` (a `types.Type`) set. Integer literals that took their width from the
  other operand have `.type == BitsType(w)`; a literal that stayed unsized has `IntType()`.
- Every expression whose value is known at compile time has `.const_value` set: an `int` for integers
  and for members of serializable enums (their numeric value), a `bool` for booleans; None otherwise
  (also for plain enum and error members). For `bit<W>`/`int<W>` values it is already reduced to the
  type's range (two's complement for `int<W>`).
- Implicit conversions the checker accepts: an `int` literal takes its context's type (its `.type` is
  rewritten); a serializable enum value is used as its underlying `bit<W>` (the expression keeps its
  `SerEnumType`, so use `types.unwrap`/`SerEnumType.underlying` for the width); a `type`-declared NewType
  is used as its underlying type; an unsigned value assigned to a wider unsigned location (old p4c
  behaviour) is wrapped in an explicit `Cast` node by the checker, so the back end sees the widening.
- `PathExpression.decl` is the declaration the name denotes (a `Parameter`, `VariableDecl`,
  `ConstDecl`, `Instantiation`, `ActionDecl`, `TableDecl`, `FunctionDecl`, `ExternFunctionDecl`,
  `ParserState`, `ValueSetDecl`, a parser/control declaration, ...).
- `Member.kind` says what a member access is: "field" (struct/header field), "stack_elem_prop"
  (`next`, `last`, `lastIndex`, `size` of a stack), "enum_member", "error_member", "method"
  (a method of an extern, of a header, of a table/control/parser - i.e. a call target), "apply_result"
  (`hit`, `miss`, `action_run` of `t.apply()`).
- `MethodCallExpression.call` is a `CallInfo` saying what is called (action, function, extern function,
  extern method, built-in method, table/control/parser apply), with the arguments matched to parameters.
- Syntax sugar is already removed: `x += e` (and the other `op=`) is an `AssignmentStatement` of
  `x = x + e` (with a separate copy of the `x` nodes); a direct application `C.apply(args)` of a
  parser/control type gets an implicit `Instantiation` named `C_inst` (then `C_inst_1`, ...) appended
  to the enclosing parser's/control's `locals`, and the call applies it by name (as p4c does); a cast
  of an initializer `(S){...}` is replaced by the initializer itself, typed S.
- Loops (P4_16 v1.2.4) are kept as `ForStatement` / `ForInStatement` with `BreakStatement` and
  `ContinueStatement`; a back end that cannot lower them must raise `UnsupportedError`.
- A call of core.p4's `static_assert` has already been evaluated (an error if false); its
  `MethodCallExpression.const_value` is True and it needs no code.
- Every `TypeRef` has `.resolved` (a `types.Type`); declarations of types have `.type`.
- `ConstDecl.const_value`, `TableDecl.size_value`, `Slice.hi_value/lo_value`, enum member values and all
  widths are evaluated.

Nodes compare by identity (eq=False) so they can be dictionary keys. `loc` is the `SourceLoc` of the
node's first token in the original file (None only for nodes the compiler synthesises).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from p4kit.compiler.diagnostics import SourceLoc

if TYPE_CHECKING:
    from p4kit.compiler import types as T  # noqa: N812


@dataclass(eq=False)
class Node:
    loc: SourceLoc | None = field(default=None, kw_only=True)


# ---------------------------------------------------------------------------------------------------
# Annotations


@dataclass(eq=False)
class Annotation(Node):
    """`@name`, `@name(body)` or `@name[k=v, ...]`.

    `body` is the raw source text between the parentheses (or brackets), e.g. '"ingress.t"', '1',
    'field_list(1)'; empty when there were none. `args` holds the body parsed as a comma-separated list
    of expressions when it is one (for @name, @id, @priority, @field_list, @controller_header ...),
    else None. `kv` holds the pairs of a structured annotation `@a[k=v]`, else None. These expressions
    are syntax only: the checker does not resolve or type them (their `.type` stays None).
    """

    name: str
    body: str = ""
    args: list[Expression] | None = None
    kv: dict[str, Expression] | None = None
    structured: bool = False


def find_annotation(annotations: list[Annotation], name: str) -> Annotation | None:
    """The first annotation called `name`, or None."""
    for a in annotations:
        if a.name == name:
            return a
    return None


def annotation_string(annotations: list[Annotation], name: str) -> str | None:
    """The string argument of `@name("...")`-style annotations (e.g. @name, @controller_header)."""
    a = find_annotation(annotations, name)
    if a is None or not a.args:
        return None
    arg = a.args[0]
    if isinstance(arg, StringLiteral):
        return arg.value
    return None


# ---------------------------------------------------------------------------------------------------
# Type references (syntax of types)


@dataclass(eq=False)
class TypeRef(Node):
    """A type as written. `resolved` is filled in by the checker."""

    resolved: T.Type | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class BitsTypeRef(TypeRef):
    """`bit<W>`, `int<W>` (`width` is an expression, often a constant), `bit` (= bit<1>)."""

    width: Expression | None
    signed: bool = False


@dataclass(eq=False)
class VarbitTypeRef(TypeRef):
    width: Expression


@dataclass(eq=False)
class PrimTypeRef(TypeRef):
    """A keyword type: "bool", "error", "string", "void", "match_kind", "int" (unsized), "_"."""

    name: str


@dataclass(eq=False)
class NamedTypeRef(TypeRef):
    """A type name (`headers_t`, `T`, `.T` when `is_global`). `decl` is set by the checker."""

    name: str
    is_global: bool = False
    decl: Any = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class SpecializedTypeRef(TypeRef):
    """`Base<args>`: `register<bit<32>>`, `S<bit<8>>`."""

    base: NamedTypeRef
    args: list[TypeRef] = field(default_factory=list)


@dataclass(eq=False)
class StackTypeRef(TypeRef):
    """`elem[size]`: a header stack."""

    elem: TypeRef
    size: Expression


@dataclass(eq=False)
class TupleTypeRef(TypeRef):
    """`tuple<A, B>`."""

    args: list[TypeRef] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------------
# Expressions


@dataclass(eq=False)
class Expression(Node):
    """Base of expressions: `type` and `const_value` are set by the checker (see module docstring)."""

    type: T.Type | None = field(default=None, kw_only=True, repr=False)
    const_value: Any = field(default=None, kw_only=True, repr=False)

    @property
    def is_const(self) -> bool:
        return self.const_value is not None


@dataclass(eq=False)
class Constant(Expression):
    """An integer literal. `width`/`signed` are from the literal's prefix (`8w5`, `8s-1`), None/False
    for unsized literals; `base` is the radix written (2, 8, 10, 16) so the text can be reproduced."""

    value: int
    width: int | None = None
    signed: bool = False
    base: int = 10


@dataclass(eq=False)
class BoolLiteral(Expression):
    value: bool


@dataclass(eq=False)
class StringLiteral(Expression):
    value: str


@dataclass(eq=False)
class PathExpression(Expression):
    """A name used as a value (`hdr`, `.x` when `is_global`); `decl` is what it denotes."""

    name: str
    is_global: bool = False
    decl: Any = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class TypeNameExpression(Expression):
    """A type used in value position: `E` in `E.A`, `error` in `error.NoError`, `H` in
    `H.minSizeInBits()`. Its `.type` is `TypeOfType(resolved type)`."""

    type_ref: TypeRef


@dataclass(eq=False)
class Member(Expression):
    """`expr.member`. `kind` (set by the checker) is one of "field", "stack_elem_prop", "enum_member",
    "error_member", "method", "apply_result"; `decl` is e.g. the `MethodDecl` of an
    extern method."""

    expr: Expression
    member: str
    kind: str = field(default="", kw_only=True)
    decl: Any = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class ArrayIndex(Expression):
    """`stack[index]` (also `tuple[index]` with a constant index)."""

    expr: Expression
    index: Expression


@dataclass(eq=False)
class Slice(Expression):
    """`expr[hi:lo]`: bits hi down to lo; `hi_value`/`lo_value` are the evaluated bounds."""

    expr: Expression
    hi: Expression
    lo: Expression
    hi_value: int = field(default=0, kw_only=True)
    lo_value: int = field(default=0, kw_only=True)


@dataclass(eq=False)
class UnaryOp(Expression):
    """`op` is "!", "~", "-" (negation) or "+"."""

    op: str
    expr: Expression


@dataclass(eq=False)
class BinaryOp(Expression):
    """`op` is one of * / % + - |+| |-| << >> <= >= < > == != & ^ | && || ++ and, in keysets only,
    "&&&" (value and mask) and ".." (range)."""

    op: str
    left: Expression
    right: Expression


@dataclass(eq=False)
class Mux(Expression):
    """`cond ? then : else_`."""

    cond: Expression
    then: Expression
    else_: Expression


@dataclass(eq=False)
class Cast(Expression):
    """`(type) expr`."""

    type_ref: TypeRef
    expr: Expression


@dataclass(eq=False)
class Argument(Node):
    """An argument of a call; `name` is set for named arguments (`f(x = 1)`)."""

    value: Expression
    name: str | None = None


@dataclass(eq=False)
class CallInfo:
    """What a `MethodCallExpression` calls, filled in by the checker.

    kind:
      "action"           decl: ActionDecl                       (also direct calls in control bodies)
      "function"         decl: FunctionDecl
      "extern_function"  decl: ExternFunctionDecl               (mark_to_drop, hash, verify_checksum, ...)
      "extern_method"    decl: MethodDecl, extern: ExternDecl, obj: the instance expression
                         (`reg` in `reg.read(...)`, `pkt` in `pkt.extract(...)`)
      "builtin"          name: isValid | setValid | setInvalid | push_front | pop_front |
                         minSizeInBits | minSizeInBytes | maxSizeInBits | maxSizeInBytes ;
                         obj: the header / union / stack / type expression
      "table_apply"      decl: TableDecl, obj: the table expression
      "control_apply"    decl: the ControlDecl (or Instantiation of a control), obj: instance expression
      "parser_apply"     decl: the ParserDecl (or Instantiation), obj: instance expression
      "constructor"      (only in `Instantiation.ctor_call` / `ConstructorCallExpression.ctor_call`)
                         decl: the extern constructor MethodDecl (extern: the ExternDecl) or the
                         ParserDecl/ControlDecl/PackageTypeDecl being instantiated
    `args` are the call's argument expressions in *parameter* order, one per parameter of `params`
    (None where an optional or defaulted parameter was not given; the default is `params[i].decl.default`).
    `params` are the parameters with types after substitution of `type_bindings`.
    """

    kind: str
    decl: Any = None
    extern: Any = None
    obj: Expression | None = None
    name: str = ""
    params: list[T.ParamInfo] = field(default_factory=list)
    args: list[Expression | None] = field(default_factory=list)
    type_bindings: dict[str, T.Type] = field(default_factory=dict)


@dataclass(eq=False)
class MethodCallExpression(Expression):
    """`method<type_args>(args)`; `method` is a PathExpression or Member. See `CallInfo`."""

    method: Expression
    type_args: list[TypeRef] = field(default_factory=list)
    args: list[Argument] = field(default_factory=list)
    call: CallInfo | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class ConstructorCallExpression(Expression):
    """`T(args)` or `T<A>(args)`: an anonymous instance (e.g. `MyIngress()` in `V1Switch(...) main;`).
    `ctor` (set by the checker) is the extern constructor `MethodDecl` when T is an extern;
    `ctor_call` matches the arguments to the constructor parameters (see `Instantiation`)."""

    type_ref: TypeRef
    args: list[Argument] = field(default_factory=list)
    ctor: Any = field(default=None, kw_only=True, repr=False)
    ctor_call: CallInfo | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class ListExpression(Expression):
    """`{a, b, c}`: a tuple/list, or a struct/header initializer by position when its context says so.
    `target_type` is set by the checker when the context converted it to a struct or header."""

    elems: list[Expression] = field(default_factory=list)
    target_type: Any = field(default=None, kw_only=True, repr=False)
    dots: bool = field(default=False, kw_only=True)  # ends with `...`: the other fields get defaults


@dataclass(eq=False)
class NamedExpression(Node):
    name: str
    value: Expression


@dataclass(eq=False)
class StructExpression(Expression):
    """`T {f = e, ...}` (type_ref set) or `{f = e, ...}` (type_ref None; typed by its context)."""

    type_ref: TypeRef | None
    fields: list[NamedExpression] = field(default_factory=list)
    dots: bool = field(default=False, kw_only=True)  # ends with `...`: the other fields get defaults


@dataclass(eq=False)
class DotsExpression(Expression):
    """`...` as a value: the default value of the type its context expects (0, false, the first enum
    member, an invalid header; for a struct, each field's default)."""


@dataclass(eq=False)
class DefaultExpression(Expression):
    """`default` in a keyset, or `_` (is_dontcare) in a keyset or as a don't-care argument."""

    is_dontcare: bool = False


@dataclass(eq=False)
class ThisExpression(Expression):
    """`this` inside the initializer of an extern instance's abstract methods."""


@dataclass(eq=False)
class InvalidHeaderExpression(Expression):
    """`{#}`: an invalid header or header union value."""


@dataclass(eq=False)
class SelectCase(Node):
    """`keyset : state;` (`keyset` is a DefaultExpression, a single expression, a `&&&`/`..` BinaryOp,
    a value_set name, or a ListExpression of those for tuple keys)."""

    keyset: Expression
    state: PathExpression
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class SelectExpression(Expression):
    """`select(keys) { cases }` (only as the target of `transition`)."""

    keys: list[Expression] = field(default_factory=list)
    cases: list[SelectCase] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------------
# Statements


@dataclass(eq=False)
class Statement(Node):
    pass


@dataclass(eq=False)
class BlockStatement(Statement):
    stmts: list[Statement | Declaration] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class AssignmentStatement(Statement):
    lhs: Expression
    rhs: Expression


@dataclass(eq=False)
class MethodCallStatement(Statement):
    call: MethodCallExpression


@dataclass(eq=False)
class IfStatement(Statement):
    cond: Expression
    then: Statement
    else_: Statement | None = None


@dataclass(eq=False)
class SwitchCase(Node):
    """One label of a switch. `label` is a DefaultExpression for `default`, else an expression (an action
    name for `switch (t.apply().action_run)`, else a constant). `body` is None for a fall-through label
    (`a:` followed by another label)."""

    label: Expression
    body: BlockStatement | None = None


@dataclass(eq=False)
class SwitchStatement(Statement):
    expr: Expression
    cases: list[SwitchCase] = field(default_factory=list)


@dataclass(eq=False)
class ExitStatement(Statement):
    pass


@dataclass(eq=False)
class ReturnStatement(Statement):
    expr: Expression | None = None


@dataclass(eq=False)
class EmptyStatement(Statement):
    pass


@dataclass(eq=False)
class ForStatement(Statement):
    """`for (init; cond; updates) body` (P4_16 v1.2.4). `init` holds variable declarations and
    assignment/call statements; `cond` is None when omitted (loop until `break`)."""

    init: list[Statement | Declaration] = field(default_factory=list)
    cond: Expression | None = None
    updates: list[Statement] = field(default_factory=list)
    body: Statement = field(default_factory=lambda: BlockStatement())
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class ForInStatement(Statement):
    """`for (T v in lo .. hi) body` or `for (T v in collection) body` (P4_16 v1.2.4): `var` is the loop
    variable's declaration; `collection` is a `..` BinaryOp (a range, bounds included) or another
    expression (a header stack or list)."""

    var: VariableDecl
    collection: Expression
    body: Statement = field(default_factory=lambda: BlockStatement())
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class BreakStatement(Statement):
    """`break;` inside a loop."""


@dataclass(eq=False)
class ContinueStatement(Statement):
    """`continue;` inside a loop."""


# ---------------------------------------------------------------------------------------------------
# Declarations


@dataclass(eq=False)
class Declaration(Node):
    """Base of everything with a name. `annotations` as written."""

    name: str
    annotations: list[Annotation] = field(default_factory=list, kw_only=True)

    def control_plane_name(self) -> str:
        """`@name("...")` if present, else the declared name (not yet prefixed by the enclosing
        control; the back end qualifies it)."""
        n = annotation_string(self.annotations, "name")
        return n if n is not None else self.name


@dataclass(eq=False)
class Parameter(Declaration):
    """`direction` is "", "in", "out" or "inout". `type` (set by checker) is the resolved type."""

    direction: str
    type_ref: TypeRef
    default: Expression | None = None
    type: T.Type | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class StructFieldDecl(Declaration):
    type_ref: TypeRef


@dataclass(eq=False)
class StructLikeDecl(Declaration):
    """`header`, `header_union` or `struct` (`kind`); `type` is the resolved StructLikeType (for a
    generic struct, the unspecialised one with TypeVars)."""

    kind: str
    fields: list[StructFieldDecl] = field(default_factory=list)
    type_params: list[str] = field(default_factory=list)
    type: T.Type | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class EnumMemberDecl(Node):
    name: str
    value: Expression | None = None
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class EnumDecl(Declaration):
    """`enum E {...}` (underlying None) or `enum bit<8> E {A = 1}`."""

    members: list[EnumMemberDecl] = field(default_factory=list)
    underlying: TypeRef | None = None
    type: T.Type | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class ErrorDecl(Node):
    """`error { A, B }` (may appear several times; all add to the one `error` type)."""

    members: list[str] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)
    member_locs: list[SourceLoc] = field(default_factory=list, kw_only=True, repr=False)


@dataclass(eq=False)
class MatchKindDecl(Node):
    members: list[str] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)
    member_locs: list[SourceLoc] = field(default_factory=list, kw_only=True, repr=False)


@dataclass(eq=False)
class TypedefDecl(Declaration):
    """`typedef T N;` (is_newtype False: an alias) or `type T N;` (a NewType)."""

    type_ref: TypeRef
    is_newtype: bool = False
    type: T.Type | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class ConstDecl(Declaration):
    """`const T n = e;`: `const_value` is the folded value (int/bool, or None for a constant struct,
    tuple or string value, whose `value` expression is then constant)."""

    type_ref: TypeRef
    value: Expression
    type: T.Type | None = field(default=None, kw_only=True, repr=False)
    const_value: Any = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class VariableDecl(Declaration):
    """`T n;` or `T n = e;` (a local variable in a control, parser, action or function)."""

    type_ref: TypeRef
    init: Expression | None = None
    type: T.Type | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class Instantiation(Declaration):
    """`T(args) n;` e.g. `register<bit<32>>(1024) r;`, `V1Switch(...) main;`. `initializer` holds the
    implementations of abstract extern methods (`T(...) n = { void f() {...} };`), else None.
    `type` (set by checker) is the instance's type (ExternType, ControlType, ParserType, PackageType);
    `ctor` is the extern constructor MethodDecl that matched, when the type is an extern.
    `ctor_call` (kind "constructor") matches the arguments to the constructor parameters (for a parser
    or control: its constructor parameters, whose `Parameter` nodes `PathExpression.decl` points to
    inside the body; for a package: its parameters), in parameter order."""

    type_ref: TypeRef
    args: list[Argument] = field(default_factory=list)
    initializer: list[Declaration] | None = None
    type: T.Type | None = field(default=None, kw_only=True, repr=False)
    ctor: Any = field(default=None, kw_only=True, repr=False)
    ctor_call: CallInfo | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class MethodDecl(Declaration):
    """A method prototype in an extern. A constructor has `is_constructor` (name == extern name, no
    return type); `abstract` methods are implemented by instances' initializers."""

    return_type: TypeRef | None
    params: list[Parameter] = field(default_factory=list)
    type_params: list[str] = field(default_factory=list)
    is_constructor: bool = False
    is_abstract: bool = False
    type: T.Type | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class ExternDecl(Declaration):
    """`extern Name<T...> { methods }`."""

    type_params: list[str] = field(default_factory=list)
    methods: list[MethodDecl] = field(default_factory=list)

    def constructors(self) -> list[MethodDecl]:
        return [m for m in self.methods if m.is_constructor]

    def methods_named(self, name: str) -> list[MethodDecl]:
        return [m for m in self.methods if m.name == name and not m.is_constructor]


@dataclass(eq=False)
class ExternFunctionDecl(Declaration):
    """`extern R f<T>(params);`"""

    return_type: TypeRef
    params: list[Parameter] = field(default_factory=list)
    type_params: list[str] = field(default_factory=list)
    type: T.Type | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class FunctionDecl(Declaration):
    """`R f<T>(params) { body }` (a P4 function, or an abstract method's implementation)."""

    return_type: TypeRef
    params: list[Parameter] = field(default_factory=list)
    type_params: list[str] = field(default_factory=list)
    body: BlockStatement = field(default_factory=BlockStatement)
    type: T.Type | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class ActionDecl(Declaration):
    """`action a(params) { body }`: parameters with a direction come from the caller; directionless ones
    are action data from the control plane (or the caller for direct calls)."""

    params: list[Parameter] = field(default_factory=list)
    body: BlockStatement = field(default_factory=BlockStatement)
    type: T.Type | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class KeyElement(Node):
    """`expr : match_kind @annotations;` in a table key."""

    expr: Expression
    match_kind: str
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class ActionRef(Node):
    """An entry of `actions = {...}`, a `default_action`, or an entry's action: `expr` is the action's
    name (PathExpression) and `args` its arguments (for a default/entry action, or bound arguments).
    `call` (set by checker) is the `MethodCallExpression` form when arguments were given, else None;
    `call.call.params`/`.args` cover only the parameters these arguments bind: in an `actions` list the
    leading parameters with a direction, in `default_action`/entries all parameters or the trailing
    directionless ones (the action data)."""

    expr: PathExpression
    args: list[Argument] | None = None
    annotations: list[Annotation] = field(default_factory=list)
    call: MethodCallExpression | None = field(default=None, kw_only=True, repr=False)

    @property
    def action(self) -> Any:
        """The ActionDecl (after checking)."""
        return self.expr.decl


@dataclass(eq=False)
class Entry(Node):
    """A table entry: `keyset : action(args);` with an optional `priority = N :` prefix or
    `@priority(N)` annotation (`priority_value` is the evaluated priority or None)."""

    keys: list[Expression]
    action: ActionRef
    priority: Expression | None = None
    is_const: bool = False
    annotations: list[Annotation] = field(default_factory=list)
    priority_value: int | None = field(default=None, kw_only=True)
    priority_is_annotation: bool = field(default=False, kw_only=True)  # from @priority(N)


@dataclass(eq=False)
class TableProperty(Node):
    """One property of a table as written: `value` is a list of KeyElement (key), of ActionRef (actions),
    of Entry (entries), an ActionRef (default_action) or an Expression (everything else)."""

    name: str
    value: Any
    is_const: bool = False
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class TableDecl(Declaration):
    """A table. The well-known properties are also available as fields: `keys`, `actions`,
    `default_action`, `entries`; `size_value` is the evaluated `size` (None when absent).
    `properties` keeps all of them in source order, including implementation, counters, meters,
    support_timeout and target-specific ones (their values are checked expressions; the value of a
    property unknown to P4/v1model is checked only when that succeeds, else left untyped)."""

    properties: list[TableProperty] = field(default_factory=list)
    keys: list[KeyElement] = field(default_factory=list)
    actions: list[ActionRef] = field(default_factory=list)
    default_action: ActionRef | None = None
    default_action_const: bool = False
    entries: list[Entry] | None = None
    entries_const: bool = False
    size_value: int | None = field(default=None, kw_only=True)

    def property(self, name: str) -> TableProperty | None:
        for p in self.properties:
            if p.name == name:
                return p
        return None


@dataclass(eq=False)
class ValueSetDecl(Declaration):
    """`value_set<T>(size) name;`"""

    elem_type: TypeRef
    size: Expression
    size_value: int = field(default=0, kw_only=True)


@dataclass(eq=False)
class ParserState(Declaration):
    """`state name { components; transition ... }`; `transition` is a PathExpression (next state),
    a SelectExpression, or None (no transition: reject, as p4c does)."""

    components: list[Statement | Declaration] = field(default_factory=list)
    transition: Expression | None = None


@dataclass(eq=False)
class ParserTypeDecl(Declaration):
    """`parser P<H>(packet_in b, out H h);` (a type, no body)."""

    params: list[Parameter] = field(default_factory=list)
    type_params: list[str] = field(default_factory=list)
    type: T.Type | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class ControlTypeDecl(Declaration):
    """`control C<H>(inout H h);` (a type, no body)."""

    params: list[Parameter] = field(default_factory=list)
    type_params: list[str] = field(default_factory=list)
    type: T.Type | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class PackageTypeDecl(Declaration):
    """`package V1Switch<H, M>(Parser<H, M> p, ...);`"""

    params: list[Parameter] = field(default_factory=list)
    type_params: list[str] = field(default_factory=list)
    type: T.Type | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class ParserDecl(Declaration):
    """A parser with a body: `locals` are its local declarations (variables, constants, instances,
    value sets), `states` its states (`start` first as written; `accept`/`reject` are implicit)."""

    params: list[Parameter] = field(default_factory=list)
    type_params: list[str] = field(default_factory=list)
    ctor_params: list[Parameter] = field(default_factory=list)
    locals: list[Declaration] = field(default_factory=list)
    states: list[ParserState] = field(default_factory=list)
    type: T.Type | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class ControlDecl(Declaration):
    """A control with a body: `locals` are actions, tables, variables, constants, instances and
    functions declared before `apply`; `body` is the apply block."""

    params: list[Parameter] = field(default_factory=list)
    type_params: list[str] = field(default_factory=list)
    ctor_params: list[Parameter] = field(default_factory=list)
    locals: list[Declaration] = field(default_factory=list)
    body: BlockStatement = field(default_factory=BlockStatement)
    type: T.Type | None = field(default=None, kw_only=True, repr=False)


@dataclass(eq=False)
class Program(Node):
    """All top-level declarations in order, those of core.p4 and v1model.p4 included.

    After checking: `error_type` and `match_kind_type` are the program's error and match_kind types,
    `main` is the top-level `Instantiation` named "main" (None when absent)."""

    decls: list[Any] = field(default_factory=list)
    error_type: Any = field(default=None, kw_only=True, repr=False)
    match_kind_type: Any = field(default=None, kw_only=True, repr=False)
    main: Instantiation | None = field(default=None, kw_only=True, repr=False)

    def find(self, name: str) -> Any:
        """The top-level declaration called `name` (the last one), or None."""
        found = None
        for d in self.decls:
            if isinstance(d, Declaration) and d.name == name:
                found = d
        return found
