"""Match tables of every kind through the control API and packets: exact, lpm, ternary with
priorities, range, optional, multi-field keys, defaults, const entries, action profiles and selectors,
and the typed errors that leave state unchanged."""

from __future__ import annotations

import pytest

from p4kit.switch import Switch
from p4kit.switch.errors import (
    BadActionError,
    BadKeyError,
    ConstViolationError,
    DuplicateEntryError,
    EntryNotFoundError,
    InvalidOperationError,
    UnknownNameError,
)
from p4kit.switch.jsonbuild import HDR, HX, RD, F, JsonBuilder, P, assign


def program(keys, *, entries=None, profile=None, selector=False, default_const=False, with_counters=False):
    """h = k1(16) k2(8) out(8); table t sets h.out and the egress port; miss writes 0xEE to port 1."""
    b = JsonBuilder()
    b.add_header("h", [("k1", 16), ("k2", 8), ("out", 8)])
    b.state("start", [b.extract("h")])
    b.deparse("h")
    b.action(
        "set",
        [("v", 8), ("port", 9)],
        [assign(F("h", "out"), RD(0)), assign(F("standard_metadata", "egress_spec"), RD(1))],
    )
    b.action(
        "miss", [], [assign(F("h", "out"), HX(0xEE)), assign(F("standard_metadata", "egress_spec"), HX(1))]
    )
    b.action("drop", [], [P("mark_to_drop", HDR("standard_metadata"))])
    if profile:
        b.action_profile("prof", "crc16" if selector else None, [F("h", "k2")] if selector else None)
    b.table(
        "t",
        [(mt, ["h", f]) for mt, f in keys],
        ["set", "drop", "miss"],
        default=("miss", []),
        default_const=default_const,
        entries=entries,
        action_profile="prof" if profile else None,
        selector=selector,
        with_counters=with_counters,
    )
    b.init("ingress", "t")
    sw = Switch()
    sw.raise_internal_errors = True
    sw.load_pipeline(b.build())
    return sw


def send(sw: Switch, k1: int, k2: int = 0) -> tuple[int, int] | None:
    out = sw.process_packet(0, k1.to_bytes(2, "big") + bytes([k2, 0]) + b"payload")
    if not out:
        return None
    port, data = out[0]
    assert data[4:] == b"payload"
    return port, data[3]


def test_exact_hit_miss_modify_delete() -> None:
    sw = program([("exact", "k1")])
    h = sw.table_add("t", [0x1234], "set", [7, 3])
    assert send(sw, 0x1234) == (3, 7)
    assert send(sw, 0x1235) == (1, 0xEE)
    sw.table_modify("t", h, "set", {"v": 9, "port": 4})
    assert send(sw, 0x1234) == (4, 9)
    sw.table_delete("t", h)
    assert send(sw, 0x1234) == (1, 0xEE)
    assert sw.table_get_entries("t") == []


def test_exact_two_fields_and_find() -> None:
    sw = program([("exact", "k1"), ("exact", "k2")])
    h = sw.table_add("t", {"h.k1": 5, "h.k2": 6}, "set", [1, 2])
    assert send(sw, 5, 6) == (2, 1)
    assert send(sw, 5, 7) == (1, 0xEE)
    assert sw.table_find("t", [5, 6]) == h
    assert sw.table_find("t", [5, 7]) is None


def test_lpm_longest_prefix_wins() -> None:
    sw = program([("lpm", "k1")])
    sw.table_add("t", [(0x1200, 8)], "set", [1, 1])
    sw.table_add("t", [(0x1230, 12)], "set", [2, 2])
    sw.table_add("t", [(0, 0)], "set", [3, 3])
    assert send(sw, 0x1234) == (2, 2)
    assert send(sw, 0x12FF) == (1, 1)
    assert send(sw, 0x9999) == (3, 3)
    # host bits are masked on insert, so this is the same /8 entry
    with pytest.raises(DuplicateEntryError):
        sw.table_add("t", [(0x12AB, 8)], "set", [4, 4])


def test_lpm_with_exact_field() -> None:
    sw = program([("exact", "k2"), ("lpm", "k1")])
    sw.table_add("t", [1, (0x1200, 8)], "set", [1, 1])
    sw.table_add("t", [2, (0x1234, 16)], "set", [2, 2])
    assert send(sw, 0x1234, 1) == (1, 1)
    assert send(sw, 0x1234, 2) == (2, 2)
    assert send(sw, 0x1235, 2) == (1, 0xEE)


def test_ternary_priority_larger_wins_ties_go_to_older() -> None:
    sw = program([("ternary", "k1")])
    sw.table_add("t", [(0x1200, 0xFF00)], "set", [1, 1], priority=10)
    sw.table_add("t", [(0x1234, 0xFFFF)], "set", [2, 2], priority=20)
    sw.table_add("t", [(0x00FF, 0x00FF)], "set", [3, 3], priority=5)
    assert send(sw, 0x1234) == (2, 2)
    assert send(sw, 0x12FF) == (1, 1)
    assert send(sw, 0x34FF) == (3, 3)
    sw.table_add("t", [(0x0034, 0x00FF)], "set", [4, 4], priority=5)
    sw.table_add("t", [(0x0004, 0x000F)], "set", [5, 5], priority=5)
    assert send(sw, 0x5534) == (4, 4)  # both priority 5 match: the older entry wins
    # same key, other priority: a different entry in P4Runtime terms
    sw.table_add("t", [(0x1234, 0xFFFF)], "set", [6, 6], priority=30)
    assert send(sw, 0x1234) == (6, 6)
    with pytest.raises(DuplicateEntryError):
        sw.table_add("t", [(0x1234, 0xFFFF)], "set", [6, 6], priority=30)


def test_range_and_optional() -> None:
    sw = program([("range", "k1"), ("optional", "k2")])
    sw.table_add("t", [(10, 20), (7, False)], "set", [1, 1], priority=2)
    sw.table_add("t", [(0, 100), (0, True)], "set", [2, 2], priority=1)
    assert send(sw, 15, 7) == (1, 1)
    assert send(sw, 15, 8) == (2, 2)
    assert send(sw, 101, 7) == (1, 0xEE)
    assert send(sw, 20, 7) == (1, 1)
    assert send(sw, 21, 7) == (2, 2)


def test_dont_care_fields_as_none() -> None:
    sw = program([("exact", "k2"), ("ternary", "k1")])
    sw.table_add("t", [3, None], "set", [1, 1], priority=1)
    assert send(sw, 0xABCD, 3) == (1, 1)


def test_default_action_set_and_reset() -> None:
    sw = program([("exact", "k1")])
    sw.table_set_default("t", "set", [0x42, 9])
    assert send(sw, 1) == (9, 0x42)
    assert sw.table_get_default("t").action == "set"
    sw.table_reset_default("t")
    assert send(sw, 1) == (1, 0xEE)
    sw.table_set_default("t", "drop")
    assert send(sw, 1) is None
    assert "drop port" in sw.drop_log[0]


def test_const_default_cannot_change() -> None:
    sw = program([("exact", "k1")], default_const=True)
    with pytest.raises(ConstViolationError):
        sw.table_set_default("t", "set", [1, 1])
    assert send(sw, 1) == (1, 0xEE)


def test_const_entries_from_json_and_their_priorities() -> None:
    entries = [
        {
            "match_key": [{"match_type": "ternary", "key": "0x1200", "mask": "0xff00"}],
            "action_entry": {"action_id": 0, "action_data": ["0x1", "0x1"]},
            "priority": 1,
        },
        {
            "match_key": [{"match_type": "ternary", "key": "0x1234", "mask": "0xffff"}],
            "action_entry": {"action_id": 0, "action_data": ["0x2", "0x2"]},
            "priority": 2,
        },
    ]
    sw = program([("ternary", "k1")], entries=entries)
    assert send(sw, 0x1234) == (1, 1)  # BMv2: the smaller JSON priority (first entry) wins
    views = sw.table_get_entries("t")
    assert [v.is_const for v in views] == [True, True]
    assert views[0].priority > views[1].priority  # shown in P4Runtime order
    assert views[0].keys == [(0x1200, 0xFF00)]
    with pytest.raises(ConstViolationError):
        sw.table_delete("t", views[0].handle)
    sw.table_clear("t")
    assert len(sw.table_get_entries("t")) == 2
    with pytest.raises(ConstViolationError, match="immutable"):
        sw.table_add("t", [(1, 1)], "set", [1, 1], priority=1)


def test_errors_leave_state_unchanged() -> None:
    sw = program([("exact", "k1"), ("exact", "k2")])
    sw.table_add("t", [1, 2], "set", [1, 1])
    with pytest.raises(UnknownNameError, match="unknown table 'nope'"):
        sw.table_add("nope", [1, 2], "set", [1, 1])
    with pytest.raises(BadKeyError, match="takes 2 key field"):
        sw.table_add("t", [1], "set", [1, 1])
    with pytest.raises(BadKeyError, match="does not fit in 8 bits"):
        sw.table_add("t", [1, 256], "set", [1, 1])
    with pytest.raises(BadActionError, match="not one of"):
        sw.table_add("t", [1, 3], "nope", [])
    with pytest.raises(BadActionError, match="takes 2 parameter"):
        sw.table_add("t", [1, 3], "set", [1])
    with pytest.raises(BadActionError, match="does not fit in 9 bits"):
        sw.table_add("t", [1, 3], "set", [1, 512])
    with pytest.raises(DuplicateEntryError):
        sw.table_add("t", [1, 2], "set", [5, 5])
    with pytest.raises(EntryNotFoundError):
        sw.table_delete("t", 99)
    with pytest.raises(EntryNotFoundError):
        sw.table_modify("t", 99, "set", [1, 1])
    assert len(sw.table_get_entries("t")) == 1
    assert send(sw, 1, 2) == (1, 1)
    assert send(sw, 1, 3) == (1, 0xEE)


def test_action_profile_members() -> None:
    sw = program([("exact", "k1")], profile=True)
    sw.act_prof_add_member("prof", 1, "set", [0x11, 2])
    sw.act_prof_add_member("prof", 2, "set", [0x22, 3])
    h = sw.table_add("t", [5], member=1)
    assert send(sw, 5) == (2, 0x11)
    sw.act_prof_modify_member("prof", 1, "set", [0x33, 4])
    assert send(sw, 5) == (4, 0x33)
    sw.table_modify("t", h, member=2)
    assert send(sw, 5) == (3, 0x22)
    with pytest.raises(InvalidOperationError, match="still used"):
        sw.act_prof_delete_member("prof", 2)
    with pytest.raises(InvalidOperationError, match="no selector"):
        sw.act_prof_create_group("prof", 1)
    with pytest.raises(InvalidOperationError):
        sw.table_add("t", [6], "set", [1, 1])
    assert sw.act_prof_get_members("prof") == [(1, "set", (0x33, 4)), (2, "set", (0x22, 3))]


def test_action_selector_hashes_over_selector_fields() -> None:
    sw = program([("exact", "k1")], profile=True, selector=True)
    for m in range(4):
        sw.act_prof_add_member("prof", m, "set", [m, m + 1])
    sw.act_prof_create_group("prof", 7, [0, 1, 2, 3])
    sw.table_add("t", [5], group=7)
    seen = {}
    for k2 in range(64):
        r = send(sw, 5, k2)
        assert r is not None
        seen.setdefault(r, set()).add(k2)
        assert send(sw, 5, k2) == r  # deterministic per flow
    assert len(seen) > 1  # spread over members
    sw.act_prof_set_group_members("prof", 7, [2])
    assert {send(sw, 5, k2) for k2 in range(16)} == {(3, 2)}
    sw.act_prof_remove_member_from_group("prof", 7, 2)
    assert send(sw, 5, 1) is not None  # empty group: the default action runs
    assert sw.act_prof_get_groups("prof") == [(7, [])]


def test_direct_counter_counts_hits_only() -> None:
    sw = program([("exact", "k1")], with_counters=True)
    h = sw.table_add("t", [1], "set", [1, 1])
    for _ in range(3):
        send(sw, 1)
    send(sw, 2)
    assert sw.direct_counter_read("t", h) == (3, 3 * 11)
    sw.direct_counter_write("t", h, 10, 20)
    assert sw.table_get_entry("t", h).packets == 10
    sw.direct_counter_reset("t")
    assert sw.direct_counter_read("t", h) == (0, 0)


def test_table_capacity() -> None:
    b_sw = program([("exact", "k2")])
    info = b_sw.table_info("t")
    assert info.max_size == 1024
    for i in range(256):
        b_sw.table_add("t", [i], "set", [i, 1])
    assert b_sw.table_num_entries("t") == 256
    assert send(b_sw, 0, 200) == (1, 200)


def test_bad_pipeline_keeps_the_old_one() -> None:
    from p4kit.switch.errors import PipelineLoadError

    sw = program([("exact", "k1")])
    sw.table_add("t", [1], "set", [7, 3])
    bad = JsonBuilder()
    bad.add_header("h", [("x", 8)])
    bad.state("start", [bad.extract("h")])
    bad.action("weird", [], [P("frobnicate", HX(1))])
    bad.init("ingress", bad.call("weird"))
    with pytest.raises(PipelineLoadError, match="unsupported primitive 'frobnicate'"):
        sw.load_pipeline(bad.build())
    with pytest.raises(PipelineLoadError, match="does not parse"):
        sw.load_pipeline("{not json")
    with pytest.raises(PipelineLoadError):
        sw.load_pipeline({"headers": [{"name": "x", "header_type": "missing"}]})
    assert send(sw, 1) == (3, 7)
    assert Switch().has_pipeline is False
    with pytest.raises(Exception, match="no pipeline loaded"):
        Switch().table_add("t", [1], "set", [1, 1])


def test_table_full() -> None:
    from p4kit.switch.errors import TableFullError

    b = JsonBuilder()
    b.add_header("h", [("k", 8)])
    b.state("start", [b.extract("h")])
    b.deparse("h")
    b.action("a", [], [])
    b.table("t", [("exact", ["h", "k"])], ["a"], size=2)
    b.init("ingress", "t")
    sw = Switch()
    sw.load_pipeline(b.build())
    sw.table_add("t", [1], "a")
    sw.table_add("t", [2], "a")
    with pytest.raises(TableFullError):
        sw.table_add("t", [3], "a")
    assert TableFullError.grpc_code == "RESOURCE_EXHAUSTED"
