"""The worker library: allreduce of numpy arrays through the switches (docs/protocol.md).

A worker streams its vector as chunks of 64 int32 values to its site's switch. The tenant owns
`nslots` slots there; chunk k uses slot k mod nslots and that slot's copy (k div nslots) mod 2, and a
slot is reused only after the result of its previous chunk came back, so at most `nslots` chunks are
in flight: the window is bounded by the switch memory the tenant owns, and below that by a
delay-based congestion window (`DelayWindow`) that starts at twice the path's bandwidth-delay product
when the job says the tree's rate (`IncJob.rate_bps`); the chunks are then spaced at that rate (`Pacer`).
A chunk is sent again (flagged) as soon as the result of a chunk sent after it arrives (the paths are
FIFO, so the hole is a loss), or, without later results, after the retransmission timeout; a
retransmitted chunk waits one slowest-path RTT for its repair, with exponential backoff. The switches
recognise repeats, so a result is never counted twice. If no result at all arrives for
`stall_timeout` seconds the call fails with IncTimeoutError naming the missing chunks: a dead peer
makes the others fail clearly rather than hang.

A result is taken only from the worker's own tree: from its switch's INC address and port, for its
tenant, round and epoch, for a chunk it is waiting for, summing exactly the job's workers. Anything else
is counted and ignored (stats.rejected). The worker's result port is bound exclusively: a second process
on the same port fails at once instead of silently sharing the results.

The stream logic (`ReduceStream`) does no I/O of its own: it is given a clock and a transmit function,
so the same code runs over a UDP socket (IncWorker) and inside a simulated network (the tests).
"""

from __future__ import annotations

import errno
import heapq
import select
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from edge import formats, sparse
from edge.native import chunk_io
from edge.protocol import (
    F_RESULT,
    F_RETRANSMIT,
    F_URGENT,
    F_VERSION,
    FMT_EMPTY,
    FMT_INT32,
    FMT_WIDE32,
    FRAME_LEN,
    FRAME_OVERHEAD,
    GROUPS,
    HEADER,
    HEADER_LEN,
    INC_LANES,
    INC_UDP_PORT,
    INC_VERSION,
    KIND_SUM,
    LANE_DTYPE,
    WIDE_OF,
    WIDE_WORDS,
    chunk_space,
    header_bytes,
    lanes_bytes,
    packet_len,
    slot_of,
    worker_port,
)
from edge.secure import PairwiseMasks, masked
from edge.spec import RoundSpec, WorkerSpec


class IncTimeoutError(TimeoutError):
    """No progress: results stopped arriving (a peer died, the tree is not installed, or the path is down)."""


class IncProtocolError(RuntimeError):
    """A result that cannot be right for this job (wrong contribution count): a configuration error."""


class IncPortInUse(OSError):
    """The tenant's result port on this host is taken (another worker of the same tenant here?)."""


@dataclass
class IncJob:
    """What a worker must know of its job (the controller hands it out)."""

    tenant: int
    switch_ip: str  # the site switch's INC address: contributions go there, results come from there
    nslots: int  # slots the tenant owns at this worker's switch: the sending window
    workers: int  # contributors in the whole tree
    epoch: int  # the job's generation (from the controller); switches drop packets of other epochs
    round: int = 0  # schedule step: selects the tree in the switches
    rto_s: float = 1.0  # first retransmission timeout, before any RTT was measured (RFC 6298's 1 s)
    min_rto_s: float = 0.05
    max_rto_s: float = 8.0
    # RTT of the tree's slowest path (0: unknown). No result can come back sooner than the slowest
    # member's contribution reaches the root and the result returns, so the timeout never goes below
    # it: a fast worker waiting for a far one is not a loss.
    path_rtt_s: float = 0.0
    # bits/s the tree's slowest link gives this job (0: unknown): the pace of the chunks, and with the
    # path RTT the window the path needs from the start
    rate_bps: float = 0.0
    # bits/s of the job's fair share of those links among the jobs admitted beside it (0: unknown): the
    # pace to start at, which grows up to rate_bps while no queue shows (RateControl)
    share_bps: float = 0.0
    stall_timeout_s: float = 30.0
    bind_ip: str = "0.0.0.0"
    switch_port: int = INC_UDP_PORT  # where contributions go; results come back to worker_port(tenant)

    @classmethod
    def from_spec(cls, spec: WorkerSpec, role: RoundSpec | None = None) -> IncJob:
        """The job as `spec` gives it, in `role`'s round (default: the worker's first round)."""
        if role is None and spec.rounds:
            role = spec.rounds[0]
        if role is None:
            raise ValueError(f"worker {spec.host or '?'} of tenant {spec.tenant} takes part in no round")
        return cls(
            tenant=spec.tenant,
            switch_ip=spec.switch_ip,
            nslots=spec.nslots,
            workers=role.clique_size,
            epoch=spec.epoch,
            round=role.round,
            rto_s=role.rto_s,
            path_rtt_s=role.path_rtt_s,
            rate_bps=role.rate_bps,
            share_bps=role.share_bps,
            stall_timeout_s=spec.stall_timeout_s,
        )

    def enter(self, role: RoundSpec) -> None:
        """Switch to `role`'s round: its tree, clique size and timing parameters."""
        self.round, self.workers = role.round, role.clique_size
        self.rto_s, self.path_rtt_s, self.rate_bps = role.rto_s, role.path_rtt_s, role.rate_bps
        self.share_bps = role.share_bps


@dataclass
class TransferStats:
    packets_sent: int = 0
    retransmissions: int = 0
    results: int = 0
    duplicates: int = 0
    rejected: int = 0  # datagrams that were not a result of this job's tree (wrong source, epoch, ...)
    bytes_sent: int = 0  # frames on the host link (Ethernet + IPv4 + UDP + INC), retransmissions included
    bytes_received: int = 0  # every INC datagram that reached the result port, as frames
    unpacked_calls: int = 0  # narrow inputs sent as int32 lanes (slots not a multiple of 4, or --secure)
    native_calls: int = 0  # calls whose new chunks and results went through the native I/O (edge.native)
    early_retransmissions: int = 0  # of the retransmissions: sent because a later chunk's result came first
    repeat_retransmissions: int = 0  # of the retransmissions: a chunk's second or later one (a lost repair)
    repair_copies: int = 0  # copies of repairs sent in the tail (ReduceStream._copy_lag), not retransmissions
    tail_probes: int = 0  # of the retransmissions: the newest chunk, sent again once the results paused
    blind_timeouts: int = 0  # of the retransmissions: timeouts before any result of the call came
    repeats_shortened: int = 0  # of the repeats: the repair's wait had been cut, the chunks ahead back
    # whether repairs are given the time they take: the waits given to the `first_repairs`, and the time
    # a repair answered before any repeat took (ms, summed), over `repairs_answered` of them
    first_repairs: int = 0
    repair_wait_ms: int = 0
    repair_answer_ms: int = 0
    repairs_answered: int = 0
    seconds: float = 0.0
    srtt_ms: float = 0.0  # at the end of the last call: smoothed RTT, base RTT, window
    base_rtt_ms: float = 0.0
    window: int = 0
    all_sent_s: float = 0.0  # the last call: seconds from its start until its last new chunk went out
    pace_cuts: int = 0  # times the pace was cut for a queue (RateControl), over all calls
    min_pace_mbit: float = 0.0  # the lowest pace of the last call (0: not paced)
    # the last call's tail, to see what a worker that finished late waited for (ReduceStream.tail_report):
    # its last retransmissions, its last results, and the longest wait any repair was given
    tail: dict[str, object] = field(default_factory=dict)


@dataclass
class _InFlight:
    first_sent: float
    sent_at: float
    retries: int = 0
    due: float = float("inf")  # when its repair counts as lost (ReduceStream.repairs)
    repaired_at: float = 0.0  # when its first repair went
    shortened: bool = False  # its repair's wait was cut once the chunks ahead were back
    copied: bool = False  # a copy of it went (ReduceStream._copy_lag): its RTT is no clean sample


@dataclass
class RttEstimator:
    """Smoothed RTT and retransmission timeout as TCP computes them (RFC 6298), from chunks that were
    sent once only (Karn's rule: a retransmitted chunk's RTT is ambiguous) and whose results came in
    order: a result that comes after a later chunk's waited for somebody's repair, and would make every
    worker's estimate (and timeout) as long as a loss recovery."""

    rto: float
    min_rto: float
    max_rto: float
    srtt: float | None = None
    rttvar: float = 0.0
    latest: float = 0.0  # the last sample
    stamp: float = 0.0  # when it was taken

    def sample(self, rtt: float, now: float = 0.0) -> None:
        self.latest, self.stamp = rtt, now
        if self.srtt is None:
            self.srtt, self.rttvar = rtt, rtt / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - rtt)
            self.srtt = 0.875 * self.srtt + 0.125 * rtt
        # at least 1.25 srtt: a queue in a CPU-bound switch makes RTTs jump by more than rttvar predicts,
        # and a spurious retransmission costs every switch on the path work. Most losses are found by
        # the order of the results (ReduceStream), so this timeout only serves the last chunks.
        self.rto = min(self.max_rto, max(self.min_rto, self.srtt + 4 * self.rttvar, 1.25 * self.srtt))


@dataclass
class DelayWindow:
    """How many chunks may be in flight: a delay-based window in the manner of Swift.

    The switches of a tree are shared, and on this emulation their CPU is the bottleneck; an overloaded
    switch shows as queueing delay long before it drops. So the window grows while the measured RTT
    stays near the smallest RTT seen (the path's propagation delay) and shrinks in proportion to the
    excess delay when it does not, at most once per RTT. Random loss, which a WAN has without any
    congestion, does not shrink it: timeouts only trigger retransmission. The window never exceeds the
    tenant's slots.

    It starts at `cwnd`: 512 chunks on a path of unknown rate, twice the bandwidth-delay product when
    the job says the rate (`PathTiming.for_job`). Growing there from 512 by one chunk per result would
    take longer than the transfer, and the delay target stops the growth early on a path whose switches
    share their CPU; twice covers the product plus the chunks that wait for a repair. The pacer, not the
    window, then sets the rate, and the window binds only when the path's queues say it is shared.
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
class Pacer:
    """Spaces a worker's packets at the rate its tree's slowest link carries them: a token bucket.

    Why: the window must cover the path's bandwidth-delay product from the first RTT, but that many
    packets sent at once would overflow the first link's queue (1,000 packets of 322 bytes at 50 Mbit/s
    are 52 ms, a third of the WAN's RTT) and make the RTTs of everything behind them a queue's. Spaced
    at the link's rate, they arrive as fast as the link drains them. The bucket holds `burst` packets
    (2 ms of them, 8 to 64), so a Python loop wakes once per few packets (ReduceStream.wakeup), not once
    per packet. While the caller is busy sending, it holds `catch_up` (8 ms, 8 to 256): a worker that
    woke late, its core busy with a switch or another worker, sends the time it lost instead of losing
    it, and the burst waits a few ms in the link's queue. With 2 ms there too, the three-site workers'
    last new chunk went out 13-33 ms (once 100 ms) after the 211 ms that 4,096 chunks take at the
    link's rate; with 8 ms, 0-9 ms (once 40 ms) after (scripts/repro_stall.py, `max_all_sent_s`). A
    caller that had nothing to send (`rest`: the window or the slots held it back) gets the small
    bucket back: its pause is no lateness, and 8 ms of eighteen workers at once into a CPU-bound switch
    sent repairs again while their first copy was still queued (tests/edge/test_worker_queue.py). A
    rate of 0 paces nothing.
    """

    rate: float = 0.0  # packets per second
    burst: float = 8.0
    catch_up: float = 8.0
    tokens: float = 0.0
    stamp: float = float("-inf")
    resting: bool = True  # the caller had nothing to send when it last looked: the small bucket

    BURST_S, CATCH_UP_S = 0.002, 0.008  # the buckets: 2 ms of packets (8 to 64), 8 ms (8 to 256)
    MIN_BURST, MAX_BURST, MAX_CATCH_UP = 8.0, 64.0, 256.0

    def set_rate(self, rate: float) -> None:
        """Pace at `rate` packets per second from now on (0: no pacing)."""
        if rate != self.rate:
            self.rate = rate
            self.burst = min(self.MAX_BURST, max(self.MIN_BURST, rate * self.BURST_S))
            self.catch_up = min(self.MAX_CATCH_UP, max(self.MIN_BURST, rate * self.CATCH_UP_S))
            self.tokens = min(self.tokens, self._cap())

    def _cap(self) -> float:
        return self.burst if self.resting else self.catch_up

    def allowance(self, now: float) -> int:
        """How many packets may go now (a large number when unpaced)."""
        if not self.rate:
            return 1 << 30
        self.tokens = min(self._cap(), self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        self.resting = False
        return int(self.tokens + 1e-9)

    def rest(self) -> None:
        """The caller stopped with tokens left (nothing it may send): until it looks again, the tokens
        its pause earns fill the small bucket only."""
        self.resting = True
        self.tokens = min(self.tokens, self.burst)

    def spend(self, packets: int = 1) -> None:
        if self.rate:
            self.tokens -= packets

    def ready_at(self, now: float, packets: float) -> float:
        """When `packets` (at most a bucket) may go."""
        if not self.rate:
            return now
        missing = min(packets, self._cap()) - self.tokens
        return now if missing <= 0 else max(now, self.stamp + missing / self.rate)


@dataclass
class RateControl:
    """The pace and the window, when the job knows its tree's slowest link: start at the link's rate (or at
    the job's fair share of it, when the controller admitted other jobs onto the same links: `start_bps`)
    with twice that rate's bandwidth-delay product in flight, and keep the path's queues short.

    Why not simply the link's rate: on this emulation every switch and worker shares two cores, and at
    the links' rate they may not keep up. The excess then waits in the switches' receive rings and the
    workers' sockets, where the RTT shows it, and every repair waits behind it. So every quarter of a
    propagation RTT (a round), the smallest clean RTT of the round's results is compared with the target
    (the propagation RTT, a fifth more and 20 ms, as DelayWindow). Above it, the path delivers all it
    can: the pace drops to 0.9 of the best rate the results arrived at over the last RTT, and the window
    to 1.25 times that rate's product with the propagation RTT, so the queue drains (no new chunk goes
    out until enough results came back) while the path stays busy; then it holds for an RTT, the time
    the change takes to show. At or below it, the pace grows by a quarter per RTT, up to the link's
    rate, with twice its product in flight. The propagation RTT is the smallest seen and never above the
    tree's slowest path (the job says it), so a queue present from the first packet on is seen as one."""

    peak_bps: float
    rate_bps: float = 0.0
    start_bps: float = 0.0  # the pace a call starts at: the job's fair share of the links (0: the peak)
    base_rtt: float = float("inf")
    queued: bool = False  # the last round saw a queue
    round_start: float | None = None
    round_min: float = float("inf")
    delivered_bits: float = 0.0
    recent: list[float] = field(default_factory=list)  # delivered rates of the last rounds
    hold_until: float = float("-inf")  # no second decrease before the first one shows
    cuts: int = 0  # decreases so far (reported in TransferStats)
    best_bps: float = 0.0  # the best delivered rate of a round in this call (RateControl.restart: 0)
    lowest_bps: float = 0.0  # the lowest pace since the last restart

    FLOOR = 1 / 64  # the pace never falls below this fraction of the link's rate
    INCREASE = 1.25  # per propagation RTT
    DRAIN = 0.9
    ROUNDS = 4  # rounds per propagation RTT

    def __post_init__(self) -> None:
        self.start_bps = min(self.start_bps or self.peak_bps, self.peak_bps)
        self.rate_bps = self.rate_bps or self.start_bps
        self.lowest_bps = self.rate_bps

    def target(self) -> float:
        return self.base_rtt * 1.2 + 0.020

    def restart(self) -> None:
        """A new call on the path: the previous one is complete, so nothing of it is queued, and the
        results of its last rounds (a few repairs, nothing left to send) say nothing of the path's
        rate. Without this, a call's tail could leave the next call (float32's values after its
        exponents, sparse rows after their agreement) paced at the floor."""
        self.rate_bps, self.queued, self.recent = self.start_bps, False, []
        self.round_start, self.round_min, self.delivered_bits = None, float("inf"), 0.0
        self.hold_until = float("-inf")
        self.lowest_bps = self.rate_bps
        self.best_bps = 0.0

    def window(self, frame_bytes: int) -> float:
        """Packets of `frame_bytes` that may be in flight."""
        gain = 1.25 if self.queued else 2.0
        return gain * self.rate_bps / (8.0 * frame_bytes) * min(self.base_rtt, 10.0)

    def on_result(self, now: float, bits: float, rtt: float | None) -> bool:
        """One new result of `bits` on the bottleneck; `rtt` when it is a clean sample (RttEstimator).
        True when what `window` depends on may have changed (most results only add to the round)."""
        changed = False
        if rtt is not None:
            if rtt < self.base_rtt:
                self.base_rtt, changed = rtt, True
            if rtt < self.round_min:
                self.round_min = rtt
        if self.round_start is None:
            self.round_start = now  # the first result opens the first round
            return changed
        self.delivered_bits += bits
        span = now - self.round_start
        base = min(self.base_rtt, 10.0)
        if span < max(base / self.ROUNDS, 0.010) or self.round_min == float("inf"):
            return changed
        self.recent = [*self.recent[1 - self.ROUNDS :], self.delivered_bits / span]
        self.best_bps = max(self.best_bps, self.recent[-1])
        self.queued = self.round_min > self.target()
        if not self.queued:
            self.rate_bps = min(self.peak_bps, self.rate_bps * self.INCREASE ** (span / base))
        elif now >= self.hold_until:
            best = min(self.peak_bps, max(self.recent))
            self.rate_bps = max(self.peak_bps * self.FLOOR, self.DRAIN * best)
            self.hold_until = now + self.round_min
            self.cuts += 1
            self.lowest_bps = min(self.lowest_bps, self.rate_bps)
        self.round_start, self.round_min, self.delivered_bits = now, float("inf"), 0.0
        return True


@dataclass
class PathTiming:
    """What a worker learns about one path (one round's tree): its RTT estimate, its window and its pace.
    Rounds of a schedule use different trees, so each keeps its own: a far round's RTTs must not shrink a
    near round's window, nor a near round's timeout fire early on a far one."""

    rtt: RttEstimator
    window: DelayWindow
    pacer: Pacer = field(default_factory=Pacer)
    path_rtt: float = 0.0  # the tree's slowest path RTT (0: unknown)
    control: RateControl | None = None  # the pace, when the job knows its slowest link's rate
    min_repair: float = 0.05  # the least a repair waits (the job's min_rto_s)
    cwnd_of: int = 0  # the frame size the window was last computed for (on_result)

    @classmethod
    def for_job(cls, job: IncJob) -> PathTiming:
        floor = max(job.min_rto_s, 1.2 * job.path_rtt_s)
        cwnd = DelayWindow.cwnd
        control = None
        if job.rate_bps:
            control = RateControl(job.rate_bps, start_bps=job.share_bps)
            if job.path_rtt_s:  # twice the pace's product, in int32 frames (the most packets)
                control.base_rtt = job.path_rtt_s
                cwnd = max(cwnd, control.window(FRAME_LEN))
        return cls(
            RttEstimator(max(job.rto_s, floor), floor, job.max_rto_s),
            DelayWindow(job.nslots, cwnd=cwnd),
            path_rtt=job.path_rtt_s,
            control=control,
            min_repair=job.min_rto_s,
        )

    def on_result(self, now: float, frame_bytes: int, rtt: float | None) -> None:
        """A new result came; `rtt` is its chunk's RTT when that is a clean sample (sent once, in order)."""
        if rtt is not None:
            self.rtt.sample(rtt, now)
            if self.control is None:
                self.window.on_sample(rtt, now, self.rtt.srtt)
            else:
                self.window.base_rtt = min(self.window.base_rtt, rtt)
        control = self.control
        if control is not None and (
            control.on_result(now, 8.0 * frame_bytes, rtt) or frame_bytes != self.cwnd_of
        ):
            # once per round, not per result: the window follows the pace, which changes once a round
            self.cwnd_of = frame_bytes
            self.window.cwnd = min(float(self.window.limit), max(64.0, control.window(frame_bytes)))

    def propagation(self) -> float:
        """The path's RTT without a queue: the smallest clean RTT, but never above the tree's slowest path
        (the job says it). On nine sites the first window fills the switches' receive rings before the
        first result is back, so even the smallest RTT measured is mostly queue (0.5-5 s against a
        170 ms path): taken as the propagation, it hid that queue from every repair's timeout."""
        base = self.window.base_rtt
        return min(base, self.path_rtt) if self.path_rtt else base

    def queue(self, now: float) -> float:
        """The queueing delay on the path: the latest clean RTT above the propagation RTT when measured,
        less the time since (a queue drains at least as fast as time passes once nothing new joins it,
        and the last chunks bring no new measurement)."""
        rtt = self.rtt
        if rtt.srtt is None:
            return 0.0
        return max(0.0, rtt.latest - self.propagation() - max(0.0, now - rtt.stamp))

    def fresh_timeout(self) -> float:
        """How long a chunk sent once waits for its result when no later result shows it lost (the last
        chunks): the retransmission timeout, or more when the latest clean RTT already exceeds it (a
        queue grows faster than the smoothed RTT follows, and a timeout then would only add to it)."""
        return max(self.rtt.rto, 1.25 * self.rtt.latest + 0.010)

    def tail_timeout(self) -> float:
        """How long the last chunks wait once nothing new is left to send: the latest clean RTT and a
        tenth (the queue they joined was measured by it, and it only drains from then on), at least the
        tree's slowest path RTT and a fifth (the timeout's floor, RttEstimator.min_rto), but not the
        retransmission timeout, whose 4 rttvar a CPU-bound switch's jitter inflates to most of a second.
        A tail-loss probe (RFC 8985) in effect: a spurious one costs the switches one duplicate each,
        a late one delays the whole job, and among tenants sharing the machine it is what makes one of
        them finish long after the others."""
        rtt = self.rtt
        if rtt.srtt is None:
            return self.fresh_timeout()
        # never below the timeout's floor (the tree's slowest path and a fifth): in a later call a near
        # worker's results wait for the far workers, who start that call one one-way delay after it,
        # so its RTT there is the slowest path's, not the one it measured in the first call
        return min(self.fresh_timeout(), max(self.min_repair, rtt.min_rto, 1.1 * rtt.latest + 0.010))

    def quiet_gap(self) -> float:
        """How long results may pause in the tail before a probe goes out: a quarter of the tree's
        slowest path RTT (RACK's reordering window, RFC 8985, is a quarter of the minimum RTT), at least
        10 ms. Results come at the pace of the slowest link and a switch's backlog, a few ms apart."""
        far = self.path_rtt or (self.rtt.srtt or 0.0)
        return max(0.010, far / 4)

    def repair_timeout(self, retries: int, now: float = 0.0, queue: float | None = None) -> float:
        """How long a chunk retransmitted `retries` times waits before it goes again.

        Its repair may need the farthest worker's retransmission too, and that worker sees the hole at
        most one slowest-path RTT after this one (the result that shows it travels from the root to
        each worker): so the repair arrives within that RTT, plus the queue it waits behind, and the RTT's
        variation. The queue is `queue` when the caller counted it (the packets in queues ahead of this
        one at the rate the results arrive: ReduceStream._queue_ahead), else what the latest clean RTT
        showed. Not the larger of the two: the latest RTT is that of a chunk
        sent a whole queue ago, and once the workers have sent their window, the queue it saw has
        drained while nothing new joined it; on nine sites it gave the last repairs a second to wait
        where 0.2 s were left. Before any measurement: the retransmission timeout. Random loss hits a repair as it hits anything else, so the second repair waits as long
        as the first, the third twice and every later one four times as long: on nine sites a chunk
        needs a fourth or fifth repair now and then, and an unbounded doubling left the machine idle
        for seconds at the end; a dead peer's partners still slow down, and its stall timeout ends the
        call."""
        rtt = self.rtt
        if rtt.srtt is None:
            base = rtt.rto
        else:
            far = self.path_rtt or 2 * rtt.srtt
            ahead = self.queue(now) if queue is None else queue
            base = max(self.min_repair, far + ahead + 2 * rtt.rttvar + 0.010)
        return min(rtt.max_rto, base * min(4, 2 ** max(0, retries - 2)))


class ReduceStream:
    """One reduction of `lanes` (rows of 64 uint32) over the job, as a state machine without I/O.

    `pump(now)` sends what the window and the timeouts allow through `transmit` (which returns False when
    the transport is full: the rest goes out on a later pump); `receive(payload, source, now)` takes one
    datagram; `wakeup(now)` says when to pump again at the latest; `check_stall(now)` raises when no result
    has come for the job's stall timeout. Every step costs O(1) per packet (amortised): the first
    transmissions wait in a queue in send order, the retransmitted chunks in a heap of deadlines.

    Loss recovery. Every worker sends its chunks in order and every path is FIFO, so a switch completes
    chunk i before chunk j > i unless something of i was lost, and the results reach each worker in
    chunk order. A result of chunk j therefore shows that every chunk before j - REORDER still waiting
    for its first transmission's result was lost (somebody's contribution, an aggregate or the result):
    it is sent again at once, at the head of the pace, without waiting for a timeout. All workers of
    the job see the same hole and retransmit; the switches turn the repeats into the repair of what was
    lost. A retransmitted chunk waits `PathTiming.repair_timeout` for its result; the last chunks,
    which no later result can vouch for, wait for the retransmission timeout.

    In a packed format (`fmt` FMT_INT8 or FMT_INT4, edge.protocol) each row is one packet that carries G
    = 4 or 8 consecutive chunks (chunk numbers first + G*i .. + G - 1, so `first_chunk` must be a multiple
    of G, as must the job's slots), and each result is one wide packet with all G sums: rows of
    WIDE_WORDS words come back.

    Sparse (int32 only, edge.sparse): `present[i]` False sends row i as an empty contribution (the header
    alone: the row is zero here), and `counts[i]` is the number of workers whose contributions the result
    of row i must sum (those that sent values), instead of all the job's workers."""

    def __init__(
        self,
        job: IncJob,
        lanes: np.ndarray,
        kind: int,
        first_chunk: int,
        timing: PathTiming,
        stats: TransferStats,
        transmit: Callable[[bytes], bool],
        now: float,
        fmt: int = FMT_INT32,
        present: np.ndarray | None = None,
        counts: np.ndarray | None = None,
    ) -> None:
        if (present is not None or counts is not None) and fmt != FMT_INT32:
            raise ValueError("empty contributions (sparse rows) exist for int32 lanes only")
        if job.nslots < 1:
            raise ValueError("a job needs at least one slot")
        if fmt not in WIDE_OF:
            raise ValueError(f"a worker sends int32 lanes or a packed format, not format {fmt}")
        self.groups = GROUPS[fmt]
        if job.nslots % self.groups or first_chunk % self.groups:
            raise ValueError(
                f"format {fmt} packs {self.groups} chunks per packet: the slots ({job.nslots}) and the first "
                f"chunk number ({first_chunk}) must be multiples of {self.groups}"
            )
        self.units = job.nslots // self.groups  # packets in flight that the slots allow
        self.space = chunk_space(job.nslots)
        self.job, self.lanes, self.kind, self.first = job, lanes, kind, first_chunk % self.space
        self.fmt, self.reply_fmt = fmt, WIDE_OF[fmt]
        self.reply_len = packet_len(self.reply_fmt)
        self.timing, self.stats, self.transmit = timing, stats, transmit
        self.total = lanes.shape[0]
        row_words = WIDE_WORDS if fmt == FMT_WIDE32 else INC_LANES  # wide32: 4 chunks' lanes to a row
        if lanes.ndim != 2 or lanes.shape[1] != row_words:
            raise ValueError(
                f"a worker sends rows of {row_words} words in format {fmt}, got shape {lanes.shape}"
            )
        # every row in wire order at once: a packet is its header and a slice of this
        self.wire, self.row_bytes = lanes_bytes(lanes), 4 * lanes.shape[1]
        words = INC_LANES if self.groups == 1 else WIDE_WORDS
        self.result = np.zeros((self.total, words), dtype=np.uint32)
        self.done = np.zeros(self.total, dtype=bool)
        self.remaining = self.total
        # the call's last chunks go out URGENT (_urgent_count): every worker of the job marks the same ones
        self.urgent_from = self.total - self._urgent_count(self.total)
        self.inflight: dict[int, _InFlight] = {}
        self.next_index = 0
        self.fresh: deque[int] = deque()  # indices sent once, in send (= index) order; lazily pruned
        self.lost: deque[int] = deque()  # indices found lost, waiting for their retransmission
        self.repairs: list[tuple[float, int, int]] = []  # (deadline, index, retries) of retransmitted ones
        self.copies: list[tuple[float, int, int]] = []  # (when, index, retries): repairs' copies (_copy_lag)
        # (mark, index, retries) of repairs sent behind a backlog: `mark` is the newest chunk ahead of the
        # repair in every worker's queue (pump). Once a result of it (or of a later chunk) came, the chunks
        # ahead of the repair are back and the repair is due within the path's RTT, whatever the backlog
        # was estimated to need
        self.behind: list[tuple[int, int, int]] = []
        # chunks sent again and still waiting for their result: their last copies are in the queues
        # (or lost), ahead of any packet sent now (_queue_ahead)
        self.repairing = 0
        self.first_result_at = now  # when this call's first result came (_queue_ahead's rate)
        self.results_in_call = 0
        self.highest = -1  # the highest index whose result arrived
        self.advanced = now  # when `highest` last grew
        self.restarted = now  # when a timeout before any result last restarted the timer (_detect)
        self.probed = float("-inf")  # when the last tail-loss probe went out
        self.probe = -1  # its chunk (index)
        self.vouched = -1  # every chunk below it still waiting for its first transmission is lost
        self.holes = 0  # chunks of this call found lost by the order of the results (_detect)
        self.blocked = False  # the transport refused a packet: try again shortly
        # what one packet of this call costs on the slowest link: a packed one is a wide frame on the WAN
        self.frame_bytes = max(packet_len(self.reply_fmt), packet_len(fmt)) + FRAME_OVERHEAD
        if timing.control is not None:
            timing.control.restart()
            timing.window.cwnd = min(
                float(timing.window.limit), max(64.0, timing.control.window(self.frame_bytes))
            )
        self.last_progress = now
        self.started = self.all_sent = now
        # the pace when the last new chunk went out: repairs never go slower. Once everything is sent, the
        # results that come are mostly repairs, which give no clean RTT sample, and a round's delivered
        # rate in the tail is what is left, not what the path can take: a cut then (to the floor, 1/64
        # of the link, on nine sites) paced a worker's 600 repairs at 300 a second, and the machine sat
        # idle for seconds while the queue it was meant to drain was long gone.
        self.tail_rate_bps = 0.0
        self.source = (job.switch_ip, INC_UDP_PORT)
        self.present, self.counts = present, counts
        # a few records of the call's end (tail_report): a fixed-size ring each, O(1) per packet
        self.resent: deque[tuple[float, ...]] = deque(maxlen=self.TRACE)
        self.arrived: deque[tuple[float, ...]] = deque(maxlen=self.TRACE // 2)
        self.longest: tuple[float, ...] = ()
        self.io: Any = None  # the native I/O (native_io), None: the Python path

    TRACE = 16  # retransmissions kept for the tail report (results: half as many)
    BACKLOG_RESULTS = 16  # results of the call before their rate counts the queue (_queue_ahead)

    @property
    def finished(self) -> bool:
        return self.remaining == 0

    def tail_report(self) -> dict[str, object]:
        """What the end of the call looked like, in seconds since its start: the last retransmissions
        [sent at, chunk index, its retries, the wait it was given, the backlog counted in it, probe?],
        the last results [came at, index, retries it had needed], and the longest wait a repair was given
        [sent at, index, retries, wait, backlog, queue by the latest RTT]. A worker that finished long
        after the others shows here which chunk it waited for and why it waited that long."""
        return {
            "resent": [list(r) for r in self.resent],
            "results": [[round(at - self.started, 4), i, retries] for at, i, retries in self.arrived],
            "longest_wait": list(self.longest),
            "highest": self.highest,
            "probe": self.probe,
        }

    def _send(self, index: int, retransmit: bool, extra: bool = False) -> bool:
        chunk = (self.first + self.groups * index) % self.space
        job = self.job
        slot, copy = slot_of(chunk, job.nslots)
        flags = (F_VERSION if copy else 0) | (F_RETRANSMIT if retransmit else 0)
        if index >= self.urgent_from:
            flags |= F_URGENT
        if self.present is None or self.present[index]:
            n = self.row_bytes
            header = header_bytes(job.tenant, job.round, slot, chunk, self.kind, flags, job.epoch, self.fmt)
            payload = header + self.wire[index * n : (index + 1) * n]
        else:  # an empty contribution (sparse): the header alone, count 0
            payload = header_bytes(
                job.tenant, job.round, slot, chunk, self.kind, flags, job.epoch, FMT_EMPTY, 0
            )
        if not self.transmit(payload):
            return False
        self.stats.packets_sent += 1
        self.stats.bytes_sent += len(payload) + FRAME_OVERHEAD
        if extra:
            self.stats.repair_copies += 1
        elif retransmit:
            self.stats.retransmissions += 1
        return True

    COPY_BACKLOG = 0.060  # no copies behind a queue longer than this (s): they would only lengthen it
    COPY_MARGIN = 0.030  # a repair's copy reaches the root this long after the hole's last repair would
    REORDER = 2  # a chunk is lost once a result came for a chunk sent this many after it

    def _detect(self, now: float) -> None:
        """Move the chunks found lost (by the results' order, or by a timeout) to `lost`."""
        inflight, fresh = self.inflight, self.fresh
        below = max(self.highest - self.REORDER, self.vouched)
        # as TCP restarts its timer on every new acknowledgement (RFC 6298, 5.3): a chunk sent once
        # times out a timeout after its sending or the last result that advanced the order, whichever
        # is later. While results advance, a queue, not a loss, delays the oldest chunk (the order finds
        # its losses), and a queue that grows faster than the RTT estimate would set off a timeout for
        # every chunk behind it.
        sent_before = now - self._fresh_wait()
        if max(self.advanced, self.restarted) > sent_before:
            sent_before = float("-inf")
        while fresh:
            i = fresh[0]
            f = inflight.get(i)
            if f is None:  # its result came
                fresh.popleft()
            elif i < below:
                fresh.popleft()
                self.lost.append(i)
                self.holes += 1
                self.stats.early_retransmissions += 1
            elif f.first_sent <= sent_before + 1e-9:
                fresh.popleft()
                self.lost.append(i)
                if not self.results_in_call:
                    # nothing of this call came back yet: the window is queued (a CPU-bound switch's
                    # rings fill before the first result returns) far more likely than all of it
                    # lost, so only the oldest chunk goes again and the timer restarts, as TCP's
                    # RTO does (RFC 6298, 5.4-5.5). Sending every chunk past the timeout again, nine
                    # sites doubled a queue of seconds (whole windows, every worker of a site at once)
                    self.restarted = now
                    self.stats.blind_timeouts += 1
                    break
            else:
                break
        self._probe(now)
        repairs, behind = self.repairs, self.behind
        while behind and behind[0][0] <= self.highest:
            # the chunks that were ahead of this repair are back (the paths are FIFO): from here on it
            # waits what a repair behind no queue waits. The backlog estimate before it is taken at the
            # best rate of the call's first rounds, while the switches still take in everybody's first
            # window, two to four times below the rate the backlog then drains at: repairs sent then
            # were given 1.3-3 s, in one run up to the 8 s cap (stats.tail), and when one was lost its
            # two workers waited for it until 7.5 s, while the rest of the job was done at 1.6 s
            _, i, retries = heapq.heappop(behind)
            f = inflight.get(i)
            if f is not None and f.retries == retries:
                due = self.advanced + self.timing.repair_timeout(retries, now, self._queue_ahead(now) or 0.0)
                if due < f.due:
                    f.due, f.shortened = due, True
                    heapq.heappush(repairs, (due, i, retries))
        while repairs and repairs[0][0] <= now:
            due, i, retries = heapq.heappop(repairs)
            f = inflight.get(i)
            if f is not None and f.retries == retries and f.due == due:
                self.lost.append(i)
                self.stats.repeat_retransmissions += 1
                self.stats.repeats_shortened += f.shortened

    def _newest_waiting(self) -> int:
        """The chunk sent last of those sent once and still waiting, -1 if none (the ones done or sent
        again since are pruned from the back of `fresh`)."""
        fresh, inflight = self.fresh, self.inflight
        while fresh:
            f = inflight.get(fresh[-1])
            if f is not None and not f.retries:
                return fresh[-1]
            fresh.pop()
        return -1

    def _probe_at(self) -> float:
        """When the tail-loss probe is due (inf: none): everything is sent, the newest chunk still waiting
        is overdue by the tail timeout from its own sending, and the results have paused for the quiet
        gap since the last that advanced the order. One probe per pause: until a result advances the
        order again, the chunks left wait for their timeouts."""
        if self.next_index < self.total or self.probed >= self.advanced:
            return float("inf")
        i = self._newest_waiting()
        if i < 0:
            return float("inf")
        gap = self.timing.quiet_gap()
        sent = self.inflight[i].first_sent
        return max(sent + self.timing.tail_timeout(), self.advanced + gap)

    def _probe(self, now: float) -> None:
        """A tail-loss probe (RFC 8985, 7): the newest chunk still waiting goes again, alone. Its result,
        when it comes, shows every older hole by the order (REORDER) at once; where it was itself lost,
        it is the repair (and vouches for all of them, REORDER too: it was sent long after them). Without it the last chunks wait for the tail timeout after the last result
        that advanced the order, which in a draining queue comes late: a run's last chunk whose results
        came 0.55 s after their sending then waited 0.6 s more, 0.5 s behind the tenants beside it. One
        packet per pause, where sending every overdue chunk again would pile repairs onto a queue that
        only paused (the switches' CPU, shared with other tenants' backlogs)."""
        if now < self._probe_at():
            return
        self.probe = self.fresh.pop()  # the newest waiting one, which _probe_at left at the back
        self.lost.append(self.probe)
        self.probed = now
        self.stats.tail_probes += 1

    def _fresh_wait(self) -> float:
        """How long a chunk sent once waits with no result advancing: shorter once all are sent."""
        if self.next_index >= self.total:
            return self.timing.tail_timeout()
        return self.timing.fresh_timeout()

    def pump(self, now: float) -> None:
        timing = self.timing
        pacer, inflight = timing.pacer, self.inflight
        if timing.control is not None:
            rate = timing.control.rate_bps
            if self.next_index >= self.total:  # the tail: only repairs are left (see tail_rate_bps)
                rate = max(rate, self.tail_rate_bps)
            pacer.set_rate(rate / (8.0 * self.frame_bytes))
        self.blocked = False
        self._detect(now)
        budget = pacer.allowance(now)
        lost = self.lost
        while lost and budget > 0:  # repairs first: the job waits for them
            i = lost[0]
            f = inflight.get(i)
            if f is None:  # its result came meanwhile
                lost.popleft()
                continue
            if not self._send(i, retransmit=True):
                self.blocked = True
                return
            lost.popleft()
            budget -= 1
            pacer.spend()
            f.sent_at = now
            if not f.retries:
                self.repairing += 1
                f.repaired_at = now
            f.retries += 1
            backlog = self._queue_ahead(now)
            wait = timing.repair_timeout(f.retries, now, backlog)
            if f.retries == 1:
                self.stats.repair_wait_ms += round(1000 * wait)
                self.stats.first_repairs += 1
            f.due = now + wait
            heapq.heappush(self.repairs, (f.due, i, f.retries))
            if self._sending_left(timing) < wait and self._room_for_copies(now, backlog):
                # the tail (this repair's second try would come after the last new chunk left), and no
                # queue ahead: the links and the switches have room for a copy
                lag = self._copy_lag()
                if lag < 0.8 * wait:
                    heapq.heappush(self.copies, (now + lag, i, f.retries))
            if timing.control is not None:  # the only case with a backlog estimate (_queue_ahead)
                # ahead of it: the chunks sent before it, and those sent in the next slowest-path RTT at
                # the link's rate, while the farthest worker, which sees the hole up to that much later,
                # still sends new chunks ahead of its own repair (at its own pace, which may not be cut
                # as this one's may be). Counting only the first, the retransmissions that were repeats
                # rose from 14 to 21 % (medians of 18 and 7 three-site runs); with these, 13 % (26 runs)
                lag = timing.path_rtt * timing.control.peak_bps / (8.0 * self.frame_bytes)
                mark = min(self.total - 1, self.next_index - 1 + int(lag))
                if mark > self.highest:
                    heapq.heappush(self.behind, (mark, i, f.retries))
            at = round(now - self.started, 4)
            counted = round(backlog or 0.0, 4)
            self.resent.append((at, i, f.retries, round(wait, 4), counted, int(i == self.probe)))
            if not self.longest or wait > self.longest[3]:
                queue = round(timing.queue(now), 4)
                self.longest = (at, i, f.retries, round(wait, 4), counted, queue)
        copies = self.copies
        while copies and budget > 0 and copies[0][0] <= now:
            _, i, retries = copies[0]
            f = inflight.get(i)
            # a tail copy beyond the last REORDER + 1 only where this call has found a hole (_tail_copies)
            wanted = retries or self.holes or i >= self.total - self.REORDER - 1
            if (
                f is not None
                and f.retries == retries
                and wanted
                and self._room_for_copies(now, self._queue_ahead(now))
            ):
                if not self._send(i, retransmit=True, extra=True):
                    self.blocked = True
                    return
                budget -= 1
                pacer.spend()
                f.copied = True
            heapq.heappop(copies)
        window = timing.window.size
        # a slot is free once the chunk nslots before it is done (the packet `units` before, packed)
        while budget > 0 and self.next_index < self.total and len(inflight) < window:
            i = self.next_index
            if self.io is not None:  # a batch at a time (native_io)
                n = self._free_run(i, min(budget, self.total - i, window - len(inflight)))
                if not n:
                    break
                if i < self.urgent_from < i + n:
                    n = self.urgent_from - i  # a batch is all plain or all urgent
                sent = self.io.send(i, n, F_URGENT if i >= self.urgent_from else 0)
                self.stats.packets_sent += sent
                self.stats.bytes_sent += sent * (HEADER_LEN + self.row_bytes + FRAME_OVERHEAD)
                budget -= sent
                pacer.spend(sent)
                self._sent_new(i, sent, now)
                if sent < n:
                    self.blocked = True
                    return  # the transport is full: the rest goes out on a later pass
                continue
            if i >= self.units and not self.done[i - self.units]:
                break
            if not self._send(i, retransmit=False):
                self.blocked = True
                return  # the transport is full: the rest goes out on a later pass
            budget -= 1
            pacer.spend()
            self._sent_new(i, 1, now)
        if budget > 0:
            pacer.rest()  # held back by the window, the slots or the end, not by the pace

    def _sent_new(self, index: int, n: int, now: float) -> None:
        """Rows index .. index + n - 1 went out for the first time, now."""
        inflight, fresh = self.inflight, self.fresh
        for i in range(index, index + n):
            inflight[i] = _InFlight(now, now)
        fresh.extend(range(index, index + n))
        self.next_index += n
        if n and self.next_index == self.total:
            timing = self.timing
            self.all_sent = now
            if timing.control is not None:
                self.tail_rate_bps = timing.control.rate_bps
            # the last chunks: a copy each (_tail_copies), so that a loss among them costs no
            # repair round trip (and, for the last REORDER + 1, no tail-loss probe)
            lag = self._copy_lag()
            if lag < float("inf") and self._room_for_copies(now, self._queue_ahead(now)):
                for j in self._tail_copies(now):
                    heapq.heappush(self.copies, (inflight[j].first_sent + lag, j, 0))

    TAIL_COPY_SHARE = 8  # the last chunks' copies are at most one in this many of the call's packets
    URGENT_SHARE = 8  # the call's last chunks marked URGENT: one in this many of its packets

    @classmethod
    def _urgent_count(cls, total: int) -> int:
        """How many of a call's `total` chunks, the last ones, go out URGENT: one in URGENT_SHARE, at
        least REORDER + 1 (the chunks no later result can show lost). A switch completes their cells
        as any other, then sends the aggregate (up, or down as the result) twice over each link to
        another switch (p4src/include/aggregation.p4, controller/inc/install.py repair_replicas). Why:
        the workers' copies of the last chunks (_tail_copies) stay back behind a queue, where they would
        lengthen it, and a CPU-bound nine-site run then ended on a hole in one of the last chunks in
        most calls; the switches' second copies cost a WAN packet and a duplicate result each, about a
        tenth of a copy's work (which the site switch, the root and both workers of the site handle).
        The count is the same for every worker of the job (it depends on `total` alone), so every
        contribution of a marked chunk carries the flag, whichever completes a cell."""
        if total <= 0:
            return 0
        return min(total, max(cls.REORDER + 1, -(-total // cls.URGENT_SHARE)))

    def _tail_copies(self, now: float) -> list[int]:
        """The last chunks that get a copy once everything is sent (now), newest first: those still
        waiting for their first result and sent within this worker's clean RTT of now, at most one in
        TAIL_COPY_SHARE of the call's packets, and at least the last REORDER + 1 (which no later result
        can show lost). Why: a chunk sent at t and lost anywhere is found by the order of the results an
        RTT later and repaired one more RTT after that, so the call ends at t + 2 RTT at the earliest,
        where without the loss it ends at the last chunk's sending + 1 RTT; every hole in the last RTT of
        sending lengthens the call, and one comes in nearly every call (three sites at 2 % loss per WAN
        link: about 5 % of the chunks lose something, and the last 20 of 1,024 all decide whether the
        call ends within 1.5x of its bound). A copy, sent the repair copies' lag after the chunk (and behind
        every new chunk: the copies are scheduled only once the last has left), fills the hole or, where the result was
        lost on its way down, finds the chunk complete and has the root answer it again, an RTT after
        the copy went. Only both lost costs the repair round trip. The copies beyond the last REORDER + 1
        go only once this call has found a hole by the order of its results (by then: the copies leave
        the repair copies' lag after their chunks, and the holes of every chunk sent an RTT before that
        are known): on a path that loses nothing they would be an eighth more packets for nothing."""
        inflight, base = self.inflight, self.timing.window.base_rtt
        cap = max(self.REORDER + 1, -(-self.total // self.TAIL_COPY_SHARE))
        picked: list[int] = []
        for j in range(self.total - 1, max(-1, self.total - 1 - cap), -1):
            f = inflight.get(j)
            if f is None or f.retries:
                continue
            if j < self.total - self.REORDER - 1 and f.first_sent < now - base:
                break
            picked.append(j)
        return picked

    def _sending_left(self, timing: PathTiming) -> float:
        """Seconds until the last new chunk leaves, at the current pace (inf: unpaced and not all sent,
        unknown). A repair whose wait is longer has its second try in the call's tail: where it was
        lost, the call ends a wait and an RTT after its end without the loss. Three sites: the farthest
        worker's first holes show an RTT (165 ms) after their sending, 10 ms before its last new chunk
        goes; one such repair lost, with no copy, ended a call at 0.52 s, 1.54x its bound, where the
        others ended at 0.48-0.50 s."""
        left = self.total - self.next_index
        if not left:
            return 0.0
        rate = timing.pacer.rate
        return left / rate if rate else float("inf")

    def _room_for_copies(self, now: float, backlog: float | None) -> bool:
        """Whether a copy finds the path idle: no queue counted ahead (_queue_ahead, once it is known)
        and none in the latest clean RTT (PathTiming.queue). Behind a queue a copy would wait in it
        beside the packet it copies, and make it longer for everybody: a CPU-bound switch (nine sites,
        or the simulated switch of tests/edge/test_worker_queue.py) then served copies, not repairs."""
        queue = self.timing.queue(now)
        return (backlog or 0.0) < self.COPY_BACKLOG and queue < self.COPY_BACKLOG

    def _copy_lag(self) -> float:
        """When a repair's copy goes, after the repair: once the root has the hole's repairs from every
        worker, so that the copy finds the chunk complete and the root answers it (docs/protocol.md,
        "Repair copies"). A hole of the farthest worker is filled at the root 2 x its one-way delay after
        the root sent the result that shows it, and this worker's repair (sent one one-way delay after
        that result) arrives at 2 x its own: so the copy waits twice the difference. The one-way delays
        come from the tree's slowest path RTT (2 x the farthest worker's) and this worker's clean RTT
        (its own one-way delay and the farthest worker's: a chunk completes with its last
        contribution). inf when either is unknown: no copy."""
        path, base = self.timing.path_rtt, self.timing.window.base_rtt
        if not path or base == float("inf"):
            return float("inf")
        return max(0.0, 2.0 * (path - base)) + self.COPY_MARGIN

    def _queue_ahead(self, now: float) -> float | None:
        """Seconds of queue ahead of a packet sent now (None: unknown, before BACKLOG_RESULTS results and
        one propagation RTT of them), at the rate this call's results came at so far: the new chunks sent
        after the newest result, less the propagation RTT's worth on the wire, and the repairs still
        waiting (each of their last copies is in a queue, or lost)."""
        if self.timing.control is None or self.results_in_call < self.BACKLOG_RESULTS:
            return None
        span, propagation = now - self.first_result_at, self.timing.propagation()
        if span < propagation:  # a rate over less than an RTT is a burst's
            return None
        # at the mean rate since the call's first result (Little's law), neither the best round's nor
        # the last rounds'. A CPU-bound switch completes chunks in bursts: the best quarter-RTT came at
        # twice the mean on nine sites (simulated: 2,000 against 900 results/s), and a repair given
        # half its wait went again while its copy was queued. The last rounds' rate, in the tail, is
        # that of a few repairs, and a queue measured by it grew to seconds (a lost repair of three
        # sites then waited 2.5 s while the machine idled); the mean of the whole call moves slowly.
        per = span / (self.results_in_call - 1)
        fresh = max(0, self.next_index - 1 - self.highest)
        # the repairs sent before this one count too: on nine sites a third of the chunks need one,
        # and once the new chunks were back, a repair behind the others' was given one RTT and went
        # again while its copy was queued
        return max(0.0, fresh * per - propagation) + max(0, self.repairing - 1) * per

    def _can_send_new(self) -> bool:
        i = self.next_index
        return (
            i < self.total
            and len(self.inflight) < self.timing.window.size
            and (i < self.units or bool(self.done[i - self.units]))
        )

    def wakeup(self, now: float) -> float:
        """When `pump` has something to do at the latest (results wake the caller anyway)."""
        if self.blocked:
            return now + 0.001
        at = now + 0.1
        pacer = self.timing.pacer
        if self.lost:
            at = min(at, pacer.ready_at(now, 1))
        elif self._can_send_new():  # paced: a few packets at a time, not one wakeup per packet
            at = min(at, pacer.ready_at(now, min(8, self.total - self.next_index)))
        for i in self.fresh:  # the oldest chunk still waiting (the front may be done already)
            f = self.inflight.get(i)
            if f is not None and not f.retries:
                at = min(at, max(f.first_sent, self.advanced, self.restarted) + self._fresh_wait())
                break
        if self.repairs:
            at = min(at, self.repairs[0][0])
        if self.copies:
            at = min(at, self.copies[0][0])
        return min(at, self._probe_at())

    def receive(self, payload: bytes | memoryview, source: tuple[str, int], now: float) -> bool:
        """Take one datagram; True when it was a new result of this stream."""
        job = self.job
        self.stats.bytes_received += len(payload) + FRAME_OVERHEAD
        sparse = self.counts is not None
        size = len(payload)
        if (size != self.reply_len and not (sparse and size == HEADER_LEN)) or source != self.source:
            self.stats.rejected += 1
            return False
        # the header's fields as decode() checks them, without building an IncHeader per result
        version, kind, flags, _, tenant, rnd, slot_no, count, chunk, epoch, _, fmt, _ = HEADER.unpack_from(
            payload
        )
        if (
            version != INC_VERSION
            or fmt not in GROUPS
            or size != packet_len(fmt)
            or not flags & F_RESULT
            or tenant != job.tenant
            or epoch != job.epoch
        ):
            self.stats.rejected += 1
            return False
        ahead = (chunk - self.first) % self.space if chunk < self.space else -1
        index = ahead // self.groups if ahead % self.groups == 0 else -1
        if (
            rnd != job.round
            or kind != self.kind
            or (fmt != self.reply_fmt and not (sparse and fmt == FMT_EMPTY))
            or not 0 <= index < self.total
            or self.done[index]
        ):
            # a late copy: of this call, of the call before (the exponent agreement, another round)
            self.stats.duplicates += 1
            return False
        slot, copy = slot_of(chunk, job.nslots)
        if slot_no != slot or bool(flags & F_VERSION) != bool(copy):
            self.stats.rejected += 1
            return False
        expected = job.workers if self.counts is None else int(self.counts[index])
        if count != expected:
            raise self._count_error(index, count)
        if fmt == FMT_EMPTY:
            self.result[index] = 0
        else:
            self.result[index] = np.frombuffer(payload, dtype=LANE_DTYPE, offset=HEADER_LEN)
        self._took(index, now)
        return True

    def _count_error(self, index: int, count: int) -> IncProtocolError:
        """A result that sums another number of contributions than the job's tree should."""
        chunk = (self.first + self.groups * index) % self.space
        expected = self.job.workers if self.counts is None else int(self.counts[index])
        return IncProtocolError(
            f"chunk {chunk}: the result sums {count} contributions, but "
            + (
                f"the job has {self.job.workers} workers"
                if self.counts is None
                else f"{expected} workers sent values"
            )
            + ": the tree installed in the switches does not match"
        )

    def _took(self, index: int, now: float) -> None:
        """Row `index`'s result is in (its words in `result`): what that means for the stream."""
        self.done[index] = True
        self.remaining -= 1
        f = self.inflight.pop(index, None)
        if f is not None and f.retries:
            self.repairing -= 1
            if f.retries == 1:
                self.stats.repair_answer_ms += round(1000 * (now - f.repaired_at))
                self.stats.repairs_answered += 1
        if not self.results_in_call:
            self.first_result_at = now
        self.results_in_call += 1
        self.arrived.append((now, index, f.retries if f is not None else -1))  # tail_report rounds it
        in_order = index > self.highest
        if in_order:
            self.highest, self.advanced = index, now
        if index == self.probe:
            # the probe went out long after every chunk still waiting, on the same FIFO paths as theirs
            # and everybody's: no reordering window is left for them
            self.vouched = index
        # a clean sample (RttEstimator): sent once, in order, and not answered by a later copy of it
        clean = f is not None and f.retries == 0 and not f.copied and in_order
        self.timing.on_result(now, self.frame_bytes, now - f.first_sent if clean and f else None)
        self.stats.results += 1
        self.last_progress = now

    # --- the native I/O (edge.native) -----------------------------------------------------------------

    def native_io(self, module: ModuleType, fd: int) -> None:
        """Send the new chunks and take the results through `module`'s ChunkIO on `fd` (a connected,
        non-blocking socket to the switch's INC port) from now on: the same packets and the same checks
        as `_send` and `receive`, a batch per system call, built and checked in C; what is left in
        Python per packet is the stream's bookkeeping (`_sent_new`, `_took`). Dense rows only (a sparse
        stream's empty rows and counts stay with the Python path). Repairs and copies still go through
        `transmit`."""
        if self.present is not None or self.counts is not None:
            raise ValueError("the native I/O sends dense rows only")
        job = self.job
        self.taken = np.zeros(self.TAKE, dtype=np.int64)
        self.io = module.ChunkIO(
            fd,
            self.wire,
            self.result,
            self.done,
            self.taken,
            first=self.first,
            groups=self.groups,
            space=self.space,
            nslots=job.nslots,
            total=self.total,
            row_bytes=self.row_bytes,
            tenant=job.tenant,
            round=job.round,
            kind=self.kind,
            epoch=job.epoch,
            fmt=self.fmt,
            reply_fmt=self.reply_fmt,
            workers=job.workers,
        )

    TAKE = 1024  # results per native receive call at most

    def take_native(self) -> int:
        """Every datagram waiting on the native I/O's socket (receive's checks, in C); the new results'
        count. Raises IncProtocolError as `receive` does."""
        io, taken, stats, took = self.io, self.taken, self.stats, self._took
        new_results = 0
        while True:
            new, duplicates, rejected, nbytes, drained, now, bad_index, bad_count = io.receive()
            stats.duplicates += duplicates
            stats.rejected += rejected
            stats.bytes_received += nbytes
            for index in taken[:new].tolist():
                took(index, now)
            new_results += new
            if bad_index >= 0:
                raise self._count_error(bad_index, bad_count)
            if drained:
                return new_results

    def _free_run(self, index: int, n: int) -> int:
        """How many of rows index .. index + n - 1 have their slot free (the row `units` before done)."""
        lo = max(index, self.units)
        if lo >= index + n:
            return n
        waiting = np.flatnonzero(~self.done[lo - self.units : index + n - self.units])
        return n if not waiting.size else lo - index + int(waiting[0])

    def check_stall(self, now: float) -> None:
        job = self.job
        if now - self.last_progress > job.stall_timeout_s:
            missing = [self.groups * i for i in sorted(self.inflight)[:8]]
            raise IncTimeoutError(
                f"tenant {job.tenant}: no result for {now - self.last_progress:.1f} s; {self.remaining} of "
                f"{self.total} chunks missing (first: {[(self.first + i) % self.space for i in missing]}); a "
                f"worker of the job may be dead, the job may have been reset (epoch {job.epoch} is no longer "
                f"installed), or the job's tree is not installed on switch {job.switch_ip}"
            )


def bind_result_port(bind_ip: str, tenant: int) -> socket.socket:
    """The tenant's result socket, bound exclusively (no SO_REUSEADDR): a second worker of the same tenant
    on this host gets a clear error instead of silently taking some of the results."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
        sock.bind((bind_ip, worker_port(tenant)))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise IncPortInUse(
                exc.errno,
                f"UDP port {worker_port(tenant)} (results of tenant {tenant}) is in use on this host: another "
                "worker of the same tenant runs here, or a program holds the port",
            ) from None
        raise
    sock.setblocking(False)
    return sock


@dataclass
class IncWorker:
    """One worker's endpoint. Chunk numbers continue across calls (wrapping at chunk_space), so successive
    collectives never confuse a late packet of the previous call with the next one. Timing state is kept per round
    (`timings`), since each round of a schedule has its own tree."""

    job: IncJob
    next_chunk: int = 0
    stats: TransferStats = field(default_factory=TransferStats)
    timings: dict[int, PathTiming] = field(default_factory=dict)
    sparse_report: dict[str, object] | None = None  # what the last sparse allreduce did (edge.sparse)

    def __post_init__(self) -> None:
        if self.job.nslots < 1:
            raise ValueError("a job needs at least one slot")
        self.sock = bind_result_port(self.job.bind_ip, self.job.tenant)
        # Contributions go to the switch's INC port and results come from it: connected, the socket
        # takes datagrams from there only (the source check ReduceStream.receive makes, done by the
        # kernel) and sends without an address to parse and a route to look up for every packet (on
        # loopback a quarter less CPU for a send and a receive; within the noise of a nine-site run)
        self.connected = False
        if self.job.switch_port == INC_UDP_PORT:
            try:  # a socket bound to loopback cannot be connected to the switch: it stays unconnected
                self.sock.connect((self.job.switch_ip, INC_UDP_PORT))
                self.connected = True
            except OSError:
                pass

    @property
    def timing(self) -> PathTiming:
        """The timing state of the job's current round (created from the job's parameters on first use)."""
        t = self.timings.get(self.job.round)
        if t is None:
            t = self.timings[self.job.round] = PathTiming.for_job(self.job)
        return t

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> IncWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- public collectives ---------------------------------------------------------------------------

    def allreduce(
        self,
        values: np.ndarray,
        mode: str = "int32",
        masks: PairwiseMasks | None = None,
        density: float | None = None,
        values_per_packet: int = INC_LANES,
    ) -> np.ndarray:
        """The element-wise sum over all workers of the job, with the input's shape.

        mode "int32": exact; the input must be integers that fit in int32 (wrap-around only where the sum
        overflows). "float32": fixed point with per-block exponents (error per element at most
        workers * 2**-(shift+1) of its block; see edge.formats); inf and NaN propagate as IEEE addition
        would, without disturbing the block's other values. "int8" / "int4": exact sums (int32) of narrow
        integers, packed 4 / 8 to a word towards the switch (edge.lowprec). With `masks` (edge.secure) every
        sum travels masked, and the result is the same (narrow inputs then travel as int32 lanes: masks
        mod 2^32 cancel only in full-width sums). "sparse": exact int32 sums of block-sparse input, where
        only the blocks some worker holds travel with values (edge.sparse; `density` is the top-k fraction
        every worker uses, if the job has one; the call's report is kept in `sparse_report`). "sparse-float32":
        block-sparse float32, the float32 mode's fixed point over the blocks some worker holds only.

        `values_per_packet` 256 sends int32 and float32's sums four chunks to a packet (format wide32:
        a quarter of the packets for every worker and switch, docs/protocol.md); it needs the job's slots
        to be a multiple of 4 and no masks, and falls back to 64 otherwise (counted in `unpacked_calls`)."""
        if mode in sparse.MODES:  # "sparse" (int32) or "sparse-float32"
            if masks is not None:
                raise ValueError(f"{mode} mode cannot be masked: masks make every block dense")
            result, report = sparse.allreduce_mode(mode, self.reduce_lanes, values, self.job.workers, density)
            self.sparse_report = report.as_dict()
            return result
        reduce = self.reduce_lanes if masks is None else masked(self.reduce_lanes, masks)
        groups = 1 if masks is not None else max(g for g in (8, 4, 1) if self.job.nslots % g == 0)
        if (mode in ("int8", "int4", "mxint8") or values_per_packet != INC_LANES) and groups == 1:
            self.stats.unpacked_calls += 1
        return formats.allreduce_with(
            reduce, values, mode, self.job.workers, max_groups=groups, values_per_packet=values_per_packet
        )

    # --- the streaming engine -------------------------------------------------------------------------

    def _transmit(self, payload: bytes) -> bool:
        try:
            if self.connected:
                self.sock.send(payload)
            else:
                self.sock.sendto(payload, (self.job.switch_ip, self.job.switch_port))
        except (BlockingIOError, InterruptedError, ConnectionRefusedError):
            # full, or an ICMP error for an earlier datagram reported on this one (which did not go)
            return False
        return True

    def reduce_lanes(
        self,
        lanes: np.ndarray,
        kind: int,
        fmt: int = FMT_INT32,
        present: np.ndarray | None = None,
        counts: np.ndarray | None = None,
    ) -> np.ndarray:
        """Reduce rows of 64 uint32 lanes over all workers; returns the reduced rows. In a packed format
        each row carries several chunks and comes back as one wide row; `present` and `counts` make the
        rows sparse (ReduceStream)."""
        groups = GROUPS[fmt]
        gap = -self.next_chunk % groups
        if gap:
            # A packed packet starts at a multiple of G. The chunk numbers up to there are not skipped but
            # sent (as zeros): a cell may be reused only once every worker has the result of its previous
            # chunk, which the results of the chunks in between prove (docs/protocol.md).
            self.reduce_lanes(np.zeros((gap, INC_LANES), dtype=np.uint32), KIND_SUM)
        started = time.monotonic()
        first = self.next_chunk
        stream = ReduceStream(
            self.job,
            lanes,
            kind,
            first,
            self.timing,
            self.stats,
            self._transmit,
            started,
            fmt,
            present,
            counts,
        )
        self.next_chunk = (first + groups * lanes.shape[0]) % stream.space
        buf = bytearray(2048)
        connected = self.connected
        module = chunk_io() if connected and present is None and counts is None else None
        if module is not None:
            stream.native_io(module, self.sock.fileno())
            self.stats.native_calls += 1
        stream.pump(started)
        while not stream.finished:
            now = time.monotonic()
            wait = max(0.0, min(stream.wakeup(now) - now, 0.1))
            readable, _, _ = select.select([self.sock], [], [], wait)
            if readable and module is not None:
                stream.take_native()
            elif readable:
                while True:
                    try:
                        if connected:
                            n, source = self.sock.recv_into(buf), stream.source
                        else:
                            n, source = self.sock.recvfrom_into(buf)
                    except BlockingIOError:
                        break
                    except ConnectionRefusedError:  # an ICMP error, not a datagram
                        continue
                    stream.receive(memoryview(buf)[:n], source, time.monotonic())
            now = time.monotonic()
            stream.pump(now)
            stream.check_stall(now)
        timing = self.timing
        self.stats.seconds += time.monotonic() - started
        self.stats.srtt_ms = round((timing.rtt.srtt or 0.0) * 1000, 1)
        self.stats.base_rtt_ms = round(min(timing.window.base_rtt, 1e6) * 1000, 1)
        self.stats.window = timing.window.size
        self.stats.all_sent_s = round(stream.all_sent - stream.started, 4)
        self.stats.tail = stream.tail_report()
        if timing.control is not None:
            self.stats.pace_cuts = timing.control.cuts
            self.stats.min_pace_mbit = round(timing.control.lowest_bps / 1e6, 3)
        return stream.result
