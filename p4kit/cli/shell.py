"""The command interpreter: simple_switch_CLI's commands, argument syntax and messages, each done with
P4Runtime requests through a `Session`.

Why these translations: BMv2's CLI has concepts P4Runtime spells differently, and each is mapped the
way simple_switch_grpc itself maps them:
- priorities: BMv2 prefers the *smaller* priority of two matching entries, P4Runtime the larger; a
  CLI priority p is written as P4Runtime priority MAX_PRIORITY - p and shown back as p;
- meter rates: the CLI gives units per microsecond and bursts, P4Runtime units per second;
- multicast nodes (rid + ports) become the (port, instance = rid) replicas of the groups they are
  associated with; `mirroring_add_mc` copies the group's replicas into the clone session;
- handles: see session.py.
"""

from __future__ import annotations

import cmd
import sys
from collections.abc import Callable
from typing import Any, TextIO

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

from p4kit.cli.session import MAX_PRIORITY, PRIORITY_MATCH_KINDS, Session
from p4kit.cli.shell_entries import EntryCommands
from p4kit.cli.shell_profiles import ActionProfileCommands
from p4kit.cli.shell_switch import SwitchCommands
from p4kit.cli.values import CliError, from_bytes, hex_of, parse_int, to_bytes, words

MF = p4info_pb2.MatchField
KIND = {MF.EXACT: "exact", MF.LPM: "lpm", MF.TERNARY: "ternary", MF.RANGE: "range", MF.OPTIONAL: "optional"}
INSERT, MODIFY, DELETE = pb.Update.INSERT, pb.Update.MODIFY, pb.Update.DELETE


def _update(kind: int, **entity: Any) -> pb.Update:
    return pb.Update(type=kind, entity=pb.Entity(**entity))


def _int_arg(text: str, what: str) -> int:
    try:
        v = int(text, 0)
    except ValueError:
        raise CliError(f"{what} must be an integer, not '{text}'") from None
    if v < 0:
        raise CliError(f"{what} must not be negative")
    return v


def _table_kind(t: Any) -> str:
    kinds = {KIND.get(m.match_type, "exact") for m in t.match_fields}
    for k in ("range", "ternary", "optional", "lpm"):
        if k in kinds:
            return "ternary" if k == "optional" else k
    return "exact"


def _meter_config(tokens: list[str]) -> pb.MeterConfig:
    """Two RATE:BURST tokens (committed, then peak; rates in units per microsecond, as BMv2 takes
    them) as P4Runtime's MeterConfig (units per second)."""
    rates = []
    for tok in tokens:
        rate, sep, burst = tok.partition(":")
        try:
            r, b = float(rate), int(burst, 0)
        except ValueError:
            raise CliError(f"'{tok}' is not RATE:BURST") from None
        if not sep or r < 0 or b < 0:
            raise CliError(f"'{tok}' is not RATE:BURST")
        rates.append((round(r * 1_000_000), b))
    if len(rates) != 2:
        raise CliError("give two rates, RATE:BURST each: committed, then peak")
    return pb.MeterConfig(cir=rates[0][0], cburst=rates[0][1], pir=rates[1][0], pburst=rates[1][1])


class RuntimeShell(ActionProfileCommands, EntryCommands, SwitchCommands, cmd.Cmd):
    """simple_switch_CLI's commands. Each `do_*` docstring is the command's help."""

    intro = ""
    prompt = "RuntimeCmd: "

    def __init__(self, session: Session, stdin: TextIO | None = None, stdout: TextIO | None = None):
        super().__init__(stdin=stdin, stdout=stdout)
        self.s = session
        self.failures = 0
        self.out: TextIO = stdout or sys.stdout

    # ------------------------------------------------------------------ cmd plumbing
    def say(self, text: str = "") -> None:
        """One line of output, flushed: a script reading the CLI through a pipe sees each command's
        answer as it comes, as with simple_switch_CLI."""
        self.out.write(text + "\n")
        self.out.flush()

    def onecmd(self, line: str) -> bool:
        try:
            return bool(super().onecmd(line))
        except CliError as e:
            self.failures += 1
            self.say(f"Error: {e}")
            return False

    def emptyline(self) -> bool:
        return False

    def default(self, line: str) -> bool:
        if line.strip().startswith("#"):
            return False  # comments in command files
        self.failures += 1
        self.say(f"*** Unknown syntax: {line}")
        return False

    def do_EOF(self, arg: str) -> bool:
        """Exit (end of input)."""
        return True

    def do_quit(self, arg: str) -> bool:
        """quit: leave the CLI"""
        return True

    do_exit = do_quit

    @staticmethod
    def args(line: str, n_min: int, usage: str) -> list[str]:
        parts = words(line, usage)
        if len(parts) < n_min:
            raise CliError(f"Invalid number of arguments; usage: {usage}")
        return parts

    # ------------------------------------------------------------------ tables: parsing
    def _matches(self, t: Any, tokens: list[str]) -> list[pb.FieldMatch]:
        if len(tokens) != len(t.match_fields):
            raise CliError(
                f"Table {t.preamble.name} needs {len(t.match_fields)} key field(s) "
                f"({', '.join(m.name for m in t.match_fields)}), got {len(tokens)}"
            )
        out = []
        for mf, tok in zip(t.match_fields, tokens, strict=True):
            what = f"key {mf.name}"
            w = mf.bitwidth
            m = pb.FieldMatch(field_id=mf.id)
            kind = mf.match_type
            if kind == MF.EXACT:
                m.exact.value = to_bytes(parse_int(tok, w, what), w)
            elif kind == MF.LPM:
                value, sep, plen = tok.partition("/")
                if not sep:
                    raise CliError(f"{what}: an lpm key is VALUE/PREFIX_LENGTH, not '{tok}'")
                n = _int_arg(plen, f"{what} prefix length")
                if n > w:
                    raise CliError(f"{what}: prefix length {n} is more than {w} bits")
                if n == 0:
                    continue  # a /0 prefix matches everything: P4Runtime omits the field
                v = parse_int(value, w, what) & (((1 << n) - 1) << (w - n))
                m.lpm.value, m.lpm.prefix_len = to_bytes(v, w), n
            elif kind == MF.TERNARY:
                value, sep, mask = tok.partition("&&&")
                if not sep:
                    raise CliError(f"{what}: a ternary key is VALUE&&&MASK, not '{tok}'")
                mk = parse_int(mask, w, what + " mask")
                if mk == 0:
                    continue  # all don't care: omitted
                m.ternary.value = to_bytes(parse_int(value, w, what) & mk, w)
                m.ternary.mask = to_bytes(mk, w)
            elif kind == MF.RANGE:
                lo, sep, hi = tok.partition("->")
                if not sep:
                    raise CliError(f"{what}: a range key is LOW->HIGH, not '{tok}'")
                a, b = parse_int(lo, w, what), parse_int(hi, w, what)
                if a == 0 and b == (1 << w) - 1:
                    continue
                m.range.low, m.range.high = to_bytes(a, w), to_bytes(b, w)
            elif kind == MF.OPTIONAL:
                if tok in ("*", "_"):
                    continue
                m.optional.value = to_bytes(parse_int(tok, w, what), w)
            else:
                raise CliError(f"{what}: match kind {mf.other_match_type or kind} is not supported")
            out.append(m)
        return out

    def _action(self, t: Any | None, name: str, tokens: list[str]) -> pb.Action:
        a = self.s.find("actions", name)
        if t is not None and a.preamble.id not in {r.id for r in t.action_refs}:
            raise CliError(f"Invalid action ({name}) for table {t.preamble.name}")
        if len(tokens) != len(a.params):
            raise CliError(
                f"Action {a.preamble.name} needs {len(a.params)} parameter(s) "
                f"({', '.join(p.name for p in a.params)}), got {len(tokens)}"
            )
        act = pb.Action(action_id=a.preamble.id)
        for p, tok in zip(a.params, tokens, strict=True):
            act.params.add(
                param_id=p.id, value=to_bytes(parse_int(tok, p.bitwidth, f"param {p.name}"), p.bitwidth)
            )
        return act

    def _split_entry(
        self, t: Any, rest: list[str], with_keys: bool
    ) -> tuple[list[str], list[str], int | None]:
        """(key tokens, action parameter tokens, CLI priority) of `KEYS => PARAMS [PRIORITY]`."""
        needs_prio = any(m.match_type in PRIORITY_MATCH_KINDS for m in t.match_fields)
        if "=>" in rest:
            i = rest.index("=>")
            keys, params = rest[:i], rest[i + 1 :]
        elif with_keys:
            keys, params = rest, []
        else:
            keys, params = [], rest
        prio = None
        if needs_prio and with_keys:
            if not params and len(keys) == len(t.match_fields) + 1:
                keys, params = keys[:-1], [keys[-1]]  # `table_add t a KEY PRIO` with no parameters
            if not params:
                raise CliError(f"table {t.preamble.name} has ternary/range keys: give a priority last")
            prio = _int_arg(params[-1], "priority")
            params = params[:-1]
            if prio >= MAX_PRIORITY:
                raise CliError(f"priority {prio} is too large")
        return keys, params, prio

    # ------------------------------------------------------------------ tables: printing
    def _fmt_match(self, t: Any, te: pb.TableEntry) -> list[str]:
        given = {m.field_id: m for m in te.match}
        lines = []
        for mf in t.match_fields:
            m = given.get(mf.id)
            w = mf.bitwidth
            kind = KIND.get(mf.match_type, "exact").upper()
            if m is None:
                text = "*" if mf.match_type != MF.LPM else f"{hex_of(0, w)}/0"
            elif m.HasField("exact"):
                text = hex_of(from_bytes(m.exact.value), w)
            elif m.HasField("lpm"):
                text = f"{hex_of(from_bytes(m.lpm.value), w)}/{m.lpm.prefix_len}"
            elif m.HasField("ternary"):
                text = f"{hex_of(from_bytes(m.ternary.value), w)} &&& {hex_of(from_bytes(m.ternary.mask), w)}"
            elif m.HasField("range"):
                text = f"{hex_of(from_bytes(m.range.low), w)} -> {hex_of(from_bytes(m.range.high), w)}"
            else:
                text = hex_of(from_bytes(m.optional.value), w)
            lines.append(f"* {mf.name:<20}: {kind:<10}{text}")
        return lines

    def _fmt_action(self, ta: pb.TableAction) -> str:
        if ta.HasField("action_profile_member_id"):
            return f"Index: member({ta.action_profile_member_id - 1})"  # handles: shell_profiles.py
        if ta.HasField("action_profile_group_id"):
            return f"Index: group({ta.action_profile_group_id - 1})"
        if not ta.HasField("action"):
            return "EMPTY"
        a = self.s.action_by_id(ta.action.action_id)
        widths = {p.id: p.bitwidth for p in a.params}
        data = ", ".join(hex_of(from_bytes(p.value), widths.get(p.param_id, 8)) for p in ta.action.params)
        return f"{a.preamble.name} - {data}"

    def _dump_entry(self, t: Any, handle: int, te: pb.TableEntry) -> None:
        self.say(f"Dumping entry {handle:#x}")
        self.say("Match key:")
        for line in self._fmt_match(t, te):
            self.say(line)
        if te.priority:
            self.say(f"Priority: {MAX_PRIORITY - te.priority}")
        self._say_action_entry(te.action)

    def _say_action_entry(self, ta: pb.TableAction) -> None:
        """BMv2's line for what an entry does: its action and data, a member or group, or EMPTY."""
        text = self._fmt_action(ta)
        self.say(text if text == "EMPTY" or text.startswith("Index: ") else f"Action entry: {text}")

    # ------------------------------------------------------------------ table commands
    def do_table_add(self, line: str) -> None:
        """table_add <table name> <action name> <match fields> => <action parameters> [priority]"""
        p = self.args(line, 2, self.do_table_add.__doc__ or "")
        t = self.s.find("tables", p[0])
        keys, params, prio = self._split_entry(t, p[2:], with_keys=True)
        te = pb.TableEntry(table_id=t.preamble.id)
        te.match.extend(self._matches(t, keys))
        te.action.action.CopyFrom(self._action(t, p[1], params))
        if prio is not None:
            te.priority = MAX_PRIORITY - prio
        self.say(f"Adding entry to {_table_kind(t)} match table {t.preamble.name}")
        self.s.write(_update(INSERT, table_entry=te))
        self.say(f"Entry has been added with handle {self.s.handle_of(te)}")

    def do_table_delete(self, line: str) -> None:
        """table_delete <table name> <entry handle>"""
        p = self.args(line, 2, self.do_table_delete.__doc__ or "")
        t = self.s.find("tables", p[0])
        handle = _int_arg(p[1], "entry handle")
        te = self.s.entry_by_handle(t.preamble.id, handle)
        self.say(f"Deleting entry {handle} from {t.preamble.name}")
        key = pb.TableEntry(table_id=te.table_id, priority=te.priority)
        key.match.extend(te.match)
        self.s.write(_update(DELETE, table_entry=key))
        self.s.forget(te)

    def do_table_modify(self, line: str) -> None:
        """table_modify <table name> <action name> <entry handle> [action parameters]"""
        p = self.args(line, 3, self.do_table_modify.__doc__ or "")
        t = self.s.find("tables", p[0])
        handle = _int_arg(p[2], "entry handle")
        old = self.s.entry_by_handle(t.preamble.id, handle)
        te = pb.TableEntry(table_id=old.table_id, priority=old.priority)
        te.match.extend(old.match)
        te.action.action.CopyFrom(self._action(t, p[1], p[3:]))
        self.say(f"Modifying entry {handle} for {_table_kind(t)} match table {t.preamble.name}")
        self.s.write(_update(MODIFY, table_entry=te))

    def do_table_set_default(self, line: str) -> None:
        """table_set_default <table name> <action name> <action parameters>"""
        p = self.args(line, 2, self.do_table_set_default.__doc__ or "")
        t = self.s.find("tables", p[0])
        te = pb.TableEntry(table_id=t.preamble.id, is_default_action=True)
        te.action.action.CopyFrom(self._action(t, p[1], p[2:]))
        self.say(f"Setting default action of {t.preamble.name}")
        self.s.write(_update(MODIFY, table_entry=te))

    def do_table_reset_default(self, line: str) -> None:
        """table_reset_default <table name>: back to the program's default action"""
        p = self.args(line, 1, self.do_table_reset_default.__doc__ or "")
        t = self.s.find("tables", p[0])
        self.s.write(
            _update(MODIFY, table_entry=pb.TableEntry(table_id=t.preamble.id, is_default_action=True))
        )

    def do_table_num_entries(self, line: str) -> None:
        """table_num_entries <table name>"""
        p = self.args(line, 1, self.do_table_num_entries.__doc__ or "")
        t = self.s.find("tables", p[0])
        self.say(str(len(self.s.table_entries(t.preamble.id))))

    def do_table_clear(self, line: str) -> None:
        """table_clear <table name>: delete every entry"""
        p = self.args(line, 1, self.do_table_clear.__doc__ or "")
        t = self.s.find("tables", p[0])
        entries = [te for _, te in self.s.table_entries(t.preamble.id) if not te.is_const]
        updates = []
        for te in entries:
            key = pb.TableEntry(table_id=te.table_id, priority=te.priority)
            key.match.extend(te.match)
            updates.append(_update(DELETE, table_entry=key))
        if updates:
            self.s.write(*updates)
        for te in entries:
            self.s.forget(te)

    def do_table_dump(self, line: str) -> None:
        """table_dump <table name>"""
        p = self.args(line, 1, self.do_table_dump.__doc__ or "")
        t = self.s.find("tables", p[0])
        self.say("==========")
        self.say("TABLE ENTRIES")
        for handle, te in self.s.table_entries(t.preamble.id):
            self.say("**********")
            self._dump_entry(t, handle, te)
        if t.implementation_id:
            self.dump_profile(self._profile_of_table(t.preamble.name))
        self.say("==========")
        self.say("Dumping default entry")
        default = self.s.read(
            pb.Entity(table_entry=pb.TableEntry(table_id=t.preamble.id, is_default_action=True))
        )
        self._say_action_entry(default[0].table_entry.action if default else pb.TableAction())
        self.say("==========")

    def do_table_dump_entry(self, line: str) -> None:
        """table_dump_entry <table name> <entry handle>"""
        p = self.args(line, 2, self.do_table_dump_entry.__doc__ or "")
        t = self.s.find("tables", p[0])
        handle = _int_arg(p[1], "entry handle")
        self._dump_entry(t, handle, self.s.entry_by_handle(t.preamble.id, handle))

    def do_show_tables(self, line: str) -> None:
        """show_tables: list the tables, their match keys and implementation"""
        for t in self.s.info().tables:
            self.say(self._table_line(t))

    def _table_line(self, t: Any) -> str:
        keys = ", ".join(f"{m.name}({KIND.get(m.match_type, 'exact')}, {m.bitwidth})" for m in t.match_fields)
        impl = "None"
        if t.implementation_id:
            impl = next(
                (
                    ap.preamble.name
                    for ap in self.s.info().action_profiles
                    if ap.preamble.id == t.implementation_id
                ),
                str(t.implementation_id),
            )
        return f"{t.preamble.name:<30} [implementation={impl}, mk={keys}]"

    def do_table_info(self, line: str) -> None:
        """table_info <table name>: the table and its actions"""
        p = self.args(line, 1, self.do_table_info.__doc__ or "")
        t = self.s.find("tables", p[0])
        self.say(self._table_line(t))
        self.say("*" * 60)
        self._show_actions_of(t)

    def do_table_show_actions(self, line: str) -> None:
        """table_show_actions <table name>"""
        p = self.args(line, 1, self.do_table_show_actions.__doc__ or "")
        self._show_actions_of(self.s.find("tables", p[0]))

    def _show_actions_of(self, t: Any) -> None:
        ids = {r.id for r in t.action_refs}
        for a in self.s.info().actions:
            if a.preamble.id in ids:
                self.say(self._action_line(a))

    @staticmethod
    def _action_line(a: Any) -> str:
        return f"{a.preamble.name:<30} [{', '.join(f'{p.name}({p.bitwidth})' for p in a.params)}]"

    def do_show_actions(self, line: str) -> None:
        """show_actions: list the actions and their parameters"""
        for a in self.s.info().actions:
            self.say(self._action_line(a))

    # ------------------------------------------------------------------ multicast
    def _group(self, gid: int) -> pb.MulticastGroupEntry | None:
        entity = pb.Entity()
        entity.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = gid
        found = self.s.read(entity)
        for e in found:
            g = e.packet_replication_engine_entry.multicast_group_entry
            if g.multicast_group_id == gid:
                return g
        return None

    def _write_group(self, kind: int, gid: int, replicas: list[tuple[int, int]]) -> None:
        entity = pb.Entity()
        g = entity.packet_replication_engine_entry.multicast_group_entry
        g.multicast_group_id = gid
        for port, rid in replicas:
            g.replicas.add(egress_port=port, instance=rid)
        self.s.write(pb.Update(type=kind, entity=entity))

    def _group_replicas(self, gid: int) -> list[tuple[int, int]]:
        g = self._group(gid)
        if g is None:
            raise CliError(f"Invalid mgid {gid} (no such multicast group)")
        return [(r.egress_port, r.instance) for r in g.replicas]

    def do_mc_mgrp_create(self, line: str) -> None:
        """mc_mgrp_create <group id>"""
        gid = _int_arg(self.args(line, 1, self.do_mc_mgrp_create.__doc__ or "")[0], "group id")
        self.say(f"Creating multicast group {gid}")
        self._write_group(INSERT, gid, [])

    def do_mc_mgrp_destroy(self, line: str) -> None:
        """mc_mgrp_destroy <group id>"""
        gid = _int_arg(self.args(line, 1, self.do_mc_mgrp_destroy.__doc__ or "")[0], "group id")
        self.say(f"Destroying multicast group {gid}")
        self._write_group(DELETE, gid, [])
        for node in self.s.nodes.values():
            node.groups.discard(gid)

    def do_mc_node_create(self, line: str) -> None:
        """mc_node_create <rid> <space-separated port list> [ | <space-separated lag list> ]"""
        p = self.args(line, 1, self.do_mc_node_create.__doc__ or "")
        rid = _int_arg(p[0], "rid")
        ports_tokens = p[1:]
        if "|" in ports_tokens:
            i = ports_tokens.index("|")
            if ports_tokens[i + 1 :]:
                raise CliError("LAGs are not supported: P4Runtime replicates to ports only")
            ports_tokens = ports_tokens[:i]
        ports = [_int_arg(x, "port") for x in ports_tokens]
        self.say(f"Creating node with rid {rid} , port map {' '.join(map(str, ports))} and lag map ")
        self.say(f"node was created with handle {self.s.new_node(rid, ports)}")

    def _rewrite_groups(self, groups: set[int]) -> None:
        for gid in sorted(groups):
            replicas = []
            for node in self.s.nodes.values():
                if gid in node.groups:
                    replicas += [(port, node.rid) for port in node.ports]
            self._write_group(MODIFY, gid, replicas)

    def do_mc_node_associate(self, line: str) -> None:
        """mc_node_associate <group id> <node handle>"""
        p = self.args(line, 2, self.do_mc_node_associate.__doc__ or "")
        gid, handle = _int_arg(p[0], "group id"), _int_arg(p[1], "node handle")
        node = self.s.node(handle)
        current = self._group_replicas(gid)
        self.say(f"Associating node {handle} to multicast group {gid}")
        mine = [(port, node.rid) for port in node.ports]
        self._write_group(MODIFY, gid, current + [r for r in mine if r not in current])
        node.groups.add(gid)

    def do_mc_node_dissociate(self, line: str) -> None:
        """mc_node_dissociate <group id> <node handle>"""
        p = self.args(line, 2, self.do_mc_node_dissociate.__doc__ or "")
        gid, handle = _int_arg(p[0], "group id"), _int_arg(p[1], "node handle")
        node = self.s.node(handle)
        if gid not in node.groups:
            raise CliError(f"node {handle} is not associated with multicast group {gid}")
        mine = {(port, node.rid) for port in node.ports}
        self.say(f"Dissociating node {handle} from multicast group {gid}")
        self._write_group(MODIFY, gid, [r for r in self._group_replicas(gid) if r not in mine])
        node.groups.discard(gid)

    def do_mc_node_update(self, line: str) -> None:
        """mc_node_update <node handle> <space-separated port list> [ | <space-separated lag list> ]"""
        p = self.args(line, 1, self.do_mc_node_update.__doc__ or "")
        node = self.s.node(_int_arg(p[0], "node handle"))
        tokens = p[1:]
        if "|" in tokens:
            tokens = tokens[: tokens.index("|")]
        node.ports = [_int_arg(x, "port") for x in tokens]
        self._rewrite_groups(node.groups)

    def do_mc_node_destroy(self, line: str) -> None:
        """mc_node_destroy <node handle>"""
        handle = _int_arg(self.args(line, 1, self.do_mc_node_destroy.__doc__ or "")[0], "node handle")
        node = self.s.node(handle)
        self.say(f"Destroying node {handle}")
        groups = set(node.groups)
        node.groups.clear()
        self._rewrite_groups(groups)
        del self.s.nodes[handle]

    def do_mc_dump(self, line: str) -> None:
        """mc_dump: every multicast group and its replicas"""
        entity = pb.Entity()
        entity.packet_replication_engine_entry.multicast_group_entry.SetInParent()
        self.say("==========")
        self.say("MC ENTRIES")
        for e in self.s.read(entity):
            g = e.packet_replication_engine_entry.multicast_group_entry
            self.say("**********")
            self.say(f"mgrp({g.multicast_group_id})")
            by_rid: dict[int, list[int]] = {}
            for r in g.replicas:
                by_rid.setdefault(r.instance, []).append(r.egress_port)
            for rid, ports in by_rid.items():
                self.say(f"  -> (rid={rid}) -> (ports=[{', '.join(map(str, ports))}], lags=[])")
        self.say("==========")

    # ------------------------------------------------------------------ mirroring
    def _session_update(self, kind: int, sid: int, replicas: list[tuple[int, int]]) -> pb.Update:
        entity = pb.Entity()
        s = entity.packet_replication_engine_entry.clone_session_entry
        s.session_id = sid
        for port, rid in replicas:
            s.replicas.add(egress_port=port, instance=rid)
        return pb.Update(type=kind, entity=entity)

    def _set_session(self, sid: int, replicas: list[tuple[int, int]]) -> None:
        try:
            self.s.write(self._session_update(INSERT, sid, replicas))
        except CliError as e:
            if "ALREADY_EXISTS" not in str(e):
                raise
            self.s.write(self._session_update(MODIFY, sid, replicas))  # BMv2 overwrites a session

    def do_mirroring_add(self, line: str) -> None:
        """mirroring_add <mirror_id> <egress_port>"""
        p = self.args(line, 2, self.do_mirroring_add.__doc__ or "")
        self._set_session(_int_arg(p[0], "mirror id"), [(_int_arg(p[1], "egress port"), 0)])

    def do_mirroring_add_mc(self, line: str) -> None:
        """mirroring_add_mc <mirror_id> <mgrp>: the session copies the group's current replicas"""
        p = self.args(line, 2, self.do_mirroring_add_mc.__doc__ or "")
        gid = _int_arg(p[1], "group id")
        self._set_session(_int_arg(p[0], "mirror id"), self._group_replicas(gid))

    def do_mirroring_delete(self, line: str) -> None:
        """mirroring_delete <mirror_id>"""
        sid = _int_arg(self.args(line, 1, self.do_mirroring_delete.__doc__ or "")[0], "mirror id")
        self.s.write(self._session_update(DELETE, sid, []))

    def do_mirroring_get(self, line: str) -> None:
        """mirroring_get <mirror_id>"""
        sid = _int_arg(self.args(line, 1, self.do_mirroring_get.__doc__ or "")[0], "mirror id")
        entity = pb.Entity()
        entity.packet_replication_engine_entry.clone_session_entry.session_id = sid
        for e in self.s.read(entity):
            s = e.packet_replication_engine_entry.clone_session_entry
            if s.session_id == sid:
                ports = [r.egress_port for r in s.replicas]
                port = ports[0] if len(ports) == 1 else None
                self.say(f"MirroringSessionConfig(port={port}, ports={ports})")
                return
        raise CliError(f"Invalid mirroring operation (SESSION_NOT_FOUND): {sid}")

    # ------------------------------------------------------------------ registers
    def do_register_read(self, line: str) -> None:
        """register_read <name> [index]"""
        p = self.args(line, 1, self.do_register_read.__doc__ or "")
        r = self.s.find("registers", p[0])
        entry = pb.RegisterEntry(register_id=r.preamble.id)
        if len(p) > 1:
            entry.index.index = _int_arg(p[1], "index")
        cells = sorted(
            (e.register_entry.index.index, from_bytes(e.register_entry.data.bitstring))
            for e in self.s.read(pb.Entity(register_entry=entry))
        )
        if len(p) > 1:
            self.say(f"{r.preamble.name}[{p[1]}]= {cells[0][1] if cells else 0}")
        else:
            self.say(f"{r.preamble.name}= {', '.join(str(v) for _, v in cells)}")

    def do_register_write(self, line: str) -> None:
        """register_write <name> <index> <value>"""
        p = self.args(line, 3, self.do_register_write.__doc__ or "")
        r = self.s.find("registers", p[0])
        width = r.type_spec.bitstring.bit.bitwidth or r.type_spec.bitstring.int.bitwidth
        entry = pb.RegisterEntry(register_id=r.preamble.id)
        entry.index.index = _int_arg(p[1], "index")
        entry.data.bitstring = to_bytes(parse_int(p[2], width, "value"), width)
        self.s.write(_update(MODIFY, register_entry=entry))

    def do_register_reset(self, line: str) -> None:
        """register_reset <name>: every cell to 0"""
        r = self.s.find("registers", self.args(line, 1, self.do_register_reset.__doc__ or "")[0])
        entry = pb.RegisterEntry(register_id=r.preamble.id)
        entry.data.bitstring = b"\x00"
        self.s.write(_update(MODIFY, register_entry=entry))

    # ------------------------------------------------------------------ counters
    def _direct_entry(self, table_id: int, handle: int) -> pb.TableEntry:
        te = self.s.entry_by_handle(table_id, handle)
        key = pb.TableEntry(table_id=te.table_id, priority=te.priority)
        key.match.extend(te.match)
        return key

    def do_counter_read(self, line: str) -> None:
        """counter_read <name> <index>  (a direct counter: <name> <entry handle>)"""
        p = self.args(line, 2, self.do_counter_read.__doc__ or "")
        kind, c = self.s.find_counter(p[0])
        idx = _int_arg(p[1], "index")
        if kind == "counters":
            entry = pb.CounterEntry(counter_id=c.preamble.id)
            entry.index.index = idx
            found = self.s.read(pb.Entity(counter_entry=entry))
            data = found[0].counter_entry.data if found else pb.CounterData()
        else:
            dc = pb.DirectCounterEntry()
            dc.table_entry.CopyFrom(self._direct_entry(c.direct_table_id, idx))
            found = self.s.read(pb.Entity(direct_counter_entry=dc))
            data = found[0].direct_counter_entry.data if found else pb.CounterData()
            tables = {t.preamble.id: t.preamble.name for t in self.s.info().tables}
            self.say(
                f"this is the direct counter for table {tables.get(c.direct_table_id, c.direct_table_id)}"
            )
        # simple_switch_CLI's own line (the repr of its Thrift BmCounterValue): scripts parse it
        self.say(
            f"{c.preamble.name}[{idx}]=  BmCounterValue(packets={data.packet_count}, bytes={data.byte_count})"
        )

    def do_counter_write(self, line: str) -> None:
        """counter_write <name> <index> <packets> <bytes>"""
        p = self.args(line, 4, self.do_counter_write.__doc__ or "")
        kind, c = self.s.find_counter(p[0])
        idx = _int_arg(p[1], "index")
        data = pb.CounterData(packet_count=_int_arg(p[2], "packets"), byte_count=_int_arg(p[3], "bytes"))
        self._write_counter(kind, c, idx, data)

    def _write_counter(self, kind: str, c: Any, idx: int, data: pb.CounterData) -> None:
        if kind == "counters":
            entry = pb.CounterEntry(counter_id=c.preamble.id, data=data)
            entry.index.index = idx
            self.s.write(_update(MODIFY, counter_entry=entry))
        else:
            dc = pb.DirectCounterEntry(data=data)
            dc.table_entry.CopyFrom(self._direct_entry(c.direct_table_id, idx))
            self.s.write(_update(MODIFY, direct_counter_entry=dc))

    def do_counter_reset(self, line: str) -> None:
        """counter_reset <name>: every cell (every entry's, for a direct counter) to 0"""
        kind, c = self.s.find_counter(self.args(line, 1, self.do_counter_reset.__doc__ or "")[0])
        updates = []
        if kind == "counters":
            for i in range(c.size):
                entry = pb.CounterEntry(counter_id=c.preamble.id, data=pb.CounterData())
                entry.index.index = i
                updates.append(_update(MODIFY, counter_entry=entry))
        else:
            for handle, _ in self.s.table_entries(c.direct_table_id):
                dc = pb.DirectCounterEntry(data=pb.CounterData())
                dc.table_entry.CopyFrom(self._direct_entry(c.direct_table_id, handle))
                updates.append(_update(MODIFY, direct_counter_entry=dc))
        for start in range(0, len(updates), 1024):
            self.s.write(*updates[start : start + 1024])

    # ------------------------------------------------------------------ meters
    def _meter_target(
        self, name: str, idx: int
    ) -> tuple[str, Any, Callable[[pb.MeterConfig | None], pb.Entity]]:
        kind, m = self.s.find_meter(name)

        def entity(config: pb.MeterConfig | None) -> pb.Entity:
            if kind == "meters":
                me = pb.MeterEntry(meter_id=m.preamble.id)
                me.index.index = idx
                if config is not None:
                    me.config.CopyFrom(config)
                return pb.Entity(meter_entry=me)
            dm = pb.DirectMeterEntry()
            dm.table_entry.CopyFrom(self._direct_entry(m.direct_table_id, idx))
            if config is not None:
                dm.config.CopyFrom(config)
            return pb.Entity(direct_meter_entry=dm)

        return kind, m, entity

    def do_meter_set_rates(self, line: str) -> None:
        """meter_set_rates <name> <index> <rate_1>:<burst_1> <rate_2>:<burst_2>
        (rates in units per microsecond, as BMv2 takes them: committed first, then peak)"""
        p = self.args(line, 4, "meter_set_rates <name> <index> <rate_1>:<burst_1> <rate_2>:<burst_2>")
        idx = _int_arg(p[1], "index")
        _, _, entity = self._meter_target(p[0], idx)
        self.s.write(pb.Update(type=MODIFY, entity=entity(_meter_config(p[2:4]))))

    def do_meter_array_set_rates(self, line: str) -> None:
        """meter_array_set_rates <name> <rate_1>:<burst_1> <rate_2>:<burst_2>: every cell of a meter array"""
        p = self.args(line, 3, "meter_array_set_rates <name> <rate_1>:<burst_1> <rate_2>:<burst_2>")
        kind, m = self.s.find_meter(p[0])
        if kind != "meters":
            raise CliError(
                f"{m.preamble.name} is a direct meter: set its cells by entry handle (meter_set_rates)"
            )
        config = _meter_config(p[1:3])
        updates = []
        for idx in range(m.size):
            me = pb.MeterEntry(meter_id=m.preamble.id, config=config)
            me.index.index = idx
            updates.append(pb.Update(type=MODIFY, entity=pb.Entity(meter_entry=me)))
        self.s.write(*updates)

    def do_meter_get_rates(self, line: str) -> None:
        """meter_get_rates <name> <index>"""
        p = self.args(line, 2, self.do_meter_get_rates.__doc__ or "")
        idx = _int_arg(p[1], "index")
        kind, _, entity = self._meter_target(p[0], idx)
        found = self.s.read(entity(None))
        if not found:
            raise CliError(f"no meter cell {idx}")
        e = found[0]
        cfg = e.meter_entry.config if kind == "meters" else e.direct_meter_entry.config
        for i, (rate, burst) in enumerate(((cfg.cir, cfg.cburst), (cfg.pir, cfg.pburst))):
            self.say(f"{i}: info rate = {rate / 1_000_000}, burst size = {burst}")
