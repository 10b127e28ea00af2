"""Tokenizer for preprocessed P4_16 text.

One compiled regular expression scans the whole text (fast enough for programs of thousands of lines).
Two P4 peculiarities are left to the parser, as p4c does:

- `>` is always a single token; the parser joins two adjacent `>` tokens into a right shift, so that
  `bit<bit<8>>` and `register<bit<32>>(4)` need no special lexing (`Token.adjacent` tells whether a
  token starts right where the previous one ended).
- Whether a name is a type name depends on the declarations in scope, which only the parser knows; the
  lexer emits every name as "ID" and the parser classifies it.

Some P4 keywords may also be used as names (apply, key, actions, entries, state, type, priority, list);
they are lexed as "ID" and recognised by the parser from their context ("soft keywords").
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

from p4kit.compiler.diagnostics import CompileError, SourceMap

KEYWORDS = frozenset(
    {
        "abstract",
        "action",
        "bit",
        "bool",
        "const",
        "control",
        "default",
        "else",
        "enum",
        "error",
        "exit",
        "extern",
        "false",
        "header",
        "header_union",
        "if",
        "in",
        "inout",
        "int",
        "match_kind",
        "out",
        "package",
        "parser",
        "return",
        "select",
        "string",
        "struct",
        "switch",
        "table",
        "this",
        "transition",
        "true",
        "tuple",
        "typedef",
        "varbit",
        "void",
        "value_set",
    }
)

SOFT_KEYWORDS = frozenset({"apply", "key", "actions", "entries", "state", "type", "priority", "list"})

# Longest operators first so that the alternation picks them.
_PUNCT = [
    "&&&",
    "|+|",
    "|-|",
    "...",
    "<<",
    "<=",
    ">=",
    "==",
    "!=",
    "&&",
    "||",
    "++",
    "..",
    "+",
    "-",
    "*",
    "/",
    "%",
    "&",
    "|",
    "^",
    "~",
    "!",
    "<",
    ">",
    "=",
    "?",
    ":",
    ";",
    ",",
    ".",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    "@",
    "#",
]

_DIGITS = r"(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|0[dD][0-9_]+|[0-9][0-9_]*)"
_TOKEN_RE = re.compile(
    r"(?P<ws>[ \t\r\f\v]+|\n)"
    r"|(?P<comment>//[^\n]*|/\*(?:.|\n)*?\*/)"
    r"|(?P<num>(?P<width>[0-9]+)(?P<ws_kind>[wsWS])(?P<neg>-)?(?P<wdigits>" + _DIGITS + r")|" + _DIGITS + r")"
    r"|(?P<id>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<str>\"(?:[^\"\\\n]|\\.)*\")"
    r"|(?P<punct>" + "|".join(re.escape(p) for p in _PUNCT) + r")"
)


@dataclass(slots=True)
class Token:
    """kind: "ID", "KW" (hard keyword), "INT", "STR", "PUNCT" or "EOF". `text` is the source text
    (for INT: `value`, `width`, `signed`, `base` hold the literal's meaning)."""

    kind: str
    text: str
    pos: int
    end: int
    line: int
    col: int
    adjacent: bool = False  # no whitespace between the previous token and this one
    value: object = None
    width: int | None = None
    signed: bool = False
    base: int = 10


def _parse_digits(text: str) -> tuple[int, int]:
    t = text.replace("_", "")
    if len(t) > 1 and t[0] == "0" and t[1] in "xXoObBdD":
        base = {"x": 16, "o": 8, "b": 2, "d": 10}[t[1].lower()]
        return int(t[2:], base), base
    return int(t, 10), 10


def describe(tok: Token) -> str:
    """How an error message names a token."""
    if tok.kind == "EOF":
        return "end of file"
    return f"'{tok.text}'"


def tokenize(source_map: SourceMap) -> list[Token]:
    """All tokens of the preprocessed text, ending with an EOF token. Raises CompileError on a character
    that starts no token."""
    text = source_map.clean_text
    line_starts = [0]
    for m in re.finditer("\n", text):
        line_starts.append(m.end())
    tokens: list[Token] = []
    pos = 0
    n = len(text)
    prev_end = -1
    match = _TOKEN_RE.match
    while pos < n:
        m = match(text, pos)
        if m is None:
            line = bisect_right(line_starts, pos)
            col = pos - line_starts[line - 1] + 1
            raise CompileError(
                f"syntax error: unexpected character {text[pos]!r}", source_map.locate(line, col)
            )
        kind = m.lastgroup
        end = m.end()
        if kind in ("ws", "comment"):
            pos = end
            continue
        line = bisect_right(line_starts, pos)
        col = pos - line_starts[line - 1] + 1
        s = m.group()
        if kind == "num" or m.group("num") is not None:
            tok = Token("INT", s, pos, end, line, col, pos == prev_end)
            if m.group("width") is not None:
                value, base = _parse_digits(m.group("wdigits"))
                if m.group("neg"):
                    value = -value
                tok.width = int(m.group("width"))
                tok.signed = m.group("ws_kind") in "sS"
            else:
                value, base = _parse_digits(s)
            tok.value = value
            tok.base = base
        elif m.group("id") is not None:
            tok = Token("KW" if s in KEYWORDS else "ID", s, pos, end, line, col, pos == prev_end)
        elif m.group("str") is not None:
            tok = Token("STR", s, pos, end, line, col, pos == prev_end)
            tok.value = _unescape(s[1:-1])
        else:
            tok = Token("PUNCT", s, pos, end, line, col, pos == prev_end)
        tokens.append(tok)
        prev_end = end
        pos = end
    line = bisect_right(line_starts, n)
    tokens.append(Token("EOF", "", n, n, line, n - line_starts[line - 1] + 1))
    return tokens


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "0": "\0"}


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            out.append(_ESCAPES.get(s[i + 1], s[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)
