"""Multicast on the fast path (replicas copied, run through egress and deparsed without the general
path's queues) gives what the general path gives: the traced pipeline takes the general path."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from p4kit.compiler.driver import compile_file
from p4kit.switch import Switch


@pytest.fixture(autouse=True)
def _python_data_plane(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the Python data plane's own machinery: the native one stays off."""
    monkeypatch.setenv("P4KIT_NATIVE", "0")


PROGRAM = Path(__file__).parent / "programs" / "mcast_egress.p4"


@pytest.fixture(scope="module")
def doc() -> dict:
    return compile_file(PROGRAM).bmv2


def make(doc: dict, traced: bool) -> Switch:
    sw = Switch(cpu_port=64)
    sw.raise_internal_errors = True
    sw.load_pipeline(doc)
    sw.mc_group_create(1, [(1, 10), (2, 11), (3, 12), (4, 13)])
    sw.mc_group_create(2, [(5, 0)])
    sw.mc_group_create(3, [])
    if traced:
        sw.set_trace(lambda line: None)
    return sw


def frame(group: int) -> bytes:
    return struct.pack("!HHHIH", group, 0, 0, 0, 0) + b"payload"


def test_fast_multicast_equals_the_general_path(doc: dict) -> None:
    fast, general = make(doc, False), make(doc, True)
    assert "def mcast(P0, port):" in fast._engine.fast_source
    for group in (1, 2, 3, 7, 0, 1):
        got, want = fast.process_packet(1, frame(group)), general.process_packet(1, frame(group))
        assert got == want, group
        assert fast.drop_log == general.drop_log
        batch = fast.process_batch(1, [frame(group), frame(group)])
        assert batch == want + want
    outs = fast.process_packet(1, frame(1))
    assert [p for p, _ in outs] == [1, 2, 4]  # port 3's copy is dropped in egress
    for port, data in outs:
        _, rid, eport, itype, _ = struct.unpack_from("!HHHIH", data)
        assert (eport, itype) == (port, 5) and rid == 9 + port
        assert data.endswith(b"payload")


def test_multicast_to_the_cpu_port_is_a_packet_in(doc: dict) -> None:
    sw = make(doc, False)
    seen = []
    sw.set_packet_in_callback(seen.append)
    sw.mc_group_create(4, [(64, 1), (2, 2)])
    outs = sw.process_packet(7, frame(4))
    assert [p for p, _ in outs] == [2]
    assert len(seen) == 1 and seen[0].ingress_port == 7


def test_a_rated_replica_port_queues_its_copy(doc: dict) -> None:
    sw = make(doc, False)
    sw.set_queue_rate(1000, port=2)
    assert [p for p, _ in sw.process_packet(1, frame(1))] == [1, 4]  # unrated ports: at once
    assert sw.wait_queues_empty(5)
    late = sw.take_outputs()
    assert [p for p, _ in late] == [2]
    assert struct.unpack_from("!HHHIH", late[0][1])[1] == 11
