"""Compiler diagnostics: every user error becomes `file:line:col: error: message` plus the source line
and a caret, as p4c and C compilers print them, and never a Python traceback.

Errors carry their location in the *original* files (before preprocessing); `SourceMap` translates
positions in the preprocessed text back through the linemarkers that the C preprocessor writes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path


@dataclass(frozen=True)
class SourceLoc:
    """A position in an original source file; line and col count from 1."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class CompileError(Exception):
    """A user error in the P4 program (or its command line). Caught by the CLI and printed."""

    def __init__(
        self,
        message: str,
        loc: SourceLoc | None = None,
        notes: list[tuple[str, SourceLoc | None]] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.loc = loc
        # Other places the error concerns, printed after it as `FILE:LINE:COL: note: ...`. p4c puts some
        # errors at a declaration (the struct lacking a field, the package whose parameter does not
        # fit); the note then shows the use that caused it.
        self.notes = list(notes or [])

    def format(self) -> str:
        """The full diagnostic text: location, message, the offending line and a caret under it, then
        each note the same way."""
        parts = [_located("error", self.message, self.loc)]
        parts += [_located("note", text, loc) for text, loc in self.notes if loc is not None]
        return "\n".join(parts)

    def __str__(self) -> str:
        return self.format()


def _located(kind: str, message: str, loc: SourceLoc | None) -> str:
    if loc is None:
        return f"{kind}: {message}"
    head = f"{loc}: {kind}: {message}"
    text = source_line(loc.file, loc.line)
    if text is None:
        return head
    caret = "".join("\t" if ch == "\t" else " " for ch in text[: max(loc.col - 1, 0)]) + "^"
    return f"{head}\n{text}\n{caret}"


class UnsupportedError(CompileError):
    """A construct that is valid P4 but that p4kit does not compile (yet): reported, never dropped."""

    def __init__(self, what: str, loc: SourceLoc | None = None) -> None:
        super().__init__(f"unsupported: {what}", loc)


@lru_cache(maxsize=64)
def _file_lines(path: str) -> tuple[str, ...] | None:
    try:
        return tuple(Path(path).read_text(errors="replace").splitlines())
    except OSError:
        return None


def source_line(path: str, line: int) -> str | None:
    """The text of `line` in `path` (1-based), or None when the file cannot be read."""
    lines = _file_lines(path)
    if lines is None or not 1 <= line <= len(lines):
        return None
    return lines[line - 1]


_LINEMARKER = re.compile(r'^#\s*(?:line\s+)?(\d+)\s+"((?:[^"\\]|\\.)*)"')


@dataclass
class SourceMap:
    """Maps line numbers of preprocessed text back to (file, line) of the original sources.

    `clean_text` is the preprocessed text with every linemarker line replaced by an empty line, so that
    line numbers of `clean_text` equal those of the preprocessor output and columns are unchanged.
    """

    clean_text: str
    _origin: list[tuple[str, int]] = field(default_factory=list)  # index: output line - 1

    @classmethod
    def from_preprocessed(cls, text: str, default_file: str = "<input>") -> SourceMap:
        origin: list[tuple[str, int]] = []
        out_lines: list[str] = []
        cur_file, cur_line = default_file, 1
        for raw in text.split("\n"):
            m = _LINEMARKER.match(raw)
            if m:
                cur_line = int(m.group(1))
                cur_file = m.group(2).encode().decode("unicode_escape")
                origin.append((cur_file, 0))
                out_lines.append("")
                continue
            origin.append((cur_file, cur_line))
            out_lines.append(raw)
            cur_line += 1
        return cls("\n".join(out_lines), origin)

    def locate(self, line: int, col: int) -> SourceLoc:
        """Original location of (line, col) of `clean_text` (both 1-based)."""
        if 1 <= line <= len(self._origin):
            file, orig = self._origin[line - 1]
            return SourceLoc(file, max(orig, 1), col)
        return SourceLoc("<input>", line, col)
