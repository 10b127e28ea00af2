"""Recursive-descent parser for P4_16 (v1.2.x), producing `ast.Program`.

Why hand-written: P4's grammar needs to know which names are types (`a < b > c` is a comparison or
not, `T(x)` is a constructor call, `(T) e` a cast) and p4c resolves that with a lexer fed by the
symbol table. A recursive-descent parser keeps a stack of scopes of type names (types declared so far
plus the generic parameters of the declaration being parsed) and classifies each name as it reads it,
which is exactly p4c's behaviour, and it lets every syntax error say what was found and what was
expected. Parsing is linear (only a few bounded look-aheads) and fast.
"""

from __future__ import annotations

from p4kit.compiler import ast
from p4kit.compiler.diagnostics import SourceMap
from p4kit.compiler.parse_decls import DeclParser
from p4kit.compiler.parse_exprs import ExprParser
from p4kit.compiler.parse_stmts import StmtParser


class Parser(DeclParser, StmtParser, ExprParser):
    """Parses one preprocessed text (the parts live in the parse_* modules). Use `parse`."""


def parse(source_map: SourceMap) -> ast.Program:
    """Parse preprocessed P4_16 text into an AST (syntax only; see frontend.check)."""
    return Parser(source_map).parse_program()
