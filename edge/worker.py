"""The worker library: allreduce of numpy arrays through the switches (docs/protocol.md).

A worker streams its vector as chunks of 64 int32 values to its site's switch. The tenant owns
`nslots` slots there; chunk k uses slot k mod nslots and that slot's copy (k div nslots) mod 2, and a
slot is reused only after the result of its previous chunk came back, so at most `nslots` chunks are
in flight: the window is bounded by the switch memory the tenant owns, and below that by a
delay-based congestion window (`DelayWindow`). A chunk whose result does not
come back within the retransmission timeout is sent again (flagged), with exponential backoff; the
switches recognise repeats, so a result is never counted twice. If no result at all arrives for
`stall_timeout` seconds the call fails with IncTimeoutError naming the missing chunks: a dead peer
makes the others fail clearly rather than hang.
"""

from __future__ import annotations

import select
import socket
import time
from dataclasses import dataclass, field

import numpy as np

from edge import formats
from edge.protocol import (
    F_RESULT,
    F_RETRANSMIT,
    F_VERSION,
    INC_UDP_PORT,
    KIND_MAX,
    KIND_SUM,
    PACKET_LEN,
    IncHeader,
    MalformedPacket,
    decode,
    encode,
    slot_of,
    worker_port,
)


class IncTimeoutError(TimeoutError):
    """No progress: results stopped arriving (a peer died, the tree is not installed, or the path is down)."""


class IncProtocolError(RuntimeError):
    """A result that cannot be right for this job (wrong contribution count): a configuration error."""


@dataclass
class IncJob:
    """What a worker must know of its job (the controller hands it out)."""

    tenant: int
    switch_ip: str  # the site switch's INC address (any address routed to that switch works)
    nslots: int  # slots the tenant owns at this worker's switch: the sending window
    workers: int  # contributors in the whole tree
    round: int = 0  # schedule step: selects the tree in the switches
    rto_s: float = 1.0  # first retransmission timeout, before any RTT was measured (RFC 6298's 1 s)
    min_rto_s: float = 0.05
    max_rto_s: float = 8.0
    # RTT of the tree's slowest path (0: unknown). No result can come back sooner than the slowest
    # member's contribution reaches the root and the result returns, so the timeout never goes below
    # it: a fast worker waiting for a far one is not a loss.
    path_rtt_s: float = 0.0
    stall_timeout_s: float = 30.0
    bind_ip: str = "0.0.0.0"
    switch_port: int = INC_UDP_PORT  # where contributions go; results come back to worker_port(tenant)


@dataclass
class TransferStats:
    packets_sent: int = 0
    retransmissions: int = 0
    results: int = 0
    duplicates: int = 0
    seconds: float = 0.0
    srtt_ms: float = 0.0  # at the end of the last call: smoothed RTT, base RTT, window
    base_rtt_ms: float = 0.0
    window: int = 0


@dataclass
class _InFlight:
    lanes: np.ndarray
    first_sent: float
    sent_at: float
    rto: float
    retries: int = 0


@dataclass
class RttEstimator:
    """Smoothed RTT and retransmission timeout as TCP computes them (RFC 6298), from chunks that were
    sent once only (Karn's rule: a retransmitted chunk's RTT is ambiguous)."""

    rto: float
    min_rto: float
    max_rto: float
    srtt: float | None = None
    rttvar: float = 0.0

    def sample(self, rtt: float) -> None:
        if self.srtt is None:
            self.srtt, self.rttvar = rtt, rtt / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - rtt)
            self.srtt = 0.875 * self.srtt + 0.125 * rtt
        # at least 1.5 srtt: a queue in a CPU-bound switch makes RTTs jump by more than rttvar predicts,
        # and a spurious retransmission costs every switch on the path work
        self.rto = min(self.max_rto, max(self.min_rto, self.srtt + 4 * self.rttvar, 1.5 * self.srtt))


@dataclass
class DelayWindow:
    """How many chunks may be in flight: a delay-based window in the manner of Swift.

    The switches of a tree are shared, and on this emulation their CPU is the bottleneck; an overloaded
    switch shows as queueing delay long before it drops. So the window grows while the measured RTT
    stays near the smallest RTT seen (the path's propagation delay) and shrinks in proportion to the
    excess delay when it does not, at most once per RTT. Random loss, which a WAN has without any
    congestion, does not shrink it: timeouts only trigger retransmission. The window never exceeds the
    tenant's slots.
    """

    limit: int
    cwnd: float = 512.0
    min_cwnd: float = 2.0
    additive: float = 8.0  # chunks added per RTT once out of slow start
    base_rtt: float = float("inf")
    last_decrease: float = 0.0
    slow_start: bool = True

    def __post_init__(self) -> None:
        self.cwnd = min(self.cwnd, float(self.limit))

    @property
    def size(self) -> int:
        return max(1, min(self.limit, int(self.cwnd)))

    def target(self) -> float:
        """The RTT the window aims at: the path's own plus a bounded queue (a fifth of it and 20 ms)."""
        return self.base_rtt * 1.2 + 0.020

    def on_sample(self, rtt: float, now: float, smoothed: float | None = None) -> None:
        """One RTT sample; `smoothed` (the estimator's srtt) is what is compared with the target, so a
        single late result (a scheduling hiccup) does not shrink the window."""
        self.base_rtt = min(self.base_rtt, rtt)
        level = rtt if smoothed is None else smoothed
        target = self.target()
        if level <= target:
            if self.slow_start:
                self.cwnd += 1.0
            else:  # additive increase, scaled with the window so large windows recover in a few RTTs
                self.cwnd += max(self.additive, self.cwnd / 16.0) / self.cwnd
        elif now - self.last_decrease >= level:
            self.slow_start = False
            self.cwnd = max(self.min_cwnd, self.cwnd * (1.0 - 0.5 * (level - target) / level))
            self.last_decrease = now
        self.cwnd = min(self.cwnd, float(self.limit))


@dataclass
class IncWorker:
    """One worker's endpoint. Chunk numbers continue across calls, so successive collectives never
    confuse a late packet of the previous call with the next one."""

    job: IncJob
    next_chunk: int = 0
    stats: TransferStats = field(default_factory=TransferStats)

    def __post_init__(self) -> None:
        if self.job.nslots < 1:
            raise ValueError("a job needs at least one slot")
        floor = max(self.job.min_rto_s, 1.2 * self.job.path_rtt_s)
        self.rtt = RttEstimator(max(self.job.rto_s, floor), floor, self.job.max_rto_s)
        self.window = DelayWindow(self.job.nslots)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
        self.sock.bind((self.job.bind_ip, worker_port(self.job.tenant)))
        self.sock.setblocking(False)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> IncWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- public collectives ---------------------------------------------------------------------------

    def allreduce(self, values: np.ndarray, mode: str = "int32") -> np.ndarray:
        """The element-wise sum over all workers of the job, with the input's shape.

        mode "int32": exact (int32 input, wrap-around on overflow); "float32": fixed point with per-block
        exponents (error per element at most workers * 2**-(shift+1) of its block; see edge.formats)."""
        arr = np.asarray(values)
        if mode == "int32":
            lanes = formats.int32_to_lanes(arr)
            out = self.reduce_lanes(lanes, KIND_SUM)
            return formats.lanes_to_int32(out, arr.size).reshape(arr.shape)
        if mode == "float32":
            lanes_f = formats.pad_to_lanes(np.ascontiguousarray(arr, dtype=np.float32))
            shifts = self.agree_shifts(lanes_f)
            fixed = formats.float_to_fixed(lanes_f, shifts)
            summed = self.reduce_lanes(fixed, KIND_SUM)
            result = formats.fixed_to_float(summed, shifts).reshape(-1)[: arr.size]
            return result.astype(np.float32).reshape(arr.shape)
        raise ValueError(f"mode must be 'int32' or 'float32', got {mode!r}")

    def agree_shifts(self, lanes_f: np.ndarray) -> np.ndarray:
        """Every worker's scaling exponents for its blocks, agreed through a max-reduction in the switches."""
        local = formats.block_exponents(lanes_f)
        agreed = self.reduce_lanes(formats.pad_to_lanes(local), KIND_MAX).reshape(-1)[: local.size]
        return formats.scale_exponents(agreed, self.job.workers)

    # --- the streaming engine -------------------------------------------------------------------------

    def _send(self, chunk: int, lanes: np.ndarray, kind: int, retransmit: bool) -> bool:
        """Send one chunk; False when the socket's buffer is full (try again later)."""
        slot, copy = slot_of(chunk, self.job.nslots)
        flags = (F_VERSION if copy else 0) | (F_RETRANSMIT if retransmit else 0)
        header = IncHeader(self.job.tenant, self.job.round, slot, chunk, kind=kind, flags=flags)
        try:
            self.sock.sendto(encode(header, lanes), (self.job.switch_ip, self.job.switch_port))
        except (BlockingIOError, InterruptedError):
            return False
        self.stats.packets_sent += 1
        if retransmit:
            self.stats.retransmissions += 1
        return True

    def reduce_lanes(self, lanes: np.ndarray, kind: int) -> np.ndarray:
        """Reduce rows of 64 uint32 lanes over all workers; returns the reduced rows."""
        job = self.job
        total = lanes.shape[0]
        first = self.next_chunk
        self.next_chunk += total
        result = np.zeros_like(lanes, dtype=np.uint32)
        done = np.zeros(total, dtype=bool)
        remaining = total
        inflight: dict[int, _InFlight] = {}
        next_index = 0
        started = time.monotonic()
        last_progress = started
        buf = bytearray(2048)

        def launch(now: float) -> None:
            nonlocal next_index
            # a slot is free once the chunk nslots before it is done
            while next_index < total and len(inflight) < self.window.size:
                if next_index >= job.nslots and not done[next_index - job.nslots]:
                    break
                if not self._send(first + next_index, lanes[next_index], kind, retransmit=False):
                    break  # the socket is full: the rest goes out on a later pass
                inflight[next_index] = _InFlight(lanes[next_index], now, now, self.rtt.rto)
                next_index += 1

        launch(time.monotonic())
        while remaining:
            now = time.monotonic()
            rto_now = self.rtt.rto
            # a chunk sent once waits for the current estimate (which the first results bring down from
            # the initial 1 s); a retransmitted one for its own backed-off timeout
            deadline = min(
                (f.sent_at + (f.rto if f.retries else rto_now) for f in inflight.values()), default=now + 0.1
            )
            wait = max(0.0, min(deadline - now, 0.1))
            readable, _, _ = select.select([self.sock], [], [], wait)
            if readable:
                while True:
                    try:
                        n = self.sock.recv_into(buf)
                    except BlockingIOError:
                        break
                    try:
                        header, values = decode(memoryview(buf)[:n]) if n >= PACKET_LEN else (None, None)
                    except MalformedPacket:
                        continue
                    if header is None or values is None or not header.flags & F_RESULT:
                        continue
                    if header.tenant != job.tenant or header.round != job.round:
                        continue
                    index = header.chunk - first
                    if not 0 <= index < total or done[index]:
                        self.stats.duplicates += 1
                        continue
                    if header.count != job.workers:
                        raise IncProtocolError(
                            f"chunk {header.chunk}: the result sums {header.count} contributions, but the job "
                            f"has {job.workers} workers: the tree installed in the switches does not match"
                        )
                    result[index] = values
                    done[index] = True
                    remaining -= 1
                    f = inflight.pop(index, None)
                    if f is not None and f.retries == 0:
                        sample_at = time.monotonic()
                        self.rtt.sample(sample_at - f.first_sent)
                        self.window.on_sample(sample_at - f.first_sent, sample_at, self.rtt.srtt)
                    self.stats.results += 1
                    last_progress = time.monotonic()
            now = time.monotonic()
            launch(now)
            rto_now = self.rtt.rto
            for index, f in inflight.items():
                if now - f.sent_at >= (f.rto if f.retries else rto_now):
                    if not self._send(first + index, f.lanes, kind, retransmit=True):
                        break
                    f.sent_at = now
                    f.retries += 1
                    f.rto = min(rto_now * 2**f.retries, job.max_rto_s)  # exponential backoff
            if now - last_progress > job.stall_timeout_s:
                missing = sorted(inflight)[:8]
                raise IncTimeoutError(
                    f"tenant {job.tenant}: no result for {now - last_progress:.1f} s; {remaining} of {total} "
                    f"chunks missing (first: {[first + i for i in missing]}); a worker of the job may be dead, "
                    f"or the job's tree is not installed on switch {job.switch_ip}"
                )
        self.stats.seconds += time.monotonic() - started
        self.stats.srtt_ms = round((self.rtt.srtt or 0.0) * 1000, 1)
        self.stats.base_rtt_ms = round(min(self.window.base_rtt, 1e6) * 1000, 1)
        self.stats.window = self.window.size
        return result
