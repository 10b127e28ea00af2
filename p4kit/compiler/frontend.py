"""The compiler front end: preprocess, parse, check.

    parse(source_map)  -> ast.Program   syntax only
    check(program)     -> ast.Program   names resolved, types inferred and checked, constants folded
    frontend(path, include_dirs=(), defines=()) -> ast.Program   all three

All user errors are raised as `CompileError` (or its subclass `UnsupportedError`) with the location in
the original source file.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from p4kit.compiler import ast
from p4kit.compiler.diagnostics import CompileError, SourceMap
from p4kit.compiler.parser import parse as _parse
from p4kit.compiler.preprocess import preprocess

# Long `else if` chains and deeply nested expressions recurse deeply in a recursive-descent parser and
# in every pass over the tree; Python 3.11 keeps Python-to-Python calls off the C stack, so a higher
# limit is safe and spares real programs a RecursionError.
_RECURSION_LIMIT = 30000


def _allow_deep_recursion() -> None:
    if sys.getrecursionlimit() < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)


def parse(source_map: SourceMap) -> ast.Program:
    """Parse preprocessed text (syntax only)."""
    _allow_deep_recursion()
    try:
        return _parse(source_map)
    except RecursionError:
        raise CompileError("the program is nested too deeply to be parsed") from None


def check(program: ast.Program) -> ast.Program:
    """Resolve names, infer and check types, fold constants (annotates `program` in place)."""
    from p4kit.compiler.typecheck import check_program

    _allow_deep_recursion()
    try:
        check_program(program)
    except RecursionError:
        raise CompileError("the program is nested too deeply to be checked") from None
    return program


def frontend(path: str | Path, include_dirs: Iterable[str] = (), defines: Iterable[str] = ()) -> ast.Program:
    """Preprocess, parse and check the P4 program at `path`."""
    sm = preprocess(path, list(include_dirs), list(defines))
    return check(parse(sm))
