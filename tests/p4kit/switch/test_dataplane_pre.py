"""The packet replication engine and simple_switch's order of decisions: multicast replicas with
egress_rid, ingress and egress clones (with preserved field lists and truncation), resubmit,
recirculate, digests, drops, the CPU port and packet-out."""

from __future__ import annotations

import pytest

from p4kit.switch import DigestMessage, PacketIn, Switch
from p4kit.switch.errors import BadIndexError, DuplicateEntryError, EntryNotFoundError, NoPipelineError
from p4kit.switch.jsonbuild import HDR, HX, RD, B, F, JsonBuilder, P, X, assign

SM = "standard_metadata"


def program() -> dict:
    """h = op mark itype rid (8 bits each). Ingress table `ti` on h.op; egress records instance_type
    and egress_rid into the packet, and recirculates (op 4) or clones (op 5) NORMAL packets."""
    b = JsonBuilder()
    b.add_header("h", [("op", 8), ("mark", 8), ("itype", 8), ("rid", 8)])
    b.scalar("cnt", 8)
    b.state("start", [b.extract("h")])
    b.deparse("h")
    b.field_list(1, "keep", [F("scalars", "cnt")])
    b.learn_list(1, "learn_t", [F("h", "op"), F("h", "mark")])
    b.action("fwd", [("port", 9)], [assign(F(SM, "egress_spec"), RD(0)), assign(F("h", "mark"), HX(0x11))])
    b.action("mc", [("grp", 16)], [assign(F(SM, "mcast_grp"), RD(0))])
    b.action(
        "clone_i2e",
        [("sess", 32)],
        [
            assign(F("scalars", "cnt"), HX(0x5A)),
            P("clone_ingress_pkt_to_egress", RD(0), HX(1)),
            assign(F(SM, "egress_spec"), HX(1)),
            assign(F("h", "mark"), HX(0x11)),
        ],
    )
    b.action(
        "resub",
        [],
        [assign(F("scalars", "cnt"), HX(0x33)), P("resubmit", HX(1)), assign(F(SM, "egress_spec"), HX(1))],
    )
    b.action("digest", [], [P("generate_digest", HX(1), HX(1)), assign(F(SM, "egress_spec"), HX(1))])
    b.action("drop", [], [P("mark_to_drop", HDR(SM))])
    b.action("trunc", [], [P("truncate", HX(2)), assign(F(SM, "egress_spec"), HX(1))])
    b.action("fin", [], [assign(F("h", "mark"), F("scalars", "cnt")), assign(F(SM, "egress_spec"), HX(2))])
    b.action(
        "rec",
        [],
        [assign(F("h", "itype"), F(SM, "instance_type")), assign(F("h", "rid"), F(SM, "egress_rid"))],
    )
    b.action("recirc", [], [assign(F("scalars", "cnt"), HX(0x44)), P("recirculate", HX(1))])
    b.action("e2e", [], [P("clone_egress_pkt_to_egress", HX(6), HX(0))])
    b.action("noop", [], [])
    b.table(
        "ti",
        [("exact", ["h", "op"])],
        ["fwd", "mc", "clone_i2e", "resub", "digest", "drop", "trunc", "noop"],
        default=("noop", []),
    )
    b.call("fin", name="tfin")
    again = X("or", X("==", F(SM, "instance_type"), HX(6)), X("==", F(SM, "instance_type"), HX(4)))
    b.conditional("again", again, "tfin", "ti")
    b.init("ingress", "again")
    b.call("rec", pipeline="egress", name="trec")
    b.call("recirc", pipeline="egress", name="trecirc", next_node="trec")
    b.call("e2e", pipeline="egress", name="te2e", next_node="trec")
    normal = X("==", F(SM, "instance_type"), HX(0))
    first_pass = X("!=", F("scalars", "cnt"), HX(0x44))  # instance_type is NORMAL again after a unicast
    b.conditional(
        "e1", X("and", X("==", F("h", "op"), HX(4)), first_pass), "trecirc", "e2", pipeline="egress"
    )
    b.conditional("e2", X("and", X("==", F("h", "op"), HX(5)), normal), "te2e", "trec", pipeline="egress")
    b.init("egress", "e1")
    return b.build()


ENTRIES = [  # h.op -> what table ti does with the packet
    (0, "fwd", [3]),
    (1, "mc", [1]),
    (2, "clone_i2e", [5]),
    (3, "resub", []),
    (4, "fwd", [1]),
    (5, "fwd", [1]),
    (6, "digest", []),
    (7, "drop", []),
    (8, "trunc", []),
    (9, "fwd", [64]),
]


def loaded_switch() -> Switch:
    s = Switch(cpu_port=64)
    s.load_pipeline(program())
    for op, action, params in ENTRIES:
        s.table_add("ti", [op], action, params)
    return s


@pytest.fixture
def sw() -> Switch:
    s = loaded_switch()
    s.raise_internal_errors = True
    return s


def pkt(op: int) -> bytes:
    return bytes([op, 0, 0xFF, 0xFF]) + b"PAYLOAD"


def test_unicast_records_normal_instance(sw: Switch) -> None:
    assert sw.process_packet(0, pkt(0)) == [(3, bytes([0, 0x11, 0, 0]) + b"PAYLOAD")]


def test_multicast_replicas_carry_rid_and_replication_type(sw: Switch) -> None:
    sw.mc_group_create(1, [(2, 10), (3, 11), (2, 12)])
    out = sw.process_packet(0, pkt(1))
    got = sorted((p, d[2], d[3]) for p, d in out)
    assert got == [(2, 5, 10), (2, 5, 12), (3, 5, 11)]
    assert sw.mc_group_get(1) == [(2, 10), (3, 11), (2, 12)]
    sw.mc_group_modify(1, [(4, 1)])
    assert [(p, d[2], d[3]) for p, d in sw.process_packet(0, pkt(1))] == [(4, 5, 1)]
    sw.mc_group_delete(1)
    assert sw.process_packet(0, pkt(1)) == []
    assert "no replicas" in sw.drop_log[0]


def test_multicast_node_api_like_the_bmv2_cli(sw: Switch) -> None:
    sw.mc_mgrp_create(1)
    n0 = sw.mc_node_create(7, [5, 4])
    n1 = sw.mc_node_create(8, [6])
    sw.mc_node_associate(1, n0)
    sw.mc_node_associate(1, n1)
    assert sw.mc_group_get(1) == [(4, 7), (5, 7), (6, 8)]
    out = sw.process_packet(0, pkt(1))
    assert [p for p, _ in out] == [4, 5, 6]
    with pytest.raises(DuplicateEntryError):
        sw.mc_mgrp_create(1)
    with pytest.raises(BadIndexError):
        sw.mc_group_create(0, [])
    with pytest.raises(EntryNotFoundError):
        sw.mc_node_associate(2, n0)


def test_ingress_clone_is_the_original_reparsed_with_field_list(sw: Switch) -> None:
    sw.clone_session_set(5, port=4)
    out = sw.process_packet(0, pkt(2))
    # the clone is enqueued first; it carries the original bytes (mark 0) and instance_type 1
    assert out[0] == (4, bytes([2, 0, 1, 0]) + b"PAYLOAD")
    assert out[1] == (1, bytes([2, 0x11, 0, 0]) + b"PAYLOAD")


def test_ingress_clone_without_session_makes_no_copy(sw: Switch) -> None:
    assert [p for p, _ in sw.process_packet(0, pkt(2))] == [1]


def test_clone_session_truncation_and_multicast_session(sw: Switch) -> None:
    sw.clone_session_set(5, port=4, truncate_length=3)
    out = sw.process_packet(0, pkt(2))
    assert out[0] == (4, bytes([2, 0, 1]))
    sw.mc_group_create(9, [(6, 1), (7, 2)])
    sw.clone_session_set(5, mcast_grp=9)
    out = sw.process_packet(0, pkt(2))
    assert [(p, d[2], d[3]) for p, d in out] == [(6, 1, 1), (7, 1, 2), (1, 0, 0)]
    assert sw.clone_session_get(5).mcast_grp == 9
    sw.clone_session_delete(5)
    with pytest.raises(EntryNotFoundError):
        sw.clone_session_delete(5)


def test_egress_clone_copies_the_processed_packet(sw: Switch) -> None:
    sw.clone_session_set(6, port=9)
    out = sw.process_packet(0, pkt(5))
    # original leaves first (the clone is queued to egress after it), the clone ran egress again
    assert out[0] == (1, bytes([5, 0x11, 0, 0]) + b"PAYLOAD")
    assert out[1] == (9, bytes([5, 0x11, 2, 0]) + b"PAYLOAD")


def test_resubmit_restarts_ingress_with_preserved_fields(sw: Switch) -> None:
    out = sw.process_packet(0, pkt(3))
    # ingress saw RESUBMIT (fin ran); unicast resets instance_type to NORMAL before egress
    assert out == [(2, bytes([3, 0x33, 0, 0]) + b"PAYLOAD")]


def test_recirculate_feeds_the_deparsed_packet_back(sw: Switch) -> None:
    out = sw.process_packet(0, pkt(4))
    # first pass: egress recirculates (mark 0x11 from fwd); second pass: RECIRC -> fin, cnt kept
    assert out == [(2, bytes([4, 0x44, 0, 0]) + b"PAYLOAD")]


def test_digest_callback(sw: Switch) -> None:
    got: list[DigestMessage] = []
    sw.set_digest_callback(got.append)
    sw.process_packet(0, bytes([6, 0x77, 0, 0]))
    assert got == [DigestMessage("learn_t", 1, (6, 0x77))]


def test_mark_to_drop_and_truncate(sw: Switch) -> None:
    assert sw.process_packet(0, pkt(7)) == []
    assert "mark_to_drop" in sw.drop_log[0]
    assert sw.process_packet(0, pkt(8)) == [(1, bytes([8, 0]))]


def test_cpu_port_packet_in_and_packet_out(sw: Switch) -> None:
    got: list[PacketIn] = []
    assert sw.process_packet(0, pkt(9))[0][0] == 64  # no callback: a normal port
    sw.set_packet_in_callback(got.append)
    assert sw.process_packet(5, pkt(9)) == []
    assert got == [PacketIn(bytes([9, 0x11, 0, 0]) + b"PAYLOAD", 5)]
    assert sw.packet_out(pkt(0)) == [(3, bytes([0, 0x11, 0, 0]) + b"PAYLOAD")]


def test_recirculation_loops_are_bounded() -> None:
    b = JsonBuilder()
    b.add_header("h", [("x", 8)])
    b.state("start", [b.extract("h")])
    b.deparse("h")
    b.action("loop", [], [P("recirculate", HX(0))])
    b.call("loop", pipeline="egress", name="tl")
    b.init("egress", "tl")
    s = Switch(max_recirculations=5)
    s.load_pipeline(b.build())
    assert s.process_packet(0, b"\x01") == []
    assert "too many" in s.drop_log[-1]


def test_egress_spec_default_port_zero_and_configurable_drop_port() -> None:
    b = JsonBuilder()
    b.add_header("h", [("x", 8)])
    b.state("start", [b.extract("h")])
    b.deparse("h")
    b.action("drop", [], [P("mark_to_drop", HDR(SM))])
    b.call("drop", name="td")
    b.conditional("c", B(X("==", F("h", "x"), HX(1))), "td", None)
    b.init("ingress", "c")
    s = Switch(drop_port=100)
    s.load_pipeline(b.build())
    assert s.process_packet(3, b"\x00") == [(0, b"\x00")]
    assert s.process_packet(3, b"\x01") == []
    assert "drop port 100" in s.drop_log[0]


def test_cpu_and_drop_ports_can_change_after_loading(sw: Switch) -> None:
    got: list[PacketIn] = []
    sw.set_packet_in_callback(got.append)
    sw.cpu_port = 3
    assert sw.process_packet(0, pkt(0)) == [] and len(got) == 1  # op 0 forwards to port 3
    sw.cpu_port = None
    sw.drop_port = 3
    assert sw.process_packet(0, pkt(0)) == []
    assert "drop port 3" in sw.drop_log[0]


def test_a_batch_gives_exactly_what_packets_one_at_a_time_give() -> None:
    """process_batch (the port loop's path, a generated loop) against process_packet on a twin switch:
    every kind of packet -- unicast, multicast, clones, resubmit, recirculation, digest, drop,
    truncation, packet-in, too short to parse -- in one batch, outputs and side effects in order."""

    def build() -> tuple[Switch, list]:
        s = loaded_switch()
        s.mc_group_create(1, [(2, 10), (3, 11)])
        s.clone_session_set(5, port=7)
        s.clone_session_set(6, port=9)
        events: list = []
        s.set_digest_callback(events.append)
        s.set_packet_in_callback(events.append)
        return s, events

    frames = [pkt(op) for op in (*range(10), 11, 0)] + [b"", b"\x01", pkt(1)]
    one, one_events = build()
    many, many_events = build()
    expected = [out for frame in frames for out in one.process_packet(1, frame)]
    got = many.process_batch(1, frames)
    assert got == expected
    assert [p for p, _ in got].count(3) >= 3  # unicast and multicast really came out
    assert many_events == one_events and any(isinstance(e, DigestMessage) for e in many_events)
    assert any(isinstance(e, PacketIn) for e in many_events)
    assert many.process_batch(1, []) == []
    # sinks: port 3 takes its unicast outputs, port 1 refuses them; nothing is lost or doubled
    again, _ = build()
    taken: list[tuple[int, bytes]] = []
    sinks = {3: lambda f: taken.append((3, f)) is None, 1: lambda f: False}
    rest = again.process_batch(1, frames, sinks=sinks)
    assert taken and sorted(taken + rest) == sorted(expected)
    assert (3, bytes([0, 0x11, 0, 0]) + b"PAYLOAD") in taken
    assert [o for o in rest if o[0] == 1] == [o for o in expected if o[0] == 1]


def test_a_batch_without_a_program_is_refused() -> None:
    with pytest.raises(NoPipelineError):
        Switch().process_batch(1, [pkt(0)])
