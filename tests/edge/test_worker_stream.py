"""The worker's stream logic without a network: it takes a result only from its own tree (source,
tenant, epoch, round, slot, chunk), counts everything else, wraps chunk numbers mod 2^32, keeps timing
per round, and binds its result port exclusively."""

from __future__ import annotations

import numpy as np
import pytest

from edge.protocol import (
    F_RESULT,
    F_RETRANSMIT,
    F_URGENT,
    F_VERSION,
    INC_LANES,
    INC_UDP_PORT,
    KIND_SUM,
    SERIAL_MOD,
    IncHeader,
    chunk_space,
    encode,
    slot_of,
)
from edge.spec import RoundSpec, WorkerSpec
from edge.worker import (
    IncJob,
    IncPortInUse,
    IncProtocolError,
    IncWorker,
    PathTiming,
    ReduceStream,
    TransferStats,
)

SWITCH = ("10.0.1.254", INC_UDP_PORT)


def job(**kw: object) -> IncJob:
    base = {"tenant": 3, "switch_ip": SWITCH[0], "nslots": 4, "workers": 2, "epoch": 99}
    base.update(kw)
    return IncJob(**base)  # type: ignore[arg-type]


def stream(j: IncJob, chunks: int = 6, first: int = 0) -> tuple[ReduceStream, list[bytes]]:
    sent: list[bytes] = []
    lanes = np.arange(chunks * INC_LANES, dtype=np.uint32).reshape(chunks, INC_LANES)
    s = ReduceStream(
        j,
        lanes,
        KIND_SUM,
        first,
        PathTiming.for_job(j),
        TransferStats(),
        lambda p: sent.append(p) or True,
        0.0,
    )
    return s, sent


def result(j: IncJob, chunk: int, value: int = 7, **kw: object) -> bytes:
    slot, copy = slot_of(chunk, j.nslots)
    fields = {
        "tenant": j.tenant,
        "round": j.round,
        "slot": slot,
        "chunk": chunk % SERIAL_MOD,
        "flags": F_RESULT | (F_VERSION if copy else 0),
        "count": j.workers,
        "epoch": j.epoch,
    }
    fields.update(kw)
    return encode(IncHeader(**fields), np.full(INC_LANES, value, dtype=np.uint32))  # type: ignore[arg-type]


def test_only_results_of_the_workers_own_tree_are_taken() -> None:
    j = job()
    s, sent = stream(j)
    s.pump(0.0)
    assert len(sent) == 4  # the window: the tenant's slots
    forged = [
        (result(j, 0), ("10.0.1.9", INC_UDP_PORT)),  # another host
        (result(j, 0), (SWITCH[0], 5555)),  # the right address, another port
        (result(j, 0, epoch=98), SWITCH),  # an earlier generation of the job
        (result(j, 0, tenant=4), SWITCH),
        (result(j, 0, flags=0), SWITCH),  # a contribution, not a result
        (result(j, 0, slot=2), SWITCH),  # the wrong cell for that chunk
        (result(j, 0)[:-1], SWITCH),
    ]
    for payload, source in forged:
        assert not s.receive(payload, source, 0.1)
    assert s.stats.rejected == len(forged) and s.remaining == 6
    assert s.receive(result(j, 0, value=11), SWITCH, 0.1)
    assert not s.receive(result(j, 0, value=12), SWITCH, 0.2)  # a second copy changes nothing
    assert s.stats.duplicates == 1 and s.result[0].tolist() == [11] * INC_LANES
    with pytest.raises(IncProtocolError, match="sums 5 contributions"):
        s.receive(result(j, 1, count=5), SWITCH, 0.3)


def test_chunk_numbers_wrap_at_the_chunk_space() -> None:
    j = job(nslots=3)
    space = chunk_space(3)  # 2^32 - 4: a multiple of 6, so slots and copies keep their cycle
    s, sent = stream(j, chunks=6, first=space - 3)
    s.pump(0.0)
    s.pump(0.0)
    chunks = [IncHeader.unpack(p).chunk for p in sent]
    assert chunks == [space - 3, space - 2, space - 1]  # the window: 3 slots
    for c in chunks:
        assert s.receive(result(j, c, value=c % 1000), SWITCH, 0.1)
    s.pump(0.2)
    chunks = [IncHeader.unpack(p).chunk for p in sent]
    assert chunks[3:] == [0, 1, 2]
    for c in chunks[3:]:
        assert s.receive(result(j, c, value=c % 1000), SWITCH, 0.3)
    assert s.finished and s.result[3].tolist() == [0] * INC_LANES and s.result[5][0] == 2


def test_the_calls_last_chunks_go_out_urgent_and_so_do_their_repairs() -> None:
    """One in URGENT_SHARE of a call's chunks, the last ones, at least REORDER + 1, carry URGENT on
    every transmission: the same chunks at every worker, since the count depends on the call's length
    alone; the switches send what they complete twice over WAN links (p4src/include/aggregation.p4)."""
    share, least = ReduceStream.URGENT_SHARE, ReduceStream.REORDER + 1
    assert ReduceStream._urgent_count(1024) == 1024 // share
    assert ReduceStream._urgent_count(1025) == 1024 // share + 1  # rounded up
    assert ReduceStream._urgent_count(least + 1) == least
    assert ReduceStream._urgent_count(2) == 2 and ReduceStream._urgent_count(0) == 0
    j = job(nslots=64, rto_s=1.0)
    s, sent = stream(j, chunks=40)
    s.pump(0.0)
    flags = [IncHeader.unpack(p).flags for p in sent]
    assert len(flags) == 40 and s.urgent_from == 40 - ReduceStream._urgent_count(40)
    assert [bool(f & F_URGENT) for f in flags] == [i >= s.urgent_from for i in range(40)]
    assert not any(f & F_RETRANSMIT for f in flags)
    for c in range(40):  # every result but chunk 36's: the results after it show it lost
        if c != 36:
            assert s.receive(result(j, c), SWITCH, 0.1)
    s.pump(0.1)
    repair = IncHeader.unpack(sent[-1])
    assert len(sent) == 41 and repair.chunk == 36 and repair.flags & F_URGENT and repair.flags & F_RETRANSMIT


def test_retransmission_waits_for_the_timeout_and_backs_off() -> None:
    j = job(rto_s=1.0)
    s, sent = stream(j, chunks=1)
    s.pump(0.0)
    s.pump(0.5)
    assert len(sent) == 1 and s.wakeup(0.95) == 1.0
    s.pump(1.0)  # no later result can show the loss of the last chunk: the timeout does
    assert len(sent) == 2 and IncHeader.unpack(sent[1]).flags & 0x02
    s.pump(1.9)
    assert len(sent) == 2  # a repair waits (here, with nothing measured, the first timeout)
    s.pump(2.0)
    assert len(sent) == 3
    s.pump(2.9)
    assert len(sent) == 3  # the second repair waits as long as the first
    s.pump(3.0)
    assert len(sent) == 4
    s.pump(4.9)
    assert len(sent) == 4  # from the third on, the wait doubles
    s.pump(5.0)
    assert len(sent) == 5
    assert s.stats.retransmissions == 4 and s.stats.repeat_retransmissions == 3


def test_a_hole_in_the_results_is_repaired_at_once() -> None:
    """Paths are FIFO and every worker sends in order, so results come in chunk order: a result of chunk
    j shows every chunk before j - REORDER still waiting as lost, long before any timeout."""
    j = job(nslots=16, rto_s=1.0)
    s, sent = stream(j, chunks=12)
    s.pump(0.0)
    assert len(sent) == 12
    for c in (0, 1, 3, 4):
        assert s.receive(result(j, c), SWITCH, 0.2)
    s.pump(0.2)
    assert len(sent) == 12  # 2 is within REORDER of the newest result: not yet
    assert s.receive(result(j, 5), SWITCH, 0.21)
    s.pump(0.21)
    assert [IncHeader.unpack(p).chunk for p in sent[12:]] == [2]
    assert s.stats.early_retransmissions == 1
    assert s.timing.rtt.srtt == pytest.approx(0.2, abs=0.011)
    # the tail: everything is sent. The newest chunk still waiting (11) is overdue the tail timeout (the
    # latest RTT and a tenth plus 10 ms: 0.241 s) after its sending; once the results have paused for the
    # quiet gap (a quarter of the RTT: 0.05 s after 0.21) it goes again alone, a tail-loss probe
    tail, gap = s.timing.tail_timeout(), s.timing.quiet_gap()
    assert tail == pytest.approx(1.1 * 0.21 + 0.010) and tail < s.timing.fresh_timeout()
    assert gap == pytest.approx(0.05, abs=0.003)
    assert s.wakeup(0.22) == pytest.approx(0.21 + gap)
    s.pump(0.21 + gap - 0.005)
    assert len(sent) == 13
    s.pump(0.21 + gap + 0.005)
    assert [IncHeader.unpack(p).chunk for p in sent[13:]] == [11]
    assert s.stats.tail_probes == 1
    s.pump(0.40)
    assert len(sent) == 14  # one probe per pause: no result advanced the order since
    assert s.receive(result(j, 2), SWITCH, 0.43)  # the repair: after a later result, so no RTT sample
    assert s.timing.rtt.latest == pytest.approx(0.21)
    # nothing advanced the order for the tail timeout: the other last chunks go again, long before the RTO
    s.pump(0.21 + tail - 0.005)
    assert len(sent) == 14
    s.pump(0.21 + tail + 0.005)
    assert [IncHeader.unpack(p).chunk for p in sent[14:]] == [6, 7, 8, 9, 10]


def test_a_tail_probe_s_result_shows_the_older_holes() -> None:
    """The probe is the newest chunk: when its result comes, every older chunk still waiting (beyond
    REORDER) is lost by the order and goes again at once, without waiting a tail timeout from that
    result, which in a queue that drains late comes long after the chunks' sending."""
    j = job(nslots=16, rto_s=1.0, path_rtt_s=0.2)
    s, sent = stream(j, chunks=8)
    s.pump(0.0)
    for c in range(4):  # the first four came back after 0.6 s (a queue); 4 to 7 are lost
        assert s.receive(result(j, c), SWITCH, 0.6)
    tail = s.timing.tail_timeout()
    assert tail == pytest.approx(1.1 * 0.6 + 0.010)
    assert s.timing.quiet_gap() == pytest.approx(0.05)
    assert s.wakeup(0.6) == pytest.approx(tail)  # 0.67 after the sending, later than 0.6 + 0.05
    s.pump(tail + 0.001)
    assert [IncHeader.unpack(p).chunk for p in sent[8:]] == [7]
    assert s.receive(result(j, 7), SWITCH, tail + 0.2)  # the probe's result: 4, 5 and 6 are lost
    s.pump(tail + 0.2)
    assert [IncHeader.unpack(p).chunk for p in sent[9:]] == [4, 5, 6]  # REORDER does not spare 5 and 6
    assert s.stats.tail_probes == 1 and s.stats.early_retransmissions == 3


def test_a_stream_that_knows_its_rate_is_paced() -> None:
    j = job(nslots=4096, path_rtt_s=0.1, rate_bps=8 * 322 * 10_000)  # 10,000 frames/s
    s, sent = stream(j, chunks=1000)
    assert s.timing.window.size == 2000  # twice the path's 1,000 frames in flight
    s.pump(0.0)
    assert len(sent) == 20  # a burst: 2 ms of packets
    s.pump(0.001)
    assert len(sent) == 30  # what 1 ms earns
    assert s.wakeup(0.001) == pytest.approx(0.0018)  # the next 8, not every single packet
    t = 0.001
    while t < 0.05:
        t = s.wakeup(t)
        s.pump(t)
    assert abs(len(sent) - (20 + 10_000 * t)) <= 1  # the burst, then the rate


def test_each_round_keeps_its_own_timing() -> None:
    """A near round's RTTs must not set a far round's timeout, nor a far round's shrink a near window."""
    spec = WorkerSpec(
        tenant=3,
        epoch=99,
        switch_ip=SWITCH[0],
        nslots=256,
        period=[
            RoundSpec(round=0, clique_size=2, rto_s=1.0, path_rtt_s=0.012),
            RoundSpec(round=1, clique_size=3, rto_s=1.0, path_rtt_s=0.2),
        ],
    )
    j = IncJob.from_spec(spec, spec.period[0])
    j.bind_ip = "127.0.0.1"
    with IncWorker(j) as w:
        near = w.timing
        for t in range(200):
            near.rtt.sample(0.012)
            near.window.on_sample(0.012, t * 0.02, near.rtt.srtt)
        w.job.enter(spec.period[1])
        far = w.timing
        assert far is not near and far.rtt.srtt is None
        assert far.rtt.min_rto >= 1.2 * 0.2 and far.window.size == 256
        for t in range(20):
            far.rtt.sample(0.2)
            far.window.on_sample(0.2, 10 + t * 0.3, far.rtt.srtt)
        w.job.enter(spec.period[0])
        assert w.timing is near and near.window.size == 256 and near.rtt.rto < 0.1


def test_the_result_port_is_bound_exclusively() -> None:
    with IncWorker(job(bind_ip="127.0.0.1")), pytest.raises(IncPortInUse, match="48003"):
        IncWorker(job(bind_ip="127.0.0.1"))


def test_each_call_starts_at_the_links_pace_whatever_the_last_one_ended_at() -> None:
    """The tail of a call (a few repairs, nothing left to send) says nothing of the path's rate: the next
    call (float32's values after its exponents) must not start paced at what that tail delivered."""
    j = job(nslots=4096, path_rtt_s=0.1, rate_bps=8 * 322 * 10_000)
    s, _ = stream(j, chunks=4)
    control = s.timing.control
    assert control is not None
    control.rate_bps, control.queued, control.recent = 10_000.0, True, [9_000.0]  # a tail cut it low
    s.timing.window.cwnd = 64
    nxt = ReduceStream(j, s.lanes, KIND_SUM, 4, s.timing, TransferStats(), lambda p: True, 1.0)
    assert control.rate_bps == 8 * 322 * 10_000 and not control.queued and control.recent == []
    assert nxt.timing.window.size == 2000  # twice the product again


def test_repairs_in_the_tail_go_at_least_at_the_pace_the_last_new_chunk_went_at() -> None:
    """Once everything is sent, a cut of the pace (on a tail round's few results) must not throttle the
    repairs: they go at the pace of the last new chunk, or faster if the pace grew since."""
    j = job(nslots=64, path_rtt_s=0.1, rate_bps=8 * 322 * 10_000)  # 10,000 frames/s
    s, sent = stream(j, chunks=40)
    t = 0.0
    while s.next_index < s.total:
        t = s.wakeup(t)
        s.pump(t)
    control = s.timing.control
    assert control is not None and s.tail_rate_bps == control.rate_bps
    control.rate_bps = control.peak_bps / 64  # a cut in the tail, to the floor
    s.lost.extend(range(30))  # thirty chunks found lost
    t += 0.01  # the pacer's bucket is full again
    s.pump(t)
    assert s.timing.pacer.rate == pytest.approx(10_000)  # not 156 a second
    assert len(sent) - 40 == 30  # all thirty at once (the floor's pace: a burst of 8, then 156 a second)


def test_the_queue_ahead_of_a_repair_drains_at_the_mean_rate_of_the_call_and_counts_the_repairs() -> None:
    """In the tail the last rounds see a few repairs: a queue measured at their rate would make a lost
    repair wait seconds, and the best round's rate (a CPU-bound switch completes chunks in bursts) made
    it wait half as long as the queue took. So the packets ahead drain at the mean rate since the call's
    first result, and they are the new chunks not yet back (less an RTT of them, on the wire) and the
    repairs sent before it, which are queued too."""
    j = job(nslots=64, path_rtt_s=0.02, rate_bps=8 * 322 * 10_000)
    s, _ = stream(j, chunks=60)
    control = s.timing.control
    assert control is not None
    assert s._queue_ahead(1.0) is None  # no result yet: nothing to measure a rate by
    s.next_index, s.highest = 60, 9  # everything sent, the newest result is chunk 9: 50 ahead
    s.first_result_at, s.results_in_call = 0.5, 501  # 1,000 results/s since the first
    control.recent, control.best_bps = [8 * 322 * 20.0], 8 * 322 * 5_000.0  # 20/s lately, 5,000/s at best
    assert s._queue_ahead(1.0) == pytest.approx(0.050 - 0.020)  # 50 ms of chunks, 20 ms of them on the wire
    s.repairing = 11  # and ten repairs sent before this one
    assert s._queue_ahead(1.0) == pytest.approx(0.030 + 0.010)
    assert s._queue_ahead(0.51) is None  # a rate over less than an RTT is a burst's


def test_a_lost_repair_behind_an_overestimated_backlog_goes_again_once_the_chunks_ahead_are_back() -> None:
    """The queue ahead of a repair is estimated at the mean rate of the call's results so far, which in
    its first rounds (a queue in a CPU-bound switch lets them trickle) can be a small fraction of the
    rate it then drains at: a repair sent then is given seconds. When it is lost, the results of the
    chunks that were ahead of it (the paths are FIFO) show the queue gone; from then it waits what a
    repair behind what is left waits, not the seconds of the estimate (a three-site run's two LON
    workers waited until 8.58 s for theirs while the other sites were done at 1.1 s)."""
    j = job(nslots=512, path_rtt_s=0.16, rate_bps=8 * 322 * 20_000)  # 20,000 frames/s
    s, sent = stream(j, chunks=400)
    t = 0.0
    while s.next_index < s.total:  # everything goes out at the pace, in 20 ms
        t = s.wakeup(t)
        s.pump(t)
    assert len(sent) == 400 and t < 0.03
    # the first results trickle in (a queue in a CPU-bound switch), and chunk 17's result is lost
    for k, c in enumerate((*range(17), 18, 19, 20)):
        at = 0.25 + 0.25 * k / 19
        assert s.receive(result(j, c), SWITCH, at)
        s.pump(at)
    assert [IncHeader.unpack(p).chunk for p in sent[400:]] == [17]  # found lost by the order
    sent_at, index, retries, wait, backlog, _ = s.longest
    assert (index, retries) == (17, 1) and backlog > 4.0 and wait > 4.0  # 379 chunks at 76 results/s
    # its repair is lost too; the 379 chunks ahead of it come back within 70 ms
    for k, c in enumerate(range(21, 400)):
        at = 0.50 + 0.07 * (k + 1) / 379
        assert s.receive(result(j, c), SWITCH, at)
        s.pump(at)
    back = 0.57
    again = None
    while t < 10.0 and again is None:
        t = max(s.wakeup(t), t + 1e-4)
        s.pump(t)
        if len(sent) > 401:
            again = t
    assert again is not None and [IncHeader.unpack(p).chunk for p in sent[401:]] == [17]
    assert s.stats.repeat_retransmissions == 1
    # not before the chunks ahead were back and one slowest-path RTT after, and not seconds later
    assert back + 0.16 <= again <= back + s.timing.repair_timeout(1, back, 0.0) + 0.002
    assert again < 1.0 < sent_at + wait


def test_a_repair_sent_while_chunks_go_out_waits_for_what_the_farthest_worker_sends_before_its_own() -> None:
    """The farthest worker sees a hole up to one slowest-path RTT later and meanwhile keeps sending new
    chunks (at up to the link's rate), which go ahead of its repair: the repair is due only once the
    results of the chunks sent up to one path RTT after it are back, not only those sent before it."""
    j = job(nslots=4096, path_rtt_s=0.16, rate_bps=8 * 322 * 2_000)  # 2,000 frames/s: 320 per path RTT
    s, sent = stream(j, chunks=1500)
    t = 0.0
    while t < 0.45:
        t = s.wakeup(t)
        s.pump(t)
    n = len(sent)
    for k, c in enumerate((*range(16), 17, 18, 19)):  # 16 is lost; 19 results trickle in over 0.2 s
        assert s.receive(result(j, c), SWITCH, 0.25 + 0.2 * k / 18)
    s.pump(0.45)
    assert IncHeader.unpack(sent[n]).chunk == 16 and s.inflight[16].retries == 1  # the repair, first
    before = IncHeader.unpack(sent[n - 1]).chunk  # the newest chunk ahead of it in this worker's queue
    assert before > 600 and s.behind == [(before + 320, 16, 1)]
    due = s.inflight[16].due
    assert due > 5.0  # the queue estimate: 620 chunks at the 90 results/s of the first rounds
    for c in range(20, before + 1):  # the chunks that went before it are back: it still waits
        assert s.receive(result(j, c), SWITCH, 0.5)
    s.pump(0.5)
    assert s.inflight[16].due == due and s.behind
    for c in range(before + 1, before + 321):  # and those of the next path RTT: now it is due soon
        assert s.receive(result(j, c), SWITCH, 0.6)
    queue = s._queue_ahead(0.6)
    assert queue is not None and queue < 0.2  # the new chunks sent since are few, and quick by now
    s.pump(0.6)
    assert not s.behind and s.inflight[16].due == pytest.approx(0.6 + s.timing.repair_timeout(1, 0.6, queue))


def test_a_repair_in_the_tail_gets_a_copy_once_the_farthest_workers_repair_is_at_the_root() -> None:
    """A hole of the farthest worker is filled at the root 2 x its one-way delay after the root sent the
    result that shows it; a nearer worker's repair arrives before that and is absorbed, so when the
    multicast of the repaired result is lost on its way back, that worker waited a whole repair timeout
    for its second repair. A copy sent twice the difference of the one-way delays later (plus a margin)
    finds the chunk complete, and the root answers it. Here the tree's slowest path is 0.2 s and this
    worker's clean RTT 0.15 s (its own one-way delay and the farthest worker's): 0.05 s apart, so the
    copy goes 2 x 0.05 + 0.03 s after the repair."""
    j = job(nslots=16, rto_s=1.0, path_rtt_s=0.2)
    s, sent = stream(j, chunks=8)
    s.pump(0.0)
    assert len(sent) == 8  # all sent: the tail
    for c in (0, 1, 3, 4, 5, 6, 7):
        assert s.receive(result(j, c), SWITCH, 0.15)
    s.pump(0.15)
    assert [IncHeader.unpack(p).chunk for p in sent[8:]] == [2]  # the repair
    lag = 2 * (0.2 - 0.15) + ReduceStream.COPY_MARGIN
    assert s.wakeup(0.2) == pytest.approx(0.15 + lag)
    s.pump(0.15 + lag - 0.001)
    assert len(sent) == 9
    s.pump(0.15 + lag + 0.001)
    copy = IncHeader.unpack(sent[9])
    assert copy.chunk == 2 and copy.flags & F_RETRANSMIT
    assert s.stats.repair_copies == 1 and s.stats.retransmissions == 1  # a copy is no retransmission
    assert s.receive(result(j, 2), SWITCH, 0.4)
    s.pump(0.5)
    assert len(sent) == 10  # one copy a repair


def test_no_copy_goes_once_the_result_is_back() -> None:
    j = job(nslots=16, rto_s=1.0, path_rtt_s=0.2)
    s, sent = stream(j, chunks=8)
    s.pump(0.0)
    for c in (0, 1, 3, 4, 5, 6, 7):
        assert s.receive(result(j, c), SWITCH, 0.15)
    s.pump(0.15)
    assert s.receive(result(j, 2), SWITCH, 0.2)  # the repair's result, before the copy's time
    s.pump(0.3)
    assert [IncHeader.unpack(p).chunk for p in sent[8:]] == [2]
    assert s.stats.repair_copies == 0


def test_a_copy_needs_the_tree_s_slowest_path() -> None:
    """Without it the lag is unknown: no copies, only repairs (and the tail probe)."""
    j = job(nslots=16, rto_s=1.0)
    s, sent = stream(j, chunks=8)
    s.pump(0.0)
    for c in (0, 1, 3, 4, 5):
        assert s.receive(result(j, c), SWITCH, 0.15)
    for t in (0.15, 0.3, 0.4):
        s.pump(t)
    assert s.stats.repair_copies == 0
    assert s.stats.retransmissions >= 1 and len(sent) == 8 + s.stats.retransmissions


def test_the_last_chunks_get_a_copy_each_and_their_results_give_no_rtt_sample() -> None:
    """The last REORDER + 1 chunks: no later result can show them lost, so a loss among them would wait
    for the tail-loss probe (more than an RTT after their sending). A copy each, sent the same lag after
    the chunk, makes the loss of one copy harmless. A result that a copy may have answered is no clean
    RTT sample (Karn's rule)."""
    j = job(nslots=4, rto_s=1.0, path_rtt_s=0.2)  # 4 slots: chunk 4 waits for chunk 0's result
    s, sent = stream(j, chunks=6)
    s.pump(0.0)
    assert len(sent) == 4
    for c in (0, 1):
        assert s.receive(result(j, c), SWITCH, 0.15)
    s.pump(0.15)
    assert [IncHeader.unpack(p).chunk for p in sent[4:]] == [4, 5]  # the last new chunks: all sent
    lag = 2 * (0.2 - 0.15) + ReduceStream.COPY_MARGIN
    s.pump(0.16)  # chunk 3 went at 0: its copy is due since 0.13
    assert [IncHeader.unpack(p).chunk for p in sent[6:]] == [3]
    s.pump(0.15 + lag + 0.001)
    assert [IncHeader.unpack(p).chunk for p in sent[7:]] == [4, 5]
    assert all(IncHeader.unpack(p).flags & F_RETRANSMIT for p in sent[6:])
    assert s.stats.repair_copies == 3 and s.stats.retransmissions == 0
    latest = s.timing.rtt.latest
    assert s.receive(result(j, 2), SWITCH, 0.35) and s.timing.rtt.latest == pytest.approx(0.35)
    assert s.receive(result(j, 3), SWITCH, 0.36)
    assert s.timing.rtt.latest == pytest.approx(0.35) and latest == pytest.approx(0.15)


def paced_until(
    j: IncJob, chunks: int, lost: set[int], until: float | None, rtt: float = 0.15
) -> tuple[ReduceStream, dict[int, list[float]]]:
    """A stream paced by `j` whose results come `rtt` after each chunk's first sending, or after its
    second for the chunks of `lost` (their first is lost), driven in steps of 5 ms up to `until` (None:
    until its last new chunk has left); with the times each chunk was sent."""
    s, sent = stream(j, chunks=chunks)
    sends: dict[int, list[float]] = {}
    t = 0.0
    while s.next_index < s.total if until is None else t <= until:
        s.pump(t)
        for p in sent:
            sends.setdefault(IncHeader.unpack(p).chunk, []).append(t)
        sent.clear()
        for c, at in sends.items():
            k = 1 if c in lost else 0
            if len(at) > k and at[k] + rtt <= t and c in s.inflight:
                assert s.receive(result(j, c), SWITCH, t)
        t = round(t + 0.005, 3)
    return s, sends


def test_the_chunks_of_the_last_rtt_of_sending_get_a_copy_each() -> None:
    """A hole in a chunk sent at t is repaired at t + 2 RTT at the earliest, later than the call's end
    without it (the last sending + 1 RTT) wherever t lies in the last RTT: those chunks get a copy each
    once everything is sent, the older ones none. Paced at 100 frames a second with a 0.15 s RTT, about
    15 of the 200 chunks, below the cap of one in eight (25)."""
    rtt = 0.15
    j = job(nslots=4096, rto_s=1.0, path_rtt_s=0.2, rate_bps=8 * 322 * 100)
    s, sends = paced_until(j, 200, lost=set(), until=None, rtt=rtt)
    sent_at = {c: at[0] for c, at in sends.items()}
    end = max(sent_at.values())
    assert s.stats.retransmissions == 0 and s.timing.window.base_rtt == pytest.approx(rtt)
    copied = sorted(c for _, c, _ in s.copies)
    recent = sorted(c for c, at in sent_at.items() if at >= end - rtt)  # waiting when the last went
    assert copied == recent and 12 <= len(copied) < 200 // ReduceStream.TAIL_COPY_SHARE
    lag = 2 * (0.2 - rtt) + ReduceStream.COPY_MARGIN
    assert all(when == pytest.approx(sent_at[c] + lag) for when, c, _ in s.copies)


@pytest.mark.parametrize("lost, copies", [(set(), 3), ({2}, 15)])
def test_the_last_rtts_copies_go_only_where_the_call_found_a_hole(lost: set[int], copies: int) -> None:
    """On a path that lost nothing, only the last three chunks' copies go (which no later result can
    show lost); once a hole was found, the last RTT's copies go too (about 15 at 100 frames a second
    and a 0.15 s RTT). The repair of chunk 2, long before the end of sending, gets none."""
    j = job(nslots=4096, rto_s=1.0, path_rtt_s=0.2, rate_bps=8 * 322 * 100)
    s, _ = paced_until(j, 200, lost=lost, until=2.6)
    assert s.finished and s.holes == len(lost) and s.stats.retransmissions == len(lost)
    assert copies - 1 <= s.stats.repair_copies <= copies + 1


@pytest.mark.parametrize("chunks, copied", [(30, True), (200, False)])
def test_a_repair_gets_a_copy_before_the_end_of_sending_only_when_its_second_try_would_come_after_it(
    chunks: int, copied: bool
) -> None:
    """Chunk 2 is lost; its repair goes about 0.17 s in, while new chunks still leave (100 a second).
    Of 30 chunks, the last leaves 0.1 s later, within the repair's wait: were the repair lost, its
    second try would end the call, so it gets a copy. Of 200, 1.8 s of sending remain: a second try
    would still come long before the end, and the copy would only cost the link a packet."""
    j = job(nslots=4096, rto_s=1.0, path_rtt_s=0.2, rate_bps=8 * 322 * 100)
    s, _ = paced_until(j, chunks, lost={2}, until=0.2)
    f = s.inflight[2]
    assert f.retries == 1 and s.next_index < chunks  # repaired while new chunks still go out
    assert s._sending_left(s.timing) < f.due - f.sent_at if copied else s._sending_left(s.timing) > 1.0
    assert [c for _, c, _ in s.copies] == ([2] if copied else [])


def test_the_last_chunks_copies_are_at_most_one_in_eight_of_the_call() -> None:
    """All 80 chunks went within an RTT of the end: only the last ten get a copy."""
    j = job(nslots=64, rto_s=1.0, path_rtt_s=0.2)
    s, sent = stream(j, chunks=80)
    s.pump(0.0)
    for c in range(16):
        assert s.receive(result(j, c), SWITCH, 0.15)
    s.pump(0.15)
    assert len(sent) == 80 and s.next_index == 80
    assert sorted(c for _, c, _ in s.copies) == list(range(70, 80))


def test_a_worker_over_real_sockets_takes_results_from_its_switch_only() -> None:
    """The worker's socket is connected to its switch's INC port: a result sent from anywhere else (here
    the switch's address but another port, ahead of every real one, with other values) never reaches
    the stream, and the allreduce is exact. A thread on loopback plays the switch of a one-worker job."""
    import socket
    import threading

    from edge.protocol import decode

    switch_ip, bind_ip = "127.0.0.9", "127.0.0.8"
    sw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sw.bind((switch_ip, INC_UDP_PORT))
    forger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    forger.bind((switch_ip, 0))
    sw.settimeout(5.0)
    j = job(switch_ip=switch_ip, bind_ip=bind_ip, nslots=64, workers=1, rto_s=0.5)
    values = np.arange(40 * INC_LANES, dtype=np.int64) - 1000

    def switch() -> None:
        answered: set[int] = set()
        while len(answered) < 40:
            try:
                packet, worker = sw.recvfrom(2048)
            except TimeoutError:
                return
            header, lanes = decode(packet)
            forged = IncHeader(
                header.tenant, header.round, header.slot, header.chunk, flags=F_RESULT | (header.flags & F_VERSION),
                count=1, epoch=header.epoch,
            )  # fmt: skip
            forger.sendto(encode(forged, lanes + np.uint32(1)), worker)
            reply = IncHeader(
                header.tenant, header.round, header.slot, header.chunk, flags=F_RESULT | (header.flags & F_VERSION),
                count=1, epoch=header.epoch,
            )  # fmt: skip
            sw.sendto(encode(reply, lanes), worker)
            answered.add(header.chunk)

    t = threading.Thread(target=switch, daemon=True)
    t.start()
    try:
        with IncWorker(j) as w:
            assert w.connected
            out = w.allreduce(values, "int32")
    finally:
        t.join(timeout=5)
        sw.close()
        forger.close()
    assert np.array_equal(out, values)
    assert w.stats.rejected == 0  # the kernel dropped the forged ones: the stream never saw them
