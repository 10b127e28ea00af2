"""P4 1.2.4 initial entries over P4Runtime (tests/p4kit/programs/table_initial_entries_mutable.p4):
a table declared with `entries` (no const) is read back with its two entries, accepts new entries, and
lets the control plane modify and delete the entry not marked const, but not the const one."""

from __future__ import annotations

from p4.v1 import p4runtime_pb2 as pb

from ._p4rt_client import update
from .test_p4runtime_compiled import compiled, exact_entry, write_codes  # noqa: F401 (fixture)


def _set(sw, te: pb.TableEntry, value: int) -> pb.TableEntry:
    te.action.action.action_id = sw.id("MyIngress.set")
    te.action.action.params.add(param_id=1, value=bytes([value]))
    return te


def test_initial_entries_are_writable_but_const_ones_stay(compiled) -> None:  # noqa: F811
    sw = compiled("table_initial_entries_mutable")
    c = sw.client
    tid = sw.id("MyIngress.t")
    info = next(t for t in sw.p4info.tables if t.preamble.id == tid)
    assert info.has_initial_entries and not info.is_const_table

    def entries() -> dict[bytes, tuple[bool, bytes]]:
        got = [e.table_entry for e in c.read(pb.Entity(table_entry=pb.TableEntry(table_id=tid)))]
        return {e.match[0].exact.value: (e.is_const, e.action.action.params[0].value) for e in got}

    assert entries() == {b"\x01": (True, b"\x11"), b"\x02": (False, b"\x22")}
    # add a third entry, change and then delete the non-const initial one
    assert write_codes(
        c, update("INSERT", pb.Entity(table_entry=_set(sw, exact_entry(tid, b"\x03"), 0x33)))
    ) == ["OK"]
    assert write_codes(
        c, update("MODIFY", pb.Entity(table_entry=_set(sw, exact_entry(tid, b"\x02"), 0x2F)))
    ) == ["OK"]
    assert entries()[b"\x02"] == (False, b"\x2f") and entries()[b"\x03"] == (False, b"\x33")
    assert write_codes(c, update("DELETE", pb.Entity(table_entry=exact_entry(tid, b"\x02")))) == ["OK"]
    # the const initial entry can be neither changed nor removed
    modify = update("MODIFY", pb.Entity(table_entry=_set(sw, exact_entry(tid, b"\x01"), 0x10)))
    assert write_codes(c, modify) == ["PERMISSION_DENIED"]
    assert write_codes(c, update("DELETE", pb.Entity(table_entry=exact_entry(tid, b"\x01")))) == [
        "PERMISSION_DENIED"
    ]
    assert entries() == {b"\x01": (True, b"\x11"), b"\x03": (False, b"\x33")}
