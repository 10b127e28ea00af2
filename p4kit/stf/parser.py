"""Parse p4c's STF (simple test framework) files into directives.

Why a hand-written line parser: STF is line oriented -- each line is one command, `#` starts a
comment, and the first word selects the command (case-insensitive, as p4c's lexer does). Packet data
may be split by spaces and may hold `*` (don't-care nibbles) and a final `$` (exact length) in
`expect`. Every directive keeps its line number so the runner can point at the offending line.

Packet data is kept as written, an odd number of digits included: whether such a `packet` is sent is
the runner's decision (p4c's sends nothing), and `expect` data of any length is compared digit by
digit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


class StfSyntaxError(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


@dataclass
class Directive:
    line: int
    cmd: str  # lower-case command word
    args: list[str] = field(default_factory=list)  # raw words after the command


@dataclass
class PacketDirective(Directive):
    port: int = 0
    data: str = ""  # hex digits as written (for expect also '*' and a final '$'); "" for `expect PORT`


@dataclass
class TableAdd(Directive):
    table: str = ""
    priority: int | None = None
    keys: list[tuple[str, str]] = field(default_factory=list)
    action: str = ""
    params: list[tuple[str, str]] = field(default_factory=list)
    handle_name: str | None = None  # `= ID` at the end: names the entry for check_counter


@dataclass
class SetDefault(Directive):
    table: str = ""
    action: str = ""
    params: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class CheckCounter(Directive):
    counter: str = ""
    index: str = ""  # number, or the name given to an entry with `add ... = ID`
    count_type: str | None = None  # "packets" | "bytes" | None (packets)
    op: str = "=="
    value: int = 0


COMMANDS = {
    "packet",
    "expect",
    "no_packet",
    "add",
    "setdefault",
    "remove",
    "check_counter",
    "wait",
    "mirroring_add",
    "mirroring_add_mc",
    "mirroring_delete",
    "mirroring_get",
    "mc_mgrp_create",
    "mc_node_create",
    "mc_node_update",
    "mc_node_associate",
    "counter_read",
    "counter_write",
    "register_read",
    "register_write",
    "register_reset",
    "meter_get_rates",
    "meter_set_rates",
    "meter_array_set_rates",
}

_HEXDATA = re.compile(r"^[0-9a-fA-F*]*\$?$")
_ACTION = re.compile(r"^(?P<name>[A-Za-z_$][\w.$\[\]]*)\s*\((?P<args>.*)\)\s*(?:=\s*(?P<id>\S+))?\s*$", re.S)


def parse_stf(text: str) -> list[Directive]:
    """Parse a whole STF file; raise StfSyntaxError for malformed or unknown commands."""
    out: list[Directive] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        word, _, rest = line.partition(" ")
        cmd = word.lower()
        rest = rest.strip()
        if cmd not in COMMANDS:
            raise StfSyntaxError(lineno, f"unknown or unsupported STF command '{word}'")
        if cmd in ("packet", "expect"):
            out.append(_packet(lineno, cmd, rest))
        elif cmd == "add":
            out.append(_add(lineno, rest))
        elif cmd == "setdefault":
            out.append(_setdefault(lineno, rest))
        elif cmd == "check_counter":
            out.append(_check_counter(lineno, rest))
        else:
            out.append(Directive(lineno, cmd, rest.split()))
    return out


def _packet(lineno: int, cmd: str, rest: str) -> PacketDirective:
    port_s, _, data = rest.partition(" ")
    if not port_s.isdigit():
        raise StfSyntaxError(lineno, f"{cmd}: expected a port number, got '{port_s}'")
    data = "".join(data.split())
    if cmd == "packet" and not re.fullmatch(r"[0-9a-fA-F]*", data):
        raise StfSyntaxError(lineno, f"packet: invalid packet data '{data}'")
    if cmd == "expect" and not _HEXDATA.match(data):
        raise StfSyntaxError(lineno, f"expect: invalid packet data '{data}'")
    return PacketDirective(lineno, cmd, rest.split(), port=int(port_s), data=data)


def _split_action(lineno: int, text: str) -> tuple[str, list[tuple[str, str]], str | None]:
    m = _ACTION.match(text.strip())
    if not m:
        raise StfSyntaxError(lineno, f"expected ACTION(param:value, ...), got '{text.strip()}'")
    params: list[tuple[str, str]] = []
    args = m.group("args").strip()
    if args:
        for part in args.split(","):
            k, sep, v = part.partition(":")
            if not sep or not k.strip() or not v.strip():
                raise StfSyntaxError(lineno, f"action argument '{part.strip()}' is not name:value")
            params.append((k.strip(), v.strip()))
    return m.group("name"), params, m.group("id")


def _add(lineno: int, rest: str) -> TableAdd:
    paren = rest.find("(")
    if paren < 0:
        raise StfSyntaxError(lineno, "add: missing action")
    head = rest[:paren].split()
    if len(head) < 2:
        raise StfSyntaxError(lineno, "add: expected 'add TABLE [PRIORITY] KEY:VALUE ... ACTION(...)'")
    table = head[0]
    words = head[1:-1]
    action_text = head[-1] + rest[paren:]
    priority = None
    if words and re.fullmatch(r"[0-9]+", words[0]):
        priority = int(words[0])
        words = words[1:]
    keys: list[tuple[str, str]] = []
    for w in words:
        k, sep, v = w.partition(":")
        if not sep or not k or not v:
            raise StfSyntaxError(lineno, f"add: key '{w}' is not field:value")
        keys.append((k, v))
    action, params, hid = _split_action(lineno, action_text)
    return TableAdd(lineno, "add", rest.split(), table, priority, keys, action, params, hid)


def _setdefault(lineno: int, rest: str) -> SetDefault:
    table, _, action_text = rest.partition(" ")
    if not table or not action_text:
        raise StfSyntaxError(lineno, "setdefault: expected 'setdefault TABLE ACTION(...)'")
    action, params, _ = _split_action(lineno, action_text)
    return SetDefault(lineno, "setdefault", rest.split(), table, action, params)


_CHECK = re.compile(
    r"^(?P<name>[\w.$\[\]]+)\s*\(\s*(?P<idx>[^)\s]+)\s*\)\s*"
    r"(?:(?P<type>packets|bytes)\s*)?(?:(?P<op>==|!=|<=|>=|<|>)\s*(?P<val>\S+))?\s*$",
    re.I,
)


def _check_counter(lineno: int, rest: str) -> CheckCounter:
    m = _CHECK.match(rest)
    if not m:
        raise StfSyntaxError(
            lineno, "check_counter: expected 'check_counter NAME(INDEX) [packets|bytes] [OP VALUE]'"
        )
    value = 0
    if m.group("val") is not None:
        try:
            value = int(m.group("val"), 0)
        except ValueError as exc:
            raise StfSyntaxError(lineno, f"check_counter: bad value '{m.group('val')}'") from exc
    ctype = m.group("type").lower() if m.group("type") else None
    return CheckCounter(
        lineno,
        "check_counter",
        rest.split(),
        m.group("name"),
        m.group("idx"),
        ctype,
        m.group("op") or "==",
        value,
    )
