"""Run an STF test against the in-process switch, with the semantics of p4c's BMv2 STF runner.

Why these semantics (from p4c's backends/bmv2/bmv2stf.py): every `packet` is injected in order;
every `expect` appends to that port's list of expected packets; at the end each port that appears in
a `packet` or `expect` line must have received exactly its expected packets, in order. `expect PORT`
without data accepts anything on that port. Expected data may use `*` for a don't-care nibble and a
final `$` to require the exact length (otherwise longer packets match on their prefix). Packets sent
to a port no `packet`/`expect` line mentions leave through an interface BMv2 would not have opened,
so, as with p4c, they are not checked (they are reported with -v).

A `packet` whose data has an odd number of hex digits is not sent: p4c's runner converts the data with
`bytes.fromhex`, which refuses it, reports "Invalid packet data" and carries on, so the expectations
alone decide the verdict. (The early gauntlet tests of p4c, written one field per group of digits,
have such lines; their packets never reached BMv2 either.) The runner records each such line and says
so beside a verdict of missing packets.

Table and action names are resolved like p4c does: the exact JSON name first, then a unique suffix.
Key fields likewise (`hdr.h.f`, `h.f`, `f`, `h.valid` -> `h.$valid$`). Ternary values use `*` nibbles
(`0x0a**`) or `value&&&mask`; lpm values `value/len` (without `/len` the length is the number of
digits times 4); ranges `lo..hi`. STF priorities are P4Runtime-like (larger wins), as the switch API.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from p4kit.stf.parser import CheckCounter, Directive, PacketDirective, SetDefault, TableAdd
from p4kit.switch.errors import SwitchError
from p4kit.switch.program import TableInfo
from p4kit.switch.runtime import Switch


class StfError(Exception):
    """A directive could not be executed (unknown name, bad value, switch error)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


@dataclass
class Mismatch:
    port: int
    index: int
    expected: str | None
    got: bytes | None
    reason: str

    def describe(self) -> str:
        lines = [f"port {self.port}, packet {self.index}: {self.reason}"]
        if self.expected is not None:
            lines.append(f"  expected: {self.expected}")
        if self.got is not None:
            lines.append(f"  got:      {self.got.hex().upper()}")
        return "\n".join(lines)


@dataclass
class StfResult:
    ok: bool
    packets_sent: int = 0
    packets_expected: int = 0
    received: dict[int, list[bytes]] = field(default_factory=dict)
    mismatch: Mismatch | None = None
    counter_failures: list[str] = field(default_factory=list)
    ignored: list[tuple[int, bytes]] = field(default_factory=list)
    unsent: list[str] = field(default_factory=list)  # why a `packet` line was not sent, one per line
    log: list[str] = field(default_factory=list)


def compare_packet(expected: str, got: bytes) -> str | None:
    """None when ``got`` matches the STF expectation, else why not."""
    exp = expected.upper()
    strict = exp.endswith("$")
    if strict:
        exp = exp[:-1]
    rec = got.hex().upper()
    if len(rec) < len(exp):
        return f"received packet too short ({len(rec) // 2} bytes, expected {len(exp) / 2:g})"
    for i, c in enumerate(exp):
        if c != "*" and c != rec[i]:
            return f"packet differs at nibble {i} (byte {i // 2}): expected {c}, received {rec[i]}"
    if strict and len(rec) > len(exp):
        return f"received packet too long ({len(rec) // 2} bytes, expected exactly {len(exp) // 2})"
    return None


def parse_number(text: str) -> int:
    t = text.strip().lower()
    neg = t.startswith("-")
    if neg:
        t = t[1:]
    if t.startswith("0x"):
        v = int(t[2:], 16)
    elif t.startswith("0b"):
        v = int(t[2:], 2)
    elif t.startswith("0o"):
        v = int(t[2:], 8)
    else:
        v = int(t, 10)
    return -v if neg else v


def _ternary(text: str, width: int) -> tuple[int, int]:
    t = text.strip()
    if "&&&" in t:
        v, m = t.split("&&&", 1)
        return parse_number(v), parse_number(m)
    low = t.lower()
    for prefix, base in (("0x", 16), ("0b", 2), ("0o", 8)):
        if low.startswith(prefix):
            digits = t[2:]
            value = int(digits.replace("*", "0"), base)
            full_digit = {16: "f", 2: "1", 8: "7"}[base]
            mask = int("".join("0" if c == "*" else full_digit for c in digits), base)
            # Digits beyond the field are dropped; a field wider than the digits is matched exactly
            # only on the digits given (p4c does the same: the mask has as many digits as the value).
            return value & ((1 << width) - 1), mask & ((1 << width) - 1)
    return parse_number(t), (1 << width) - 1


def _lpm(text: str, width: int) -> tuple[int, int]:
    t = text.strip()
    if "/" in t:
        v, plen = t.split("/", 1)
        return parse_number(v.replace("*", "0")), int(plen, 0)
    low = t.lower()
    if low.startswith("0x"):
        digits = t[2:]
        n = len(digits) - digits.count("*")
        return int(digits.replace("*", "0"), 16), min(width, n * 4)
    if low.startswith("0b"):
        digits = t[2:]
        n = len(digits) - digits.count("*")
        return int(digits.replace("*", "0"), 2), min(width, n)
    v = parse_number(t)
    return v, width


def _range(text: str, width: int) -> tuple[int, int]:
    t = text.strip()
    if ".." in t:
        lo, hi = t.split("..", 1)
        return parse_number(lo), parse_number(hi)
    if "*" in t or "&&&" in t:  # a ternary-looking value on a range field: the whole range it covers
        v, m = _ternary(t, width)
        if m == (1 << width) - 1:
            return v, v
        return 0, (1 << width) - 1
    v = parse_number(t)
    return v, v


def resolve(name: str, candidates: list[str], what: str) -> str:
    """p4c's name lookup: exact name, else the unique candidate ending with the name."""
    if name in candidates:
        return name
    hits = [c for c in candidates if c.endswith(name) and (len(c) == len(name) or c[-len(name) - 1] in ".$")]
    if not hits:
        hits = [c for c in candidates if c.endswith(name)]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise KeyError(f"no {what} named '{name}'")
    raise KeyError(f"{what} name '{name}' is ambiguous: {', '.join(hits)}")


def resolve_key_field(t: TableInfo, key: str) -> int:
    """Index of the key field an STF key name refers to (p4c's TableKeyInstance.set rules)."""
    m = re.match(r"(.*)\$([0-9]+)(.*)", key)
    if m:
        key = f"{m.group(1)}[{m.group(2)}]{m.group(3)}"
    names = [k.name for k in t.keys]
    targets = [".".join(k.target) if isinstance(k.target, list) else str(k.target) for k in t.keys]
    alts = [key, key + "$", key + ".$valid$"]
    if key.endswith(".valid"):
        alts.append(key[: -len("valid")] + "$valid$")
        alts.append(key[: -len(".valid")] + ".isValid()")
    if key.endswith(".isValid()"):
        alts.append(key[: -len("isValid()")] + "$valid$")
    for cand in alts:
        for i, (n, tg) in enumerate(zip(names, targets, strict=False)):
            if cand in (n, tg):
                return i
    for i, (n, tg) in enumerate(zip(names, targets, strict=False)):
        for full in (n, tg):
            if full.endswith("." + key) or full.endswith("." + key + "$"):
                return i
            if key == "valid" and full.endswith(".$valid$"):
                return i
    raise KeyError(f"table '{t.name}' has no key field '{key}' (keys: {', '.join(names)})")


_OPS: dict[str, Callable[[int, int], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


class StfRunner:
    """Executes directives against a Switch that already holds the program."""

    def __init__(
        self, switch: Switch, verbose: bool = False, echo: Callable[[str], None] | None = None
    ) -> None:
        self.sw = switch
        self.verbose = verbose
        self.echo = echo or (lambda s: None)
        self.result = StfResult(ok=False)
        self.expected: dict[int, list[str | None]] = {}
        self.any_ports: set[int] = set()
        self.ports: set[int] = set()
        self.entry_names: dict[str, tuple[str, int]] = {}
        self.tables = switch.tables()

    def log(self, msg: str) -> None:
        self.result.log.append(msg)
        if self.verbose:
            self.echo(msg)

    def run(self, directives: list[Directive]) -> StfResult:
        for d in directives:
            if isinstance(d, PacketDirective):
                self.ports.add(d.port)
        for d in directives:
            try:
                self.execute(d)
            except StfError:
                raise
            except (SwitchError, KeyError, ValueError) as exc:
                msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
                raise StfError(d.line, f"{d.cmd}: {msg}") from exc
        self.check_outputs()
        return self.result

    # -------------------------------------------------------------------- directives
    def execute(self, d: Directive) -> None:
        sw = self.sw
        if isinstance(d, PacketDirective):
            if d.cmd == "packet":
                if len(d.data) % 2:
                    why = (
                        f"line {d.line}: packet data has {len(d.data)} hex digits, an odd number; "
                        "p4c's runner (bytes.fromhex) rejects it and sends nothing, and so does p4kit-stf"
                    )
                    self.result.unsent.append(why)
                    self.log(f"packet {d.port} {d.data.upper()}: not sent ({why})")
                    return
                self.result.packets_sent += 1
                data = bytes.fromhex(d.data)
                self.log(f"packet {d.port} {d.data.upper()}")
                for port, out in sw.process_packet(d.port, data):
                    self.log(f"  -> port {port}: {out.hex().upper()}")
                    self.result.received.setdefault(port, []).append(out)
                for reason in sw.drop_log:
                    self.log(f"  dropped: {reason}")
            else:
                if d.data:
                    self.expected.setdefault(d.port, []).append(d.data)
                    self.result.packets_expected += 1
                else:
                    self.any_ports.add(d.port)
            return
        if isinstance(d, TableAdd):
            self.do_add(d)
            return
        if isinstance(d, SetDefault):
            table = resolve(d.table, self.tables, "table")
            info = sw.table_info(table)
            action = resolve(d.action, info.action_names, f"action of table '{table}'")
            params = self.params(action, d.params, table)
            if info.action_profile:
                sw.table_set_default(
                    table, member=self.member_for(info.action_profile, action, params, table)
                )
            else:
                sw.table_set_default(table, action, params)
            self.log(f"setdefault {table} {action}")
            return
        if isinstance(d, CheckCounter):
            self.do_check_counter(d)
            return
        a = d.args
        n = parse_number
        cmd = d.cmd
        if cmd in ("wait", "no_packet"):
            return
        if cmd == "remove":
            if a and a[0].lower() == "all":
                for t in self.tables:
                    sw.table_clear(t)
                return
            raise StfError(d.line, "remove: only 'remove all' is supported")
        need = {
            "mirroring_add": 2,
            "mirroring_add_mc": 2,
            "mirroring_delete": 1,
            "mirroring_get": 1,
            "mc_mgrp_create": 1,
            "mc_node_associate": 2,
            "counter_read": 2,
            "counter_write": 4,
            "register_read": 2,
            "register_write": 3,
            "register_reset": 1,
            "meter_get_rates": 2,
        }
        if cmd in need and len(a) != need[cmd]:
            raise StfError(d.line, f"{cmd} takes {need[cmd]} argument(s), got {len(a)}")
        if cmd == "mirroring_add":
            sw.clone_session_set(n(a[0]), port=n(a[1]))
        elif cmd == "mirroring_add_mc":
            sw.clone_session_set(n(a[0]), mcast_grp=n(a[1]))
        elif cmd == "mirroring_delete":
            sw.clone_session_delete(n(a[0]))
        elif cmd == "mirroring_get":
            self.log(f"mirroring_get {a[0]}: {sw.clone_session_get(n(a[0]))}")
        elif cmd == "mc_mgrp_create":
            sw.mc_mgrp_create(n(a[0]))
        elif cmd in ("mc_node_create", "mc_node_update"):
            if len(a) < 1:
                raise StfError(d.line, f"{cmd} needs a node/rid and a port list")
            ports = [n(x) for x in a[1:] if x != "|"]
            if cmd == "mc_node_create":
                h = sw.mc_node_create(n(a[0]), ports)
                self.log(f"mc_node_create: node handle {h}")
            else:
                sw.mc_node_update(n(a[0]), ports)
        elif cmd == "mc_node_associate":
            sw.mc_node_associate(n(a[0]), n(a[1]))
        elif cmd == "counter_read":
            name = self.extern_name(a[0], "counter")
            self.log(f"counter_read {name}[{a[1]}] = {sw.counter_read(name, n(a[1]))}")
        elif cmd == "counter_write":
            name = self.extern_name(a[0], "counter")
            sw.counter_write(name, n(a[1]), n(a[2]), n(a[3]))
        elif cmd == "register_read":
            name = self.extern_name(a[0], "register")
            self.log(f"register_read {name}[{a[1]}] = {sw.register_read(name, n(a[1]))}")
        elif cmd == "register_write":
            name = self.extern_name(a[0], "register")
            sw.register_write(name, n(a[1]), n(a[2]))
        elif cmd == "register_reset":
            sw.register_reset(self.extern_name(a[0], "register"))
        elif cmd == "meter_get_rates":
            name = self.extern_name(a[0], "meter")
            self.log(f"meter_get_rates {name}[{a[1]}] = {sw.meter_get_rates(name, n(a[1]))}")
        elif cmd == "meter_set_rates":
            if len(a) < 3:
                raise StfError(d.line, "meter_set_rates takes NAME INDEX RATE:BURST ...")
            sw.meter_set_rates(self.extern_name(a[0], "meter"), n(a[1]), self.rates(d.line, a[2:]))
        elif cmd == "meter_array_set_rates":
            if len(a) < 2:
                raise StfError(d.line, "meter_array_set_rates takes NAME RATE:BURST ...")
            sw.meter_array_set_rates(self.extern_name(a[0], "meter"), self.rates(d.line, a[1:]))
        else:  # pragma: no cover - parse_stf only lets known commands through
            raise StfError(d.line, f"unsupported STF command '{cmd}'")

    @staticmethod
    def rates(line: int, words: list[str]) -> list[tuple[float, int]]:
        out = []
        for w in words:
            r, sep, b = w.partition(":")
            if not sep:
                raise StfError(line, f"meter rate '{w}' is not RATE:BURST")
            out.append((float(r), parse_number(b)))
        return out

    def extern_name(self, name: str, kind: str) -> str:
        prog = self.sw.program
        pool = {"counter": prog.counters, "register": prog.registers, "meter": prog.meters}[kind]
        return resolve(name, list(pool), kind)

    def params(self, action: str, given: list[tuple[str, str]], table: str | None = None) -> dict[str, int]:
        info = self.sw.action_info(action, table)
        names = info.param_names
        out = {}
        for k, v in given:
            if k not in names:
                raise KeyError(f"action '{action}' has no parameter '{k}' (parameters: {', '.join(names)})")
            out[k] = parse_number(v)
        missing = [p for p in names if p not in out]
        if missing:
            raise KeyError(f"action '{action}': missing parameter(s) {', '.join(missing)}")
        return out

    def do_add(self, d: TableAdd) -> None:
        sw = self.sw
        table = resolve(d.table, self.tables, "table")
        info = sw.table_info(table)
        keys: list = []
        for kf in info.keys:  # p4c's defaults for fields the line does not give
            keys.append(
                {"ternary": None, "lpm": (0, 0), "range": None, "optional": None}.get(kf.match_type, 0)
            )
        for kname, value in d.keys:
            i = resolve_key_field(info, kname)
            kf = info.keys[i]
            mt = kf.match_type
            if mt == "ternary":
                keys[i] = _ternary(value, kf.width)
            elif mt == "lpm":
                keys[i] = _lpm(value, kf.width)
            elif mt == "range":
                keys[i] = _range(value, kf.width)
            elif mt == "optional":
                v, m = _ternary(value, kf.width)
                keys[i] = (v, m == 0)
            else:
                keys[i] = parse_number(value)
        action = resolve(d.action, info.action_names, f"action of table '{table}'")
        params = self.params(action, d.params, table)
        if info.action_profile:  # STF has no member syntax: one implicit member per action and data
            mid = self.member_for(info.action_profile, action, params, table)
            handle = sw.table_add(table, keys, priority=d.priority, member=mid)
        else:
            handle = sw.table_add(table, keys, action, params, d.priority)
        if d.handle_name:
            self.entry_names[d.handle_name] = (table, handle)
        self.log(f"add {table} {keys} -> {action} (handle {handle})")

    def member_for(self, profile: str, action: str, params: dict[str, int], table: str) -> int:
        info = self.sw.action_info(action, table)
        args = tuple(params[n] for n in info.param_names)
        for mid, act, margs in self.sw.act_prof_get_members(profile):
            if act == action and margs == args:
                return mid
        mid = len(self.sw.act_prof_get_members(profile))
        while any(m[0] == mid for m in self.sw.act_prof_get_members(profile)):
            mid += 1
        self.sw.act_prof_add_member(profile, mid, action, params)
        return mid

    def do_check_counter(self, d: CheckCounter) -> None:
        sw = self.sw
        prog = sw.program
        name = resolve(d.counter, list(prog.counters), "counter")
        info = prog.counters[name]
        if info.is_direct:
            idx = d.index.lstrip("$")
            if d.index in self.entry_names or idx in self.entry_names:
                table, handle = self.entry_names.get(d.index) or self.entry_names[idx]
            else:
                table, handle = info.binding or "", parse_number(d.index)
            packets, bytes_ = sw.direct_counter_read(table, handle)
        else:
            packets, bytes_ = sw.counter_read(name, parse_number(d.index))
        value = bytes_ if d.count_type == "bytes" else packets
        ok = _OPS[d.op](value, d.value)
        self.log(
            f"check_counter {name}({d.index}) {d.count_type or 'packets'} = {value} {d.op} {d.value}: {ok}"
        )
        if not ok:
            self.result.counter_failures.append(
                f"line {d.line}: check_counter {name}({d.index}) {d.count_type or 'packets'} is {value}, "
                f"expected {d.op} {d.value}"
            )

    # -------------------------------------------------------------------- verdict
    def check_outputs(self) -> None:
        r = self.result
        ports = self.ports | set(self.expected) | self.any_ports
        for port, pkts in sorted(r.received.items()):
            if port not in ports:
                for p in pkts:
                    r.ignored.append((port, p))
                    self.log(f"note: packet on port {port} (no STF line mentions it; p4c would not see it)")
        for port in sorted(ports):
            if port in self.any_ports:
                continue
            exp = self.expected.get(port, [])
            got = r.received.get(port, [])
            for i, e in enumerate(exp):
                if i >= len(got):
                    reason = f"expected {len(exp)} packet(s), got {len(got)}"
                    if r.unsent:
                        reason += f" ({len(r.unsent)} packet line(s) not sent: odd number of hex digits)"
                    r.mismatch = Mismatch(port, i, e, None, reason)
                    r.ok = False
                    return
                why = compare_packet(e, got[i])
                if why is not None:
                    r.mismatch = Mismatch(port, i, e, got[i], why)
                    r.ok = False
                    return
            if len(got) > len(exp):
                r.mismatch = Mismatch(
                    port,
                    len(exp),
                    None,
                    got[len(exp)],
                    f"unexpected packet: expected {len(exp)}, got {len(got)}",
                )
                r.ok = False
                return
        r.ok = not r.counter_failures
