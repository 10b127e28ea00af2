"""The worker's native I/O (edge/native/chunkio.c) against its Python path, over real loopback sockets.

The native path must be the Python path done a batch at a time: the same bytes on the wire for every
new chunk (headers, slots, version bits, the wrap of the chunk numbers, packed formats), the same
verdict on every datagram that comes back (a result, a duplicate, a datagram rejected, a count that
shows a wrong tree), and the same stream state afterwards. Each test runs both on the same input and
compares them; the real worker's allreduce runs exact through both.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from edge.native import ENV_IO, chunk_io
from edge.protocol import (
    F_RESULT,
    F_RETRANSMIT,
    F_URGENT,
    F_VERSION,
    FMT_INT8,
    FMT_INT32,
    FMT_WIDE32,
    INC_LANES,
    INC_UDP_PORT,
    INC_VERSION,
    KIND_MAX,
    KIND_SUM,
    WIDE_WORDS,
    IncHeader,
    chunk_space,
    decode,
    encode,
    slot_of,
)
from edge.worker import IncJob, IncProtocolError, IncWorker, PathTiming, ReduceStream, TransferStats

SWITCH_IP, WORKER_IP = "127.0.0.9", "127.0.0.8"
SOURCE = (SWITCH_IP, INC_UDP_PORT)


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A worker's socket connected to a switch's socket on loopback (both non-blocking)."""
    sw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sw.bind((SWITCH_IP, 0))
    w = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    w.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    w.bind((WORKER_IP, 0))
    w.connect(sw.getsockname())
    sw.connect(w.getsockname())
    w.setblocking(False)
    sw.settimeout(2.0)
    yield w, sw
    w.close()
    sw.close()


def job(**kw: object) -> IncJob:
    base = {"tenant": 3, "switch_ip": SWITCH_IP, "nslots": 8, "workers": 2, "epoch": 99, "round": 1}
    base.update(kw)
    return IncJob(**base)  # type: ignore[arg-type]


def make(
    j: IncJob, rows: int, first: int = 0, fmt: int = FMT_INT32, kind: int = KIND_SUM
) -> tuple[ReduceStream, list[bytes]]:
    sent: list[bytes] = []
    lanes = (np.arange(rows * INC_LANES, dtype=np.uint32) * 2654435761).reshape(rows, INC_LANES)
    s = ReduceStream(
        j,
        lanes,
        kind,
        first,
        PathTiming.for_job(j),
        TransferStats(),
        lambda p: sent.append(p) or True,
        0.0,
        fmt,
    )
    return s, sent


def native() -> object:
    module = chunk_io()
    assert module is not None, "the native I/O must build here (cc and Python.h are installed)"
    return module


def drain(sw: socket.socket, n: int) -> list[bytes]:
    return [sw.recv(4096) for _ in range(n)]


@pytest.mark.parametrize(
    ("fmt", "first"),
    [(FMT_INT32, 0), (FMT_INT32, chunk_space(8) - 5), (FMT_INT8, 16)],
    ids=["int32", "int32-across-the-wrap", "int8-packed"],
)
def test_new_chunks_leave_as_the_python_path_sends_them(
    pair: tuple[socket.socket, socket.socket], fmt: int, first: int
) -> None:
    """Byte for byte, in order: three pumps of the window (the slots hold the rest back until results
    free them), across the wrap of the chunk numbers and in a packed format."""
    w, sw = pair
    j = job(nslots=8)
    py, sent = make(j, 20, first, fmt)
    nat, _ = make(j, 20, first, fmt)
    nat.native_io(native(), w.fileno())
    wire: list[bytes] = []
    for now in (0.0, 0.01, 0.02):
        py.pump(now)
        nat.pump(now)
        wire += drain(sw, nat.stats.packets_sent - len(wire))
        assert wire == sent and nat.next_index == py.next_index
        units = nat.units
        for i in range(nat.next_index):  # every row out so far comes back, freeing the slots
            if not nat.done[i]:
                for s in (py, nat):
                    s.done[i] = True
                    s._took(i, now + 0.001)
        assert nat.next_index == min(20, units * (1 + round(now / 0.01)))
    assert nat.stats.packets_sent == py.stats.packets_sent == nat.next_index == len(wire)
    assert nat.stats.bytes_sent == py.stats.bytes_sent
    assert [decode(p)[0].chunk for p in wire[:3]] == [(first + g * nat.groups) % nat.space for g in range(3)]
    # the call's last chunks go out URGENT, the others not: a native batch splits where they begin
    assert 0 < nat.urgent_from == py.urgent_from < 20
    urgent = [bool(decode(p)[0].flags & F_URGENT) for p in wire]
    assert urgent == [i >= nat.urgent_from for i in range(len(wire))]
    assert any(urgent) == (len(wire) == 20)  # packed, the slots hold back the last rows (3 pumps)


def results_of_every_kind(j: IncJob, s: ReduceStream) -> list[bytes]:
    """Datagrams a worker may see: results, late copies, and what is not a result of its tree."""

    def res(index: int, value: int = 5, **kw: object) -> bytes:
        chunk = (s.first + index) % s.space
        slot, copy = slot_of(chunk, j.nslots)
        fields = {
            "tenant": j.tenant,
            "round": j.round,
            "slot": slot,
            "chunk": chunk,
            "kind": s.kind,
            "flags": F_RESULT | (F_VERSION if copy else 0),
            "count": j.workers,
            "epoch": j.epoch,
        }
        fields.update(kw)
        return encode(IncHeader(**fields), np.full(INC_LANES, value + index, dtype=np.uint32))  # type: ignore[arg-type]

    good = res(3)
    _, copy = slot_of((s.first + 1) % s.space, j.nslots)
    wrong_copy = res(1, flags=F_RESULT | (0 if copy else F_VERSION))
    slot, copy = slot_of(s.first, j.nslots)
    header = IncHeader(j.tenant, j.round, slot, s.first, flags=F_RESULT | (F_VERSION if copy else 0),
                       count=j.workers, epoch=j.epoch, format=FMT_WIDE32)  # fmt: skip
    wide = encode(header, np.zeros(WIDE_WORDS, dtype=np.uint32))
    return [
        res(0),
        res(2),
        good,
        good,  # a duplicate
        res(1, tenant=4),  # another tenant: rejected
        res(1, epoch=98),  # an old epoch: rejected
        res(1, version=INC_VERSION + 1),  # rejected
        res(1, flags=0),  # a contribution, not a result: rejected
        good[:-4],  # short: rejected
        good + b"\0\0\0\0",  # long: rejected
        res(1, round=j.round + 1),  # another round: a late copy
        res(1, kind=KIND_MAX),  # another kind: a late copy
        res(1, slot=(3 + 1) % j.nslots),  # the wrong slot: rejected
        wrong_copy,  # the other copy of chunk 1's slot: rejected
        res(40),  # beyond the stream: a late copy
        wide,  # a wide result to an int32 stream: rejected (its size)
        b"",  # empty: rejected
        res(5, value=11),
        res(1),
    ]


def test_every_datagram_gets_the_python_paths_verdict(pair: tuple[socket.socket, socket.socket]) -> None:
    w, sw = pair
    j = job(nslots=8)
    py, _ = make(j, 12, first=chunk_space(8) - 3)
    nat, _ = make(j, 12, first=chunk_space(8) - 3)
    nat.native_io(native(), w.fileno())
    for s in (py, nat):
        s.pump(0.0)
    drain(sw, nat.stats.packets_sent)
    datagrams = results_of_every_kind(j, nat)
    for d in datagrams:
        sw.send(d)
        py.receive(d, SOURCE, 0.05)
    assert nat.take_native() == 5
    for field in ("results", "duplicates", "rejected", "bytes_received"):
        assert getattr(nat.stats, field) == getattr(py.stats, field), field
    assert py.stats.results == 5 and py.stats.rejected == 10 and py.stats.duplicates == 4
    assert np.array_equal(nat.result, py.result) and np.array_equal(nat.done, py.done)
    assert nat.remaining == py.remaining and nat.highest == py.highest == 5
    assert sorted(nat.inflight) == sorted(py.inflight)
    assert nat.result[5, 0] == 16 and nat.result[1, 0] == 6


def test_a_result_of_the_wrong_tree_raises_as_in_python(pair: tuple[socket.socket, socket.socket]) -> None:
    """The results before it are taken; the count mismatch raises the Python path's error."""
    w, sw = pair
    j = job(nslots=8, workers=3)
    py, _ = make(j, 6)
    nat, _ = make(j, 6)
    nat.native_io(native(), w.fileno())

    def res(index: int, count: int) -> bytes:
        slot, copy = slot_of(index, j.nslots)
        h = IncHeader(j.tenant, j.round, slot, index, flags=F_RESULT | (F_VERSION if copy else 0),
                      count=count, epoch=j.epoch)  # fmt: skip
        return encode(h, np.arange(INC_LANES, dtype=np.uint32))

    for s in (py, nat):
        s.pump(0.0)
    for d in (res(0, 3), res(1, 2), res(2, 3)):
        sw.send(d)
    assert py.receive(res(0, 3), SOURCE, 0.1)
    with pytest.raises(IncProtocolError) as expected:
        py.receive(res(1, 2), SOURCE, 0.1)
    with pytest.raises(IncProtocolError) as got:
        nat.take_native()
    assert str(got.value) == str(expected.value) and "sums 2 contributions" in str(got.value)
    assert nat.done.tolist() == py.done.tolist() == [True] + [False] * 5


def test_a_refused_send_holds_the_rest_back_and_loses_nothing() -> None:
    """A datagram to a port nobody holds brings an ICMP error back, reported on the next send: that
    send returns fewer rows than asked (as the Python transmit returns False) and the stream waits.
    Once the switch is there, every row goes, exactly once and in order."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind((SWITCH_IP, 0))
    port = probe.getsockname()[1]
    probe.close()  # a port that was free a moment ago
    w = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    w.bind((WORKER_IP, 0))
    w.connect((SWITCH_IP, port))
    w.setblocking(False)
    try:
        j = job(nslots=64)
        s, _ = make(j, 40)
        s.native_io(native(), w.fileno())
        w.send(b"probe")  # refused: the error waits on the socket for the next send
        time.sleep(0.05)
        s.pump(0.0)
        assert s.blocked and s.next_index == 0 and s.stats.packets_sent == 0
        sw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sw.bind((SWITCH_IP, port))
        sw.settimeout(2.0)
        try:
            s.pump(0.01)
            assert not s.blocked and s.next_index == 40
            assert [decode(sw.recv(4096))[0].chunk for _ in range(40)] == list(range(40))
            sw.setblocking(False)
            with pytest.raises(BlockingIOError):
                sw.recv(4096)  # nothing twice
        finally:
            sw.close()
    finally:
        w.close()


def test_wide_results_fill_their_rows_as_in_python(pair: tuple[socket.socket, socket.socket]) -> None:
    """A packed stream (int8, 4 chunks a packet) takes wide results: 256 words a row."""
    w, sw = pair
    j = job(nslots=16)
    py, _ = make(j, 4, first=8, fmt=FMT_INT8)
    nat, _ = make(j, 4, first=8, fmt=FMT_INT8)
    nat.native_io(native(), w.fileno())
    for s in (py, nat):
        s.pump(0.0)
    drain(sw, nat.stats.packets_sent)
    for index in (2, 0):
        chunk = 8 + 4 * index
        slot, copy = slot_of(chunk, j.nslots)
        h = IncHeader(j.tenant, j.round, slot, chunk, flags=F_RESULT | (F_VERSION if copy else 0),
                      count=j.workers, epoch=j.epoch, format=FMT_WIDE32)  # fmt: skip
        d = encode(h, np.arange(WIDE_WORDS, dtype=np.uint32) * (index + 3))
        sw.send(d)
        assert py.receive(d, SOURCE, 0.1)
    assert nat.take_native() == 2
    assert nat.result.shape == (4, WIDE_WORDS) and np.array_equal(nat.result, py.result)
    assert nat.result[2, 255] == 255 * 5 and nat.done.tolist() == [True, False, True, False]


def test_stream_parameters_and_buffers_are_checked(pair: tuple[socket.socket, socket.socket]) -> None:
    w, _ = pair
    module = native()
    j = job()
    s, _ = make(j, 4)
    with pytest.raises(ValueError, match="smaller than the stream"):
        module.ChunkIO(
            w.fileno(), s.wire[:100], s.result, s.done, np.zeros(64, np.int64), first=0, groups=1,
            space=s.space, nslots=8, total=4, row_bytes=256, tenant=3, round=1, kind=0, epoch=99, fmt=0,
            reply_fmt=0, workers=2,
        )  # fmt: skip
    with pytest.raises(ValueError, match="invalid stream parameters"):
        module.ChunkIO(
            w.fileno(), s.wire, s.result, s.done, np.zeros(64, np.int64), first=0, groups=0,
            space=s.space, nslots=8, total=4, row_bytes=256, tenant=3, round=1, kind=0, epoch=99, fmt=0,
            reply_fmt=0, workers=2,
        )  # fmt: skip
    s.native_io(module, w.fileno())
    with pytest.raises(IndexError, match="outside the stream"):
        s.io.send(3, 2)
    with pytest.raises(ValueError, match="only F_URGENT"):
        s.io.send(0, 1, F_RETRANSMIT)  # a first transmission is not a repair
    sparse, _ = make(j, 4)
    sparse.present = np.ones(4, dtype=bool)
    with pytest.raises(ValueError, match="dense rows only"):
        sparse.native_io(module, w.fileno())


def _echo_switch(sock: socket.socket, stop: threading.Event) -> None:
    """A one-worker job's switch: each contribution back as its result (all of them, repeats too)."""
    while not stop.is_set():
        try:
            packet, worker = sock.recvfrom(4096)
        except TimeoutError:
            continue
        header, lanes = decode(packet)
        header.flags = (header.flags & F_VERSION) | F_RESULT
        sock.sendto(encode(header, lanes), worker)


@pytest.mark.parametrize("io", ["python", "native"])
def test_a_worker_allreduces_exactly_through_either_path(io: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_IO, io)
    sw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sw.bind((SWITCH_IP, INC_UDP_PORT))
    sw.settimeout(0.05)
    stop = threading.Event()
    t = threading.Thread(target=_echo_switch, args=(sw, stop), daemon=True)
    t.start()
    values = (np.arange(300 * INC_LANES, dtype=np.int64) * 7919) % 100_003 - 50_000
    try:
        j = IncJob(tenant=7, switch_ip=SWITCH_IP, bind_ip=WORKER_IP, nslots=64, workers=1, epoch=5, rto_s=0.5)
        with IncWorker(j) as w:
            assert w.connected
            out = w.allreduce(values, "int32")
            # float32: two calls (the blocks' exponents by max, then the values), chunk numbers going on
            floats = w.allreduce(values.astype(np.float32) / 64, "float32")
    finally:
        stop.set()
        t.join(timeout=5)
        sw.close()
    assert np.array_equal(out, values)
    assert np.allclose(floats, values / 64, rtol=0, atol=1e-3 * np.abs(values / 64).max())
    assert w.stats.native_calls == (3 if io == "native" else 0)  # int32, float32's exponents and values
