"""Lexical scopes for name resolution.

A scope maps each name to the declarations it denotes in that scope: usually one, several for
overloaded functions, extern functions and methods (P4 overloads by number of arguments, as v1model's
`mark_to_drop()` / `mark_to_drop(standard_metadata)` and core's `extract` show). Lookup walks outwards
through the parents, stopping at the first scope that knows the name, as in P4.
"""

from __future__ import annotations

from typing import Any

from p4kit.compiler import ast
from p4kit.compiler.diagnostics import CompileError

# Declarations that may share a name within one scope (selected later by their parameters).
_OVERLOADABLE = (ast.FunctionDecl, ast.ExternFunctionDecl, ast.MethodDecl)


class Scope:
    def __init__(self, parent: Scope | None = None, kind: str = "block", owner: Any = None) -> None:
        self.parent = parent
        self.kind = kind  # "global", "parser", "control", "action", "function", "block", "extern", ...
        self.owner = owner  # the declaration that opened the scope
        self.names: dict[str, list[Any]] = {}

    def declare(self, name: str, decl: Any, loc: Any = None) -> None:
        """Add `decl` as `name`; a second non-overloadable declaration of a name is an error."""
        existing = self.names.get(name)
        if existing:
            if isinstance(decl, _OVERLOADABLE) and all(isinstance(d, _OVERLOADABLE) for d in existing):
                existing.append(decl)
                return
            raise CompileError(f"duplicate declaration of '{name}'", loc)
        self.names[name] = [decl]

    def lookup_all(self, name: str) -> list[Any]:
        """All declarations of `name` in the nearest scope that declares it (empty when none)."""
        s: Scope | None = self
        while s is not None:
            found = s.names.get(name)
            if found:
                return found
            s = s.parent
        return []

    def lookup(self, name: str) -> Any:
        """The (last) declaration of `name`, or None."""
        found = self.lookup_all(name)
        return found[-1] if found else None

    def global_scope(self) -> Scope:
        s = self
        while s.parent is not None:
            s = s.parent
        return s

    def enclosing(self, *kinds: str) -> Scope | None:
        """The nearest scope (this one included) whose kind is one of `kinds`."""
        s: Scope | None = self
        while s is not None:
            if s.kind in kinds:
                return s
            s = s.parent
        return None
