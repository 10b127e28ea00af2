"""Shared state of one back-end run: the JSON being built, the storage layout, the control-plane model,
and the scopes that bind declarations to storage while controls, parsers and actions are inlined."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4kit.compiler import ast
from p4kit.compiler import types as T  # noqa: N812
from p4kit.compiler.backend.bmv2json import Bmv2Json
from p4kit.compiler.backend.storage import Layout, Loc, bits
from p4kit.compiler.cpmodel import ControlPlaneModel, CPAnnotation
from p4kit.compiler.diagnostics import CompileError, SourceLoc, UnsupportedError, source_line


@dataclass(eq=False)
class Scope:
    """Binds declarations (by identity) to storage. One scope per inlined instance of a control, parser,
    action or function; lookups fall back to the parent (the enclosing instance, then the program).

    `prefix` is the control-plane name prefix of the enclosing control/parser instance ("" at the top).
    """

    parent: Scope | None = None
    prefix: str = ""
    bindings: dict[int, Loc] = field(default_factory=dict)
    keep: list[Any] = field(default_factory=list)  # keeps bound declarations alive (ids stay unique)

    def bind(self, decl: Any, loc: Loc) -> None:
        self.bindings[id(decl)] = loc
        self.keep.append(decl)

    def lookup(self, decl: Any) -> Loc | None:
        s: Scope | None = self
        while s is not None:
            loc = s.bindings.get(id(decl))
            if loc is not None:
                return loc
            s = s.parent
        return None

    def child(self, prefix: str | None = None) -> Scope:
        return Scope(parent=self, prefix=self.prefix if prefix is None else prefix)

    def qualify(self, decl: ast.Declaration) -> str:
        """The control-plane name of an object declared in this scope: `@name` applies; a leading dot
        makes it absolute; otherwise the enclosing instance's name is prepended (p4c's rule)."""
        name = decl.control_plane_name()
        if name.startswith("."):
            return name[1:]
        return f"{self.prefix}.{name}" if self.prefix else name


@dataclass
class Ctx:
    """Everything the lowering stages share."""

    program: ast.Program
    out: Bmv2Json
    layout: Layout
    cp: ControlPlaneModel
    errors: dict[str, int] = field(default_factory=dict)
    # (id(ActionDecl), instance prefix) -> JSON action id; filled when an action is first lowered
    action_ids: dict[tuple[int, str], int] = field(default_factory=dict)
    action_names: dict[int, str] = field(default_factory=dict)  # JSON action id -> name
    cp_actions: set[str] = field(default_factory=set)
    temp_count: int = 0
    field_lists: dict[int, int] = field(default_factory=dict)  # @field_list index -> JSON id
    std_meta: Any = None  # HeaderLoc of standard_metadata
    meta_loc: Any = None  # storage of the user metadata (for @field_list)
    direct_meter_targets: dict[str, list[Any]] = field(default_factory=dict)
    emit_externs: bool = False  # p4c's --emit-externs: the program's own extern functions as primitives

    def temp(self, t: T.Type, base: str = "tmp") -> Loc:
        """A fresh compiler temporary (a `scalars` field, or a header instance for header types)."""
        name = base
        if base == "tmp":
            name = "tmp" if self.temp_count == 0 else f"tmp_{self.temp_count - 1}"
            self.temp_count += 1
        return self.layout.materialize(name, t)

    def error_value(self, name: str, where: SourceLoc | None) -> int:
        if name not in self.errors:
            raise CompileError(f"unknown error constant error.{name}", where)
        return self.errors[name]

    def add_cp_action(self, name: str, decl: ast.ActionDecl | None, params: list[Any], hidden: bool) -> None:
        from p4kit.compiler.cpmodel import CPAction, CPParam

        if name in self.cp_actions:
            return
        self.cp_actions.add(name)
        annotations = cp_annotations(decl.annotations if decl is not None else [])
        if hidden and not any(a.name == "hidden" for a in annotations):
            annotations.append(CPAnnotation("hidden"))
        cparams = [CPParam(p.name, bits(p.type), cp_annotations(p.annotations)) for p in params]
        self.cp.actions.append(CPAction(name, cparams, annotations))


def cp_annotations(annotations: list[ast.Annotation]) -> list[CPAnnotation]:
    """Annotations as P4Info keeps them (all but @name, which became the object's name)."""
    return [CPAnnotation(a.name, a.body) for a in annotations if a.name != "name"]


def unsupported(what: str, node: ast.Node | None) -> UnsupportedError:
    return UnsupportedError(what, node.loc if node is not None else None)


def source_info(node: ast.Node | None) -> dict[str, Any] | None:
    """p4c's `source_info` object (file, line, column) for a node; BMv2 only uses it in logs."""
    if node is None or node.loc is None:
        return None
    info: dict[str, Any] = {"filename": node.loc.file, "line": node.loc.line, "column": node.loc.col}
    text = source_line(node.loc.file, node.loc.line)
    if text is not None:
        frag = text[max(node.loc.col - 1, 0) :].strip()
        if ";" in frag:
            frag = frag[: frag.index(";")]
        info["source_fragment"] = frag[:80]
    return info
