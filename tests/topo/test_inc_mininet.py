"""Core-INC on the emulated WAN: a two-level tree over three sites with 2 % loss on every WAN link
(root switch plus one switch per site), two tenants at once, and a dead worker."""

from __future__ import annotations

import pytest

from topo.allreduce_run import AllreduceSpec, run_inc

pytestmark = [pytest.mark.mininet, pytest.mark.root]


def _log(msg: str) -> None:
    print(msg)


def test_int32_allreduce_is_bit_exact_under_loss(wan3_lossy) -> None:  # type: ignore[no-untyped-def]
    [res] = run_inc(wan3_lossy, AllreduceSpec(elements=16384, mode="int32", nslots=256), _log)
    assert res.errors == []
    assert res.exact and res.max_abs_error == 0.0
    assert res.stats["results"] == 6 * 256  # every worker got every chunk once
    assert len(res.digests) == 6 and len(set(res.digests)) == 1  # every worker holds the same bits
    assert res.stats["retransmissions"] > 0  # 2 % loss on every link: the repair path was exercised
    assert res.stats["native_calls"] == 6  # every worker's chunks and results went through edge/native
    # every runner was ready before the common start, and the timed parts began together
    assert res.stats["max_late_start_ms"] == 0.0 and res.stats["start_spread_ms"] < 100


def test_int32_in_wide_packets_is_bit_exact_with_a_quarter_of_the_packets(wan3_lossy) -> None:  # type: ignore[no-untyped-def]
    """256 values to a packet: 16,384 int32 go as 64 wide frames a worker (1090 bytes each), through the
    workers' native I/O, exact under 2 % loss; the host links carry those frames (plus the repairs and
    copies, also wide, and a little neighbour discovery), and the bound is the wide frames' own."""
    from edge.protocol import WIDE_FRAME_LEN

    spec = AllreduceSpec(elements=16384, mode="int32", nslots=256, values_per_packet=256)
    [res] = run_inc(wan3_lossy, spec, _log)
    assert res.errors == [] and res.exact and res.max_abs_error == 0.0
    assert res.stats["results"] == 6 * 64  # one result a wide packet
    assert len(set(res.digests)) == 1 and res.stats["native_calls"] == 6
    assert res.stats["unpacked_calls"] == 0 and res.extra["values_per_packet"] == 256
    repeats = res.stats["retransmissions"] + res.stats["repair_copies"]
    assert res.stats["packets_sent"] == 6 * 64 + repeats  # every packet a wide one: 64 a worker, then repeats
    first = res.extra["bytes"]["host_up"] - repeats * WIDE_FRAME_LEN
    # the interfaces count everything: a few KB of neighbour discovery and ARP ride along during the run
    # (9 KB in one CI run); 64-value packets would be 6 x 256 x 322 = 494,592 bytes, far above this
    other = 16_384
    assert 6 * 64 * WIDE_FRAME_LEN <= first <= 6 * 64 * WIDE_FRAME_LEN + other < 6 * 256 * 322, res.extra[
        "bytes"
    ]
    # the bound's link term: the 64 wide frames over a 50 Mbit/s tree link (not 256 frames of 322 bytes)
    link_s = res.extra["against_bound"]["bound"]["link_s"]  # type: ignore[index]
    assert link_s == round(64 * WIDE_FRAME_LEN * 8 / 50e6, 3)
    # the switches' verdicts over the run (topo/switch_counters.py): each completed each packet's cells
    # once, and none refused anything as malformed, foreign or corrupted
    verdicts = res.extra["switch_verdicts"]
    assert set(verdicts) == {"TYO", "NYC", "LON"}, verdicts
    assert all(v.get("completed") == 64 for v in verdicts.values()), verdicts  # type: ignore[union-attr]
    refusals = ("malformed", "unknown_tenant", "not_a_child", "wrong_epoch", "bad_checksum")
    assert not any(v.get(r) for v in verdicts.values() for r in refusals), verdicts  # type: ignore[union-attr]


def test_two_slots_reuse_every_cell_many_times_under_loss(wan3_lossy) -> None:  # type: ignore[no-untyped-def]
    """64 chunks through 2 slots: each cell and its shadow copy serve 16 chunks, with 2 % loss."""
    [res] = run_inc(wan3_lossy, AllreduceSpec(elements=4096, mode="int32", nslots=2), _log)
    assert res.errors == [] and res.exact
    assert res.stats["results"] == 6 * 64


def test_float32_allreduce_within_quantisation_bound_under_loss(wan3_lossy) -> None:  # type: ignore[no-untyped-def]
    [res] = run_inc(wan3_lossy, AllreduceSpec(elements=8192, mode="float32", nslots=256), _log)
    assert res.errors == []
    assert res.exact, f"max error {res.max_abs_error} above the bound {res.bound}"
    assert 0 < res.bound < 1e-5  # normal(0, 1) inputs of 6 workers: the bound is tight


def test_two_tenants_share_the_switches(wan3_lossy) -> None:  # type: ignore[no-untyped-def]
    results = run_inc(wan3_lossy, AllreduceSpec(elements=8192, mode="int32", tenants=2, nslots=256), _log)
    assert [r.name for r in results] == ["inc-t1", "inc-t2"]
    for r in results:
        assert r.errors == [] and r.exact
        assert r.stats["max_late_start_ms"] == 0.0  # twelve runners, one common start


def test_a_dead_worker_makes_the_others_fail_with_a_timeout(wan3_lossy) -> None:  # type: ignore[no-untyped-def]
    spec = AllreduceSpec(elements=4096, mode="int32", nslots=64, stall_timeout_s=4.0)
    [res] = run_inc(wan3_lossy, spec, _log, dead_workers=("LONw2",))
    assert not res.exact
    rank_of_dead = 5  # hosts in site order: TYOw1, TYOw2, NYCw1, NYCw2, LONw1, LONw2
    others = [e for e in res.errors if not e.startswith(f"rank {rank_of_dead}:")]
    assert len(others) == 5, res.errors
    assert all("IncTimeoutError" in e and "may be dead" in e for e in others), others


def _counters(running, switch: str, name: str) -> dict[int, int]:  # type: ignore[no-untyped-def]
    from controller.p4rt import P4InfoIndex

    index = P4InfoIndex(running.pipeline.p4info)
    entries = running.conns[switch].read([index.counter_entry(name)])
    return {e.counter_entry.index.index: e.counter_entry.data.packet_count for e in entries}


def test_a_hostile_host_cannot_touch_another_tenants_sums(wan3_lossy) -> None:  # type: ignore[no-untyped-def]
    """TYOw1 is a worker of both tenants; a process on it attacks tenant 2 while both jobs run: with
    tenant 1's epoch and with guesses, chunk 0xFFFFFFFF, posing as TYOw2 and as the switch, forged
    results straight to TYOw2's result port, corrupted and truncated packets (scripts/inc_attack.py).
    Both tenants' sums stay exact, and the switch counted the attacks where they were stopped."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "scripts" / "inc_attack.py"
    fabric = wan3_lossy.network.fabric
    sw, me = fabric.host("TYOw1")
    _, victim = fabric.host("TYOw2")
    before = {name: _counters(wan3_lossy, "TYO", name) for name in ("inc_stats",)}
    attacker: list[subprocess.Popen] = []

    def attack(plans) -> None:  # type: ignore[no-untyped-def]
        epoch_1 = next(p.epoch for p in plans if p.tenant == 1)
        cmd = [
            sys.executable,
            str(script),
            "--iface",
            "TYOw1-eth0",
            "--mac",
            me.mac,
            "--ip",
            me.ip,
            "--switch-mac",
            sw.inc_mac,
            "--switch-ip",
            sw.inc_ip,
            "--victim-ip",
            victim.ip,
            "--tenant",
            "2",
            "--epoch",
            str(epoch_1),
            "--seconds",
            "8",
            "--rate",
            "300",
        ]
        attacker.append(
            wan3_lossy.network.host("TYOw1").popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        )

    results = run_inc(
        wan3_lossy,
        AllreduceSpec(elements=8192, mode="int32", tenants=2, nslots=64),
        _log,
        on_installed=attack,
    )
    out, err = attacker[0].communicate(timeout=60)
    assert attacker[0].returncode == 0, err
    sent = json.loads(out.decode().strip().splitlines()[-1])["sent"]
    assert min(sent.values()) > 50, sent
    for r in results:
        assert r.errors == [] and r.exact, r.name
    stats = _counters(wan3_lossy, "TYO", "inc_stats")
    grew = {i: stats.get(i, 0) - before["inc_stats"].get(i, 0) for i in range(11)}
    # wrong epoch while the job is installed, unknown tenant once it has been removed
    assert grew[9] + grew[1] >= sent["known_epoch"] + sent["guessed_epoch"] + sent["wrapping_chunk"]
    assert grew[9] > 0
    # bad checksum, or malformed where the flipped bit was in the version or kind (checked first)
    assert grew[10] + grew[0] >= sent["corrupted"] + sent["truncated"]
    assert grew[10] > 0 and grew[0] >= sent["truncated"]
    guard = _counters(wan3_lossy, "TYO", "guard_stats")
    assert guard.get(0, 0) >= sent["spoofed_worker"] + sent["forged_result_spoofed"]
    assert _counters(wan3_lossy, "TYO", "route_guard").get(1, 0) >= sent["forged_result"]


def test_host_baselines_are_exact_and_never_beat_their_bounds(wan3_lossy) -> None:  # type: ignore[no-untyped-def]
    from topo.allreduce_run import run_baseline

    spec = AllreduceSpec(elements=16384, mode="int32")
    vector = 4 * spec.elements
    for algo in ("hierarchical", "ring"):
        res = run_baseline(wan3_lossy, spec, algo, _log)
        assert res.errors == [] and res.exact, algo
        assert 0 < res.bound_s <= res.seconds, (algo, res.bound_s, res.seconds)
        # a 64 KiB warm-up is over long before the common start, 3 s after the launch
        assert res.extra["bytes_counted_from"] == "start", res.stats
        if algo == "hierarchical":
            # the timed allreduce's bytes only, not its untimed warm-up's (which doubled them): each
            # of the three site leaders sends 2 x 2/3 of the vector over the WAN in the leaders' ring,
            # 4 vectors in all, with TCP's headers, losses and repairs on top
            wan = res.extra["bytes"]["wan"]
            assert 4 * vector <= wan < 6 * vector, (wan, vector)


def test_secure_aggregation_is_exact_through_the_switches(wan3_lossy) -> None:  # type: ignore[no-untyped-def]
    """Pairwise masks agreed by X25519 between the six workers' hosts; the switches add masked values."""
    [res] = run_inc(wan3_lossy, AllreduceSpec(elements=8192, mode="int32", nslots=64, secure=True), _log)
    assert res.errors == [] and res.exact
    assert res.stats["max_key_exchange_s"] > 0
