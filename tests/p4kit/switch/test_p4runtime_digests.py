"""DigestList batching: the DigestBatcher's rules with a fake clock, then a real switch over gRPC."""

from __future__ import annotations

import itertools
import json
import queue
import threading
import time

import grpc
import pytest
from p4.v1 import p4runtime_pb2 as pb

from p4kit.switch import p4rt_digests
from p4kit.switch.p4rt_digests import DigestBatch, DigestBatcher

from ._p4rt_client import Client, switch_process, update
from .test_p4runtime_compiled import compile_program

D1, D2 = 11, 22
MS = 1_000_000  # ns


def config(max_timeout_ns: int = 0, max_list_size: int = 0, ack_timeout_ns: int = 0) -> pb.DigestEntry.Config:
    return pb.DigestEntry.Config(
        max_timeout_ns=max_timeout_ns, max_list_size=max_list_size, ack_timeout_ns=ack_timeout_ns
    )


class Harness:
    """A batcher on a fake clock; `configs` is the DigestEntry store, `poll()` returns what was sent."""

    def __init__(self) -> None:
        self.now = 1_000 * MS
        self.configs: dict[int, pb.DigestEntry.Config] = {}
        self.sent: list[DigestBatch] = []
        self.batcher = DigestBatcher(
            self.sent.append, self.configs.get, clock=lambda: self.now, wall_clock=lambda: 7_000 + self.now
        )

    def poll(self) -> list[DigestBatch]:
        self.batcher.poll()
        out, self.sent[:] = list(self.sent), []
        return out

    def advance(self, ns: int) -> list[DigestBatch]:
        self.now += ns
        return self.poll()


@pytest.fixture
def h() -> Harness:
    return Harness()


def values_of(batches: list[DigestBatch]) -> list[list[tuple[int, ...]]]:
    return [list(b.values) for b in batches]


# ================================================================================ unit: the batcher
def test_zero_timeout_sends_each_message_at_once(h) -> None:
    h.configs[D1] = config()  # the default config: no buffering, no cache
    assert h.batcher.add(D1, (1, 2)) and h.batcher.add(D1, (1, 2))
    got = h.poll()
    assert values_of(got) == [[(1, 2)], [(1, 2)]]  # ack_timeout 0: nothing is suppressed
    assert [b.list_id for b in got] == [1, 2] and got[0].digest_id == D1


def test_unconfigured_digest_is_dropped(h) -> None:
    assert not h.batcher.add(D1, (1,))
    assert h.poll() == [] and h.batcher.pending(D1) == 0


def test_size_trigger(h) -> None:
    h.configs[D1] = config(max_timeout_ns=10_000 * MS, max_list_size=3)
    h.batcher.add(D1, (1,))
    h.batcher.add(D1, (2,))
    assert h.advance(5 * MS) == [] and h.batcher.pending(D1) == 2
    h.batcher.add(D1, (3,))
    (batch,) = h.poll()
    assert batch.values == ((1,), (2,), (3,)) and batch.timestamp == 7_000 + h.now
    assert h.batcher.pending(D1) == 0


def test_duplicates_are_merged_in_the_buffer_and_count_once(h) -> None:
    h.configs[D1] = config(max_timeout_ns=10_000 * MS, max_list_size=2)
    assert h.batcher.add(D1, (1,))
    assert not h.batcher.add(D1, (1,))  # a duplicate of a buffered message
    assert h.poll() == []
    h.batcher.add(D1, (2,))
    assert values_of(h.poll()) == [[(1,), (2,)]]


def test_timeout_trigger_counts_from_the_first_message(h) -> None:
    h.configs[D1] = config(max_timeout_ns=100 * MS, max_list_size=10)
    h.batcher.add(D1, (1,))
    assert h.batcher.poll() == h.now + 100 * MS  # when it falls due
    assert h.advance(60 * MS) == []
    h.batcher.add(D1, (2,))  # joins the list; does not restart the timer
    assert h.advance(39 * MS) == []
    (batch,) = h.advance(1 * MS)
    assert batch.values == ((1,), (2,))
    assert h.batcher.poll() is None  # nothing left to wait for


def test_zero_list_size_means_timeout_only(h, monkeypatch) -> None:
    monkeypatch.setattr(p4rt_digests, "UNLIMITED_LIST_SIZE", 5)
    h.configs[D1] = config(max_timeout_ns=100 * MS, max_list_size=0)
    for v in range(4):
        h.batcher.add(D1, (v,))
    assert h.poll() == []
    assert values_of(h.advance(100 * MS)) == [[(0,), (1,), (2,), (3,)]]
    for v in range(12):  # the implementation bound still caps a list
        h.batcher.add(D1, (v,))
    assert [len(b.values) for b in h.poll()] == [5, 5]
    assert [len(b.values) for b in h.advance(100 * MS)] == [2]


def test_lists_of_different_digests_and_list_ids_increase(h) -> None:
    h.configs[D1] = config(max_timeout_ns=50 * MS, max_list_size=2)
    h.configs[D2] = config()
    h.batcher.add(D1, (1,))
    h.batcher.add(D2, (9,))
    h.batcher.add(D1, (2,))
    got = h.poll()
    assert [(b.digest_id, b.list_id) for b in got] == [(D2, 1), (D1, 2)]


def test_ack_suppresses_duplicates_until_acked(h) -> None:
    h.configs[D1] = config(ack_timeout_ns=1_000 * MS)
    h.batcher.add(D1, (1,))
    (first,) = h.poll()
    assert not h.batcher.add(D1, (1,))  # in the cache: suppressed
    assert h.batcher.add(D1, (2,))  # distinct: sent
    (second,) = h.poll()
    assert second.values == ((2,),) and second.list_id > first.list_id
    assert h.batcher.ack(D1, first.list_id)
    assert not h.batcher.ack(D1, first.list_id)  # already gone
    assert not h.batcher.ack(D2, second.list_id)  # the ack names the digest too
    assert h.batcher.add(D1, (1,))  # acked: learned again
    assert not h.batcher.add(D1, (2,))  # list 2 is still unacked
    assert values_of(h.poll()) == [[(1,)]]


def test_ack_timeout_expires_the_cache(h) -> None:
    h.configs[D1] = config(ack_timeout_ns=1_000 * MS)
    h.batcher.add(D1, (1,))
    h.poll()
    assert h.batcher.poll() == h.now + 1_000 * MS  # the expiry is a deadline of the timer too
    h.now += 999 * MS
    assert not h.batcher.add(D1, (1,))
    h.now += 1 * MS
    assert h.batcher.add(D1, (1,))
    assert len(h.poll()) == 1


def test_cache_covers_the_whole_list_and_buffered_duplicates(h) -> None:
    h.configs[D1] = config(max_timeout_ns=10 * MS, max_list_size=2, ack_timeout_ns=1_000 * MS)
    h.batcher.add(D1, (1,))
    h.batcher.add(D1, (2,))
    (lst,) = h.poll()
    assert not h.batcher.add(D1, (1,)) and not h.batcher.add(D1, (2,))
    h.batcher.add(D1, (3,))
    assert values_of(h.advance(10 * MS)) == [[(3,)]]
    h.batcher.ack(D1, lst.list_id)
    assert h.batcher.add(D1, (1,)) and h.batcher.add(D1, (2,))


def test_deleting_the_config_drops_buffer_and_cache(h) -> None:
    h.configs[D1] = config(max_timeout_ns=100 * MS, max_list_size=10, ack_timeout_ns=10_000 * MS)
    h.batcher.add(D1, (1,))
    (sent,) = h.advance(100 * MS)
    h.batcher.add(D1, (2,))
    del h.configs[D1]  # DigestEntry DELETE
    assert not h.batcher.add(D1, (3,))
    assert h.advance(200 * MS) == []  # the buffered (2,) is not sent
    assert h.batcher.pending(D1) == 0
    h.configs[D1] = config()  # INSERT again: the old cache is gone, (1,) is learned again
    assert h.batcher.add(D1, (1,))
    assert values_of(h.poll()) == [[(1,)]] and not h.batcher.ack(D1, sent.list_id)


def test_modified_config_applies_to_the_buffer(h) -> None:
    h.configs[D1] = config(max_timeout_ns=10_000 * MS, max_list_size=10)
    for v in range(5):
        h.batcher.add(D1, (v,))
    h.configs[D1] = config(max_timeout_ns=10_000 * MS, max_list_size=2)  # MODIFY: smaller lists
    assert [len(b.values) for b in h.poll()] == [2, 2]  # no list is longer than max_list_size
    h.configs[D1] = config(max_timeout_ns=10 * MS, max_list_size=2)  # MODIFY: a shorter timeout
    assert [b.values for b in h.advance(10 * MS)] == [((4,),)]


def test_ack_timeout_zero_empties_the_cache_of_earlier_lists(h) -> None:
    h.configs[D1] = config(ack_timeout_ns=10_000 * MS)
    h.batcher.add(D1, (1,))
    h.poll()
    h.configs[D1] = config(ack_timeout_ns=0)
    assert h.batcher.add(D1, (1,))


def test_negative_config_values_read_as_zero(h) -> None:
    h.configs[D1] = config(max_timeout_ns=-5, max_list_size=-1, ack_timeout_ns=-1)
    h.batcher.add(D1, (1,))
    h.batcher.add(D1, (1,))
    assert values_of(h.poll()) == [[(1,)], [(1,)]]


def test_reset_drops_everything(h) -> None:
    h.configs[D1] = config(max_timeout_ns=100 * MS, max_list_size=10, ack_timeout_ns=10_000 * MS)
    h.batcher.add(D1, (1,))
    h.batcher.reset()
    assert h.advance(200 * MS) == [] and h.batcher.pending(D1) == 0


# ================================================================================ unit: the thread
def test_timer_thread_sends_due_lists_and_stops() -> None:
    configs = {D1: config(max_timeout_ns=50 * MS, max_list_size=100)}
    got: queue.Queue = queue.Queue()
    batcher = DigestBatcher(got.put, configs.get)
    batcher.start()
    try:
        t0 = time.monotonic()
        batcher.add(D1, (1,))
        batch = got.get(timeout=10)
        assert batch.values == ((1,),)
        assert time.monotonic() - t0 >= 0.049  # never before the timeout
    finally:
        batcher.close()
    assert not batcher.running
    assert not batcher.add(D1, (2,))  # closed: dropped


def test_add_never_waits_for_a_slow_send() -> None:
    """The dataplane thread only buffers: a send stuck in the timer thread does not hold it up."""
    configs = {D1: config()}
    release = threading.Event()
    entered = threading.Event()
    sent: list[DigestBatch] = []

    def slow_send(batch: DigestBatch) -> None:
        entered.set()
        release.wait(10)
        sent.append(batch)

    batcher = DigestBatcher(slow_send, configs.get)
    batcher.start()
    try:
        batcher.add(D1, (0,))
        assert entered.wait(10)
        t0 = time.monotonic()
        for v in range(1, 200):
            batcher.add(D1, (v,))
        assert time.monotonic() - t0 < 5  # generous: a blocked add would take the full 10 s
        release.set()
        end = time.monotonic() + 10
        while len(sent) < 200 and time.monotonic() < end:
            time.sleep(0.01)
        assert [b.values[0][0] for b in sent] == list(range(200))  # in list id order
        assert [b.list_id for b in sent] == sorted(b.list_id for b in sent)
    finally:
        release.set()
        batcher.close()


# ================================================================================ end to end over gRPC
ELECTIONS = itertools.count(1)


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    p4info, bmv2, _, _ = compile_program("extern_digest_truncate_log", tmp_path_factory.mktemp("digests"))
    return p4info, json.dumps(bmv2).encode()


@pytest.fixture(scope="module")
def switch_addr():
    with switch_process("--no-p4", device_id=0, cpu_port=64) as (addr, _):
        yield addr


class DigestSwitch:
    """A primary client on the shared switch, with the digest program freshly committed."""

    def __init__(self, addr: str, program) -> None:
        p4info, device_config = program
        (self.digest,) = p4info.digests
        self.client = Client(addr, 0)
        self.client.election = next(ELECTIONS)
        self.stream = self.client.stream(election=self.client.election)
        assert self.stream.next("arbitration", timeout=10).arbitration.status.code == 0
        self.client.set_pipeline(p4info, device_config)  # a new pipeline: no digest state

    def configure(self, op: str = "INSERT", **cfg: int) -> None:
        entry = pb.DigestEntry(digest_id=self.digest.preamble.id, config=config(**cfg))
        self.client.write(update(op, pb.Entity(digest_entry=entry)))

    def packet(self, a: int) -> None:
        """PacketOut into ingress; the program learns (a + 1, ingress port 64)."""
        out = pb.StreamMessageRequest()
        out.packet.payload = bytes([0, a]) + bytes.fromhex("222233334444")
        self.stream.send(out)

    def ack(self, list_id: int, digest_id: int | None = None) -> None:
        req = pb.StreamMessageRequest()
        req.digest_ack.digest_id = self.digest.preamble.id if digest_id is None else digest_id
        req.digest_ack.list_id = list_id
        self.stream.send(req)

    def digest_list(self, timeout: float = 10.0) -> pb.DigestList:
        msg = self.stream.next("digest", timeout=timeout)
        assert msg is not None, self.stream.error
        return msg.digest

    def no_digest(self, wait: float = 0.7) -> None:
        with pytest.raises(queue.Empty):
            self.stream.next("digest", timeout=wait)


def learned_a(lst: pb.DigestList) -> list[int]:
    """The `a` member of each entry (the program adds 1), checking the port member is the CPU port."""
    assert all(d.struct.members[1].bitstring == b"\x40" for d in lst.data)
    return [d.struct.members[0].bitstring[0] for d in lst.data]


@pytest.fixture
def sw(switch_addr, program):
    s = DigestSwitch(switch_addr, program)
    yield s
    s.client.close()


def test_three_packets_make_one_list_of_three(sw) -> None:
    sw.configure(max_list_size=3, max_timeout_ns=60_000 * MS)
    sw.packet(0x10)
    sw.packet(0x20)
    sw.no_digest()  # two of three: the list waits
    sw.packet(0x30)
    lst = sw.digest_list()
    assert lst.digest_id == sw.digest.preamble.id and lst.list_id > 0 and lst.timestamp > 0
    assert learned_a(lst) == [0x11, 0x21, 0x31]
    sw.no_digest(0.3)


def test_a_single_digest_arrives_after_the_timeout(sw) -> None:
    sw.configure(max_list_size=100, max_timeout_ns=300 * MS)
    t0 = time.monotonic()
    sw.packet(0x05)
    lst = sw.digest_list(timeout=15)
    elapsed = time.monotonic() - t0
    assert learned_a(lst) == [0x06]
    assert 0.29 <= elapsed < 10  # not before the timeout; the upper bound only catches a hang


def test_duplicates_wait_for_the_ack(sw) -> None:
    sw.configure(ack_timeout_ns=60_000 * MS)  # lists at once, duplicates held back for a minute
    sw.packet(0x40)
    first = sw.digest_list()
    assert learned_a(first) == [0x41]
    sw.packet(0x40)
    sw.no_digest()  # the same data, not acked yet: suppressed
    sw.packet(0x50)
    second = sw.digest_list()
    assert learned_a(second) == [0x51] and second.list_id > first.list_id
    sw.ack(first.list_id)
    sw.packet(0x40)
    third = sw.digest_list()
    assert learned_a(third) == [0x41] and third.list_id > second.list_id


def test_ack_timeout_lets_duplicates_through(sw) -> None:
    sw.configure(ack_timeout_ns=400 * MS)
    sw.packet(0x60)
    assert learned_a(sw.digest_list()) == [0x61]
    time.sleep(0.5)
    sw.packet(0x60)
    assert learned_a(sw.digest_list()) == [0x61]


def test_deleted_config_drops_the_buffered_list(sw) -> None:
    sw.configure(max_list_size=10, max_timeout_ns=500 * MS)
    sw.packet(0x70)
    sw.configure("DELETE")
    sw.no_digest(1.2)
    sw.configure(max_list_size=2, max_timeout_ns=60_000 * MS)  # INSERT again: learning is back on
    sw.packet(0x70)
    sw.packet(0x71)
    assert learned_a(sw.digest_list()) == [0x71, 0x72]


def test_ack_for_an_unknown_digest_is_a_stream_error(sw) -> None:
    sw.configure()
    sw.ack(1, digest_id=0x12345)
    err = sw.stream.next("error", timeout=10).error
    assert err.canonical_code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert err.WhichOneof("details") == "digest_list_ack"
