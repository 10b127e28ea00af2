"""Where P4 values live once the program is flattened for BMv2.

BMv2 knows only header instances (with fields), header stacks, header unions and the `scalars`
metadata header that p4c puts every local variable in. A P4 struct therefore becomes a *tree* of
locations (`StructLoc`) whose leaves are fields or headers. Binding names to these locations while the
back end walks the program is what inlines controls, parsers, actions and functions: a parameter is
simply bound to the location (or, for `in` parameters, the value) of its argument.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4kit.compiler import types as T  # noqa: N812
from p4kit.compiler.backend import values as V  # noqa: N812
from p4kit.compiler.backend.bmv2json import Bmv2Json

JSON = dict[str, Any]


class Loc:
    """A place a value lives in (or, for `ValueLoc`, a value itself)."""

    type: T.Type


@dataclass(eq=False)
class FieldLoc(Loc):
    """A scalar field of a header instance (including `scalars` and `standard_metadata`)."""

    header: str
    name: str
    type: T.Type

    def json(self) -> JSON:
        return V.field(self.header, self.name)


@dataclass(eq=False)
class HeaderLoc(Loc):
    name: str
    type: T.Type
    fields: dict[str, FieldLoc] = field(default_factory=dict)

    def json(self) -> JSON:
        return V.header(self.name)

    def valid(self) -> FieldLoc:
        return FieldLoc(self.name, "$valid$", T.BitsType(1))


@dataclass(eq=False)
class UnionLoc(Loc):
    name: str
    type: T.HeaderUnionType
    members: dict[str, HeaderLoc] = field(default_factory=dict)

    def json(self) -> JSON:
        return {"type": "header_union", "value": self.name}


@dataclass(eq=False)
class StackLoc(Loc):
    name: str
    type: T.HeaderStackType
    elems: list[Loc] = field(default_factory=list)  # HeaderLoc or UnionLoc
    is_union_stack: bool = False

    def json(self) -> JSON:
        kind = "header_union_stack" if self.is_union_stack else "header_stack"
        return {"type": kind, "value": self.name}


@dataclass(eq=False)
class DynHeaderLoc(Loc):
    """`stack[i]` with an index known only at run time: BMv2's `dereference_header_stack`."""

    stack: StackLoc
    index: JSON
    type: T.Type

    def json(self) -> JSON:
        return V.expr("dereference_header_stack", self.stack.json(), self.index)


@dataclass(eq=False)
class DynFieldLoc(Loc):
    """A field of a run-time-indexed stack element: `access_field` with the field's offset."""

    header: DynHeaderLoc
    offset: int
    type: T.Type

    def json(self) -> JSON:
        return V.expr("access_field", self.header.json(), self.offset)  # type: ignore[arg-type]


@dataclass(eq=False)
class StructLoc(Loc):
    type: T.Type
    fields: dict[str, Loc] = field(default_factory=dict)


@dataclass(eq=False)
class ValueLoc(Loc):
    """A read-only value: an action's runtime data, a constant, or an `in` argument bound by value."""

    value: JSON
    type: T.Type

    def json(self) -> JSON:
        return self.value


@dataclass(eq=False)
class ExternLoc(Loc):
    """An extern instance (register, counter, meter, hash, action profile, value set, ...)."""

    name: str  # fully qualified control-plane name
    kind: str  # extern type name, e.g. "register"
    type: T.Type
    args: list[Any] = field(default_factory=list)  # constructor arguments (AST expressions)
    decl: Any = None  # the ast.Instantiation
    annotations: list[Any] = field(default_factory=list)


@dataclass(eq=False)
class TableLoc(Loc):
    """A table declaration bound in a control instance, with the qualified name it gets."""

    name: str
    decl: Any
    type: T.Type
    scope: Any = None  # the control-instance scope whose names the table's expressions use


@dataclass(eq=False)
class ActionLoc(Loc):
    name: str
    decl: Any
    type: T.Type
    scope: Any = None


# ---------------------------------------------------------------------------------------------------


def bits(t: T.Type) -> int:
    """Width in BMv2 of a value of type `t`: like types.bit_width, plus 32 bits for error and plain
    enum values (which BMv2 stores as numbers)."""
    u = T.unwrap(t)
    if isinstance(u, (T.ErrorType, T.EnumType)):
        return 32
    if isinstance(u, T.StructLikeType):
        return sum(bits(f.type) for f in u.fields)
    return T.bit_width(u)


def field_width(t: T.Type) -> int | str:
    """Width of a field as written in header_types: varbit fields are "*", error and plain enums 32."""
    t = T.unwrap(t)
    if isinstance(t, T.VarbitType):
        return "*"
    if isinstance(t, (T.ErrorType, T.EnumType)):
        return 32
    return T.bit_width(t)


def header_leaves(t: T.StructLikeType) -> list[tuple[str, T.Type]]:
    """The fields of a header as BMv2 stores them: a struct-typed field is flattened into its leaves,
    named as p4c's FlattenHeaders names them (`_` + the path joined by `_` + a running index)."""
    out: list[tuple[str, T.Type]] = []

    def walk(path: list[str], ft: T.Type, top: bool) -> None:
        st = T.unwrap(ft)
        if isinstance(st, T.StructType):
            for g in st.fields:
                walk([*path, g.name], g.type, False)
            return
        out.append((path[0] if top else "_" + "_".join(path) + str(len(out)), ft))

    for f in t.fields:
        walk([f.name], f.type, True)
    return out


def is_signed(t: T.Type) -> bool:
    t = T.unwrap(t)
    return isinstance(t, T.BitsType) and t.signed


@dataclass
class Layout:
    """Creates header instances, stacks, unions and scalars fields for values of P4 types."""

    out: Bmv2Json
    scalars_fields: list[list[Any]]
    header_type_of: dict[int, str] = field(default_factory=dict)  # id(HeaderType) -> JSON type name
    scalar_names: set[str] = field(default_factory=set)

    def _type_key(self, t: T.StructLikeType) -> Any:
        """One JSON header type per declaration, and per type arguments of a generic one."""
        base = id(t.decl) if t.decl is not None else id(t)
        return (base, tuple(str(a) for a in t.type_args)) if t.type_args else base

    def _type_name(self, t: T.StructLikeType) -> str:
        """The name asked for: the declaration's; a specialisation of a generic type gets the
        declaration's name with `_0`, `_1`, ... (p4c's SpecializeGenericTypes names them so)."""
        if t.type_args:
            self.out.header_type_names.reserve(t.name)
        return t.name

    def header_type_name(self, t: T.StructLikeType) -> str:
        key = self._type_key(t)
        if key in self.header_type_of:
            return self.header_type_of[key]
        fields: list[list[Any]] = []
        extra: JSON = {}
        for name, ftype in header_leaves(t):
            fields.append([name, field_width(ftype), is_signed(ftype)])
        for f in t.fields:
            w = field_width(f.type)
            if w == "*":
                vt = T.unwrap(f.type)
                assert isinstance(vt, T.VarbitType)
                fixed = sum(bits(g.type) for g in t.fields if g is not f)
                extra["max_length"] = (fixed + vt.max_width + 7) // 8
        name = self.out.add_header_type(self._type_name(t), fields, **extra)
        self.header_type_of[key] = name
        return name

    def metadata_type_name(self, t: T.StructType) -> str:
        """A struct nested in metadata becomes a metadata header; p4c pads it to whole bytes."""
        key = self._type_key(t)
        if key in self.header_type_of:
            return self.header_type_of[key]
        fields: list[list[Any]] = [[f.name, field_width(f.type), is_signed(f.type)] for f in t.fields]
        total = sum(int(f[1]) for f in fields)
        if total % 8:
            fields.append(["_padding", 8 - total % 8, False])
        name = self.out.add_header_type(self._type_name(t), fields)
        self.header_type_of[key] = name
        return name

    def scalar(self, base: str, t: T.Type) -> FieldLoc:
        name = base
        n = 0
        while name in self.scalar_names:
            name = f"{base}_{n}"
            n += 1
        self.scalar_names.add(name)
        self.scalars_fields.append([name, field_width(t), is_signed(t)])
        return FieldLoc("scalars", name, t)

    def header(self, name: str, t: T.StructLikeType, metadata: bool = False) -> HeaderLoc:
        tname = self.header_type_name(t)
        hname, _ = self.out.add_header(name, tname, metadata)
        loc = HeaderLoc(hname, t)
        leaves = iter(header_leaves(t))

        def place(ft: T.Type) -> Loc:
            st = T.unwrap(ft)
            if isinstance(st, T.StructType):
                sub = StructLoc(st)
                for g in st.fields:
                    sub.fields[g.name] = place(g.type)
                return sub
            leaf, lt = next(leaves)
            return FieldLoc(hname, leaf, lt)

        for f in t.fields:
            loc.fields[f.name] = place(f.type)
        return loc

    def materialize(self, name: str, t: T.Type, metadata: bool = False) -> Loc:
        """Storage for a value of type `t` named `name` (a parameter or a local variable).

        Headers, stacks and unions get their own instances; scalars go into `scalars`; a struct becomes a
        tree. Inside metadata, a struct of scalars becomes one metadata header (as p4c does for nested
        metadata structs)."""
        t = T.unwrap(t) if isinstance(t, T.NewType) else t
        if isinstance(t, T.HeaderType):
            return self.header(name, t, metadata=False)
        if isinstance(t, T.HeaderUnionType):
            return self._union(name, t)
        if isinstance(t, T.HeaderStackType):
            return self._stack(name, t)
        if isinstance(t, T.StructType):
            loc = StructLoc(t)
            for f in t.fields:
                loc.fields[f.name] = self.materialize(f"{name}.{f.name}", f.type, metadata)
            return loc
        if isinstance(t, T.TupleType):
            loc = StructLoc(t)
            for i, et in enumerate(t.elems):
                loc.fields[str(i)] = self.materialize(f"{name}.f{i}", et, metadata)
            return loc
        return self.scalar(name, t)

    def _union(self, name: str, t: T.HeaderUnionType) -> UnionLoc:
        members: list[list[str]] = []
        loc = UnionLoc(name, t)
        ids: list[int] = []
        for f in t.fields:
            ft = T.unwrap(f.type)
            assert isinstance(ft, T.HeaderType)
            h = self.header(f"{name}.{f.name}", ft)
            loc.members[f.name] = h
            ids.append(self.out.header(h.name)["id"])
            members.append([f.name, self.header_type_name(ft)])
        utype = self.out.add_union_type(str(t), members)
        self.out.add_union(name, utype, ids)
        return loc

    def _stack(self, name: str, t: T.HeaderStackType) -> StackLoc:
        elem = T.unwrap(t.elem)
        loc = StackLoc(name, t)
        if isinstance(elem, T.HeaderUnionType):
            loc.is_union_stack = True
            uids: list[int] = []
            for i in range(t.size):
                u = self._union(f"{name}[{i}]", elem)
                loc.elems.append(u)
                uids.append(len(self.out.header_unions) - 1)
            self.out.add_union_stack(name, str(elem), uids)
            return loc
        assert isinstance(elem, T.HeaderType)
        ids = []
        for i in range(t.size):
            h = self.header(f"{name}[{i}]", elem)
            loc.elems.append(h)
            ids.append(self.out.header(h.name)["id"])
        self.out.add_header_stack(name, self.header_type_name(elem), ids)
        return loc
