"""simple_switch_CLI's table commands that find or change one entry by more than its handle:
table_dump_entry_from_key (by its match key) and table_set_timeout (its idle timeout, P4Runtime's
idle_timeout_ns, for tables declared with support_timeout)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from p4.v1 import p4runtime_pb2 as pb

from p4kit.cli.session import MAX_PRIORITY, PRIORITY_MATCH_KINDS, Session
from p4kit.cli.values import CliError, words


class EntryCommands:
    """Mixed into RuntimeShell, which provides the session `s` and the helpers named below."""

    s: Session

    if TYPE_CHECKING:  # RuntimeShell's

        def say(self, text: str = "") -> None: ...
        def _matches(self, t: Any, tokens: list[str]) -> list[pb.FieldMatch]: ...
        def _dump_entry(self, t: Any, handle: int, te: pb.TableEntry) -> None: ...

    def do_table_dump_entry_from_key(self, line: str) -> None:
        """table_dump_entry_from_key <table name> <match fields> [priority]"""
        parts = words(line)
        if not parts:
            raise CliError(f"Invalid number of arguments; usage: {self.do_table_dump_entry_from_key.__doc__}")
        t = self.s.find("tables", parts[0])
        keys = parts[1:]
        wanted = pb.TableEntry(table_id=t.preamble.id)
        if any(m.match_type in PRIORITY_MATCH_KINDS for m in t.match_fields):
            if not keys:
                raise CliError("Table is ternary, but could not extract a valid priority from args")
            try:
                prio = int(keys.pop(), 0)
            except ValueError:
                raise CliError("Table is ternary, but could not extract a valid priority from args") from None
            wanted.priority = MAX_PRIORITY - prio
        if len(keys) != len(t.match_fields):
            raise CliError(f"Table {t.preamble.name} needs {len(t.match_fields)} key fields")
        wanted.match.extend(self._matches(t, keys))
        key = self.s.entry_key(wanted)
        for handle, te in self.s.table_entries(t.preamble.id):
            if self.s.entry_key(te) == key:
                self._dump_entry(t, handle, te)
                return
        raise CliError("Invalid table operation (BAD_MATCH_KEY): no entry with this key")

    def do_table_set_timeout(self, line: str) -> None:
        """table_set_timeout <table_name> <entry handle> <timeout (ms)>"""
        parts = words(line)
        if len(parts) != 3:
            raise CliError(f"Invalid number of arguments; usage: {self.do_table_set_timeout.__doc__}")
        t = self.s.find("tables", parts[0])
        if not t.idle_timeout_behavior:
            raise CliError(f"Table {t.preamble.name} does not support entry timeouts (support_timeout)")
        try:
            handle, ms = int(parts[1], 0), int(parts[2], 0)
        except ValueError:
            raise CliError("Bad format for entry handle or timeout") from None
        if ms < 0:
            raise CliError("the timeout must not be negative")
        te = self.s.entry_by_handle(t.preamble.id, handle)
        new = pb.TableEntry(table_id=te.table_id, priority=te.priority, idle_timeout_ns=ms * 1_000_000)
        new.match.extend(te.match)
        new.action.CopyFrom(te.action)
        self.s.write(pb.Update(type=pb.Update.MODIFY, entity=pb.Entity(table_entry=new)))
        self.say(f"Setting a {ms} ms timeout for entry {handle}")
