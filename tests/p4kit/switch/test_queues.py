"""The traffic manager (p4kit/switch/queues.py): queue fields as BMv2 fills them, depth limits, rates
and priority queues, driven with bursts through a program that copies the fields into the packet."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from p4kit.compiler.driver import compile_file
from p4kit.switch import Switch
from p4kit.switch.queues import QueueConfigError, TrafficManager

PROBE = Path(__file__).parent / "programs" / "queue_probe.p4"
FIELDS = struct.Struct("!BBIIIIB")  # tag, prio, enq_ts, enq_depth, deq_delta, deq_depth, out_prio


@pytest.fixture(scope="module")
def probe_json() -> dict:
    return compile_file(PROBE).bmv2


@pytest.fixture
def sw(probe_json: dict) -> Switch:
    s = Switch()
    s.raise_internal_errors = True
    s.load_pipeline(probe_json)
    return s


def probe(tag: int, prio: int = 0) -> bytes:
    return FIELDS.pack(tag, prio, 0, 0, 0, 0, 0) + bytes(4)


def fields(frame: bytes) -> tuple[int, ...]:
    return FIELDS.unpack_from(frame)


def drain(sw: Switch) -> list[tuple[int, ...]]:
    assert sw.wait_queues_empty(10), "the egress queues did not drain"
    outs = sw.take_outputs()
    assert all(port == 2 for port, _ in outs)
    return [fields(data) for _, data in outs]


def test_unrated_port_never_holds_a_packet(sw: Switch) -> None:
    before = sw.now_us()
    outs = sw.process_batch(1, [probe(i) for i in range(5)])
    after = sw.now_us()
    got = [fields(d) for _, d in outs]
    assert [g[0] for g in got] == list(range(5))
    for _tag, _prio, enq_ts, enq_depth, deq_delta, deq_depth, _ in got:
        assert before <= enq_ts <= after  # microseconds since the switch started
        assert (enq_depth, deq_delta, deq_depth) == (0, 0, 0)
    assert [g[2] for g in got] == sorted(g[2] for g in got)


def test_burst_at_a_rate_fills_and_drains_the_queue(sw: Switch) -> None:
    sw.set_queue_rate(1000, port=2)  # one packet per millisecond
    assert sw.process_batch(1, [probe(i) for i in range(10)]) == []  # all queued, none out yet
    got = drain(sw)
    assert [g[0] for g in got] == list(range(10))
    first_enq = got[0][2]
    for i, (_tag, _prio, enq_ts, enq_depth, deq_delta, deq_depth, _) in enumerate(got):
        assert enq_depth == i  # packets ahead of it when it joined
        assert deq_depth == 9 - i  # packets behind it when it left
        # BMv2 fixes the departure when queuing: first arrival + i ms; never earlier
        departure = enq_ts + deq_delta
        assert departure >= first_enq + i * 1000 - 2
        assert deq_delta < i * 1000 + 500_000  # generous: the machine is shared


def test_depth_limit_tail_drops(sw: Switch) -> None:
    sw.set_queue_rate(200, port=2)
    sw.set_queue_depth(4, port=2)
    sw.process_batch(1, [probe(i) for i in range(10)])
    assert sum("is full" in r for r in sw.drop_log) == 6
    got = drain(sw)
    assert [g[0] for g in got] == [0, 1, 2, 3]
    assert [g[3] for g in got] == [0, 1, 2, 3]
    assert sw.traffic_manager.tail_drops == 6


def test_priority_queues_serve_the_highest_first_on_a_shared_link(sw: Switch) -> None:
    sw.set_priority_queues(2)
    frame_bits = len(probe(0)) * 8
    sw.set_port_bit_rate(2, frame_bits * 1000)  # the link carries 1000 probes per second
    burst = [probe(i, 0) for i in range(4)] + [probe(10 + i, 1) for i in range(4)]
    sw.process_batch(1, burst)
    got = drain(sw)
    assert [g[0] for g in got] == [10, 11, 12, 13, 0, 1, 2, 3]
    assert [g[6] for g in got] == [1, 1, 1, 1, 0, 0, 0, 0]
    assert [g[3] for g in got] == [0, 1, 2, 3, 0, 1, 2, 3]  # depth of the packet's own queue
    assert [g[5] for g in got] == [3, 2, 1, 0, 3, 2, 1, 0]
    low_first_departure = got[4][2] + got[4][4]
    assert low_first_departure >= got[0][2] + 4 * 1000 - 2  # waited for four high packets


def test_priority_out_of_range_drops(sw: Switch) -> None:
    assert sw.process_packet(1, probe(1, prio=1)) == []  # one queue per port: only priority 0
    assert "priority 1 out of range" in sw.drop_log[0]
    sw.set_priority_queues(4)
    assert len(sw.process_packet(1, probe(1, prio=3))) == 1
    assert sw.process_packet(1, probe(1, prio=4)) == []


def test_outputs_go_to_the_output_callback(sw: Switch) -> None:
    seen: list[tuple[int, bytes]] = []
    sw.set_output_callback(lambda port, data: seen.append((port, data)))
    sw.set_queue_rate(2000, port=2)
    sw.process_batch(1, [probe(i) for i in range(3)])
    assert sw.wait_queues_empty(10)
    assert [fields(d)[0] for _, d in seen] == [0, 1, 2]
    assert sw.take_outputs() == []


def test_fast_path_pays_nothing_without_rates(probe_json: dict) -> None:
    from p4kit.compiler.driver import compile_file

    plain = Switch(native=False)  # this reads the Python fast path's source
    plain.load_pipeline(compile_file(Path(__file__).parents[1] / "programs" / "table_lpm_forward.p4").bmv2)
    source = plain._engine.fast_source
    assert "tm_rated" not in source and "QENQTS" not in source and "QPRIO" not in source
    plain.set_queue_rate(100, port=3)
    assert "tm_rated(es)" in plain._engine.fast_source
    reader = Switch()
    reader.load_pipeline(probe_json)  # reads enq_timestamp and sets the priority
    assert "QENQTS" in reader._engine.fast_source and "QPRIO" in reader._engine.fast_source


def test_bad_settings_are_refused_with_a_reason() -> None:
    tm = TrafficManager()
    with pytest.raises(QueueConfigError, match="depth"):
        tm.set_queue_depth(0, port=1)
    with pytest.raises(QueueConfigError, match="rate"):
        tm.set_queue_rate(-1, port=1)
    with pytest.raises(QueueConfigError, match="priority 1 out of range"):
        tm.set_queue_rate(10, port=1, priority=1)
    with pytest.raises(QueueConfigError, match="port 600"):
        tm.set_queue_depth(8, port=600)
    with pytest.raises(QueueConfigError, match="between 1 and 8"):
        TrafficManager(priorities=9)


def test_new_pipeline_empties_the_queues(sw: Switch, probe_json: dict) -> None:
    sw.set_queue_rate(1, port=2)
    sw.process_batch(1, [probe(i) for i in range(3)])
    assert sw.traffic_manager.pending() >= 2
    sw.load_pipeline(probe_json)
    assert sw.traffic_manager.pending() == 0


def test_a_failing_output_callback_loses_its_packets_not_the_queues(sw: Switch) -> None:
    calls: list[int] = []

    def flaky(port: int, data: bytes) -> None:
        calls.append(fields(data)[0])
        if len(calls) == 1:
            raise OSError("interface gone")

    sw.set_output_callback(flaky)
    sw.set_queue_rate(500, port=2)
    sw.process_batch(1, [probe(i) for i in range(4)])
    assert sw.wait_queues_empty(10)
    assert calls == [0, 1, 2, 3]  # the first one was lost; the queue thread went on
