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
# Type declarations that may share a name with functions (one of them per name).
_TYPE_BESIDE_FUNCTIONS = (ast.ControlDecl, ast.ParserDecl)


def _type_beside_functions(existing: list[Any], decl: Any) -> bool:
    """Whether `decl` may join `existing`: one parser/control type among extern functions (a
    function the program defines with a control's name is a re-declaration, as p4c says)."""
    together = [*existing, decl]
    types = [d for d in together if isinstance(d, _TYPE_BESIDE_FUNCTIONS)]
    beside = (ast.ExternFunctionDecl, ast.MethodDecl, *_TYPE_BESIDE_FUNCTIONS)
    return len(types) == 1 and all(isinstance(d, beside) for d in together)


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
            if _type_beside_functions(existing, decl):
                # a parser/control type may share its name with functions (p4c accepts
                # `control verify_checksum(...)` beside v1model's extern function): types are looked up
                # with lookup(), calls with lookup_all()
                existing.append(decl)
                return
            if any(isinstance(d, _TYPE_BESIDE_FUNCTIONS) for d in [*existing, decl]):
                raise CompileError(
                    f"re-declaration of '{name}' with a different type (a parser or control)", loc
                )
            raise CompileError(f"duplicate declaration of '{name}'", loc)
        self.names[name] = [decl]

    def _found(self, name: str) -> list[Any]:
        s: Scope | None = self
        while s is not None:
            found = s.names.get(name)
            if found:
                return found
            s = s.parent
        return []

    def lookup_all(self, name: str) -> list[Any]:
        """All declarations of `name` in the nearest scope that declares it (empty when none); where a
        parser/control type shares the name with functions, the functions (values and calls)."""
        found = self._found(name)
        if len(found) > 1 and any(isinstance(d, _TYPE_BESIDE_FUNCTIONS) for d in found):
            return [d for d in found if isinstance(d, _OVERLOADABLE)]
        return found

    def lookup(self, name: str) -> Any:
        """The (last) declaration of `name`, or None; the parser/control type where one shares the
        name with functions (lookup() serves type references)."""
        found = self._found(name)
        types = [d for d in found if isinstance(d, _TYPE_BESIDE_FUNCTIONS)]
        if types and len(found) > 1:
            return types[-1]
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
