"""Edge-INC sites fed by their workers over TCP, cycle after cycle, as `tributary train --strategy
edge-cliques` uses them: real site processes on loopback addresses (the senders replicate their streams,
no switches), a 2x2 grid of two rounds per cycle, two workers per site. Every worker must get the exact
sum over all eight workers at every cycle (int32), or the stages' block fixed point sum within its bound
(float32), and a worker that goes away must end its site with an error, not a hang."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from edge import edge_wire as w
from edge.training.comms import EdgeComm

SITES = [1, 2, 3, 4]
ROUNDS = [(1, [(1, 2), (3, 4)]), (2, [(1, 3), (2, 4)])]
ELEMENTS = 2410  # the training model's parameters: 38 chunks, the last one partly padding
PORT = 27104  # below the ephemeral range (32768-60999): no client socket of another test can hold it


def _ip(site: int) -> str:
    return f"127.0.3.{10 + site}"


def _worker_ip(site: int, k: int) -> str:
    return f"127.0.4.{10 + 2 * site + k}"


def _start_sites(tmp_path: Path, fmt: str, cycles: int, feed_timeout_s: float = 30.0) -> list:
    kinds = ["max", "sum"] if fmt == "float32" else ["sum"]
    schedule = [
        (len(kinds) * (rnd - 1) + i + 1, cliques, kind)
        for rnd, cliques in ROUNDS
        for i, kind in enumerate(kinds)
    ]
    procs = []
    for s in SITES:
        rounds = [
            {
                "kind": kind,
                "round": rnd,
                "members": list(next(c for c in cliques if s in c)),
                "gap_s": 0.0005,
                "agree_s": 0.01,
                "rtt_s": {str(m): 0.002 for m in next(c for c in cliques if s in c) if m != s},
                "idle_s": 0.05,
            }
            for rnd, cliques, kind in schedule
        ]
        spec = {
            "site": s,
            "ip": _ip(s),
            "tenant": 5,
            "epoch": 0xFFFFFFFE,  # the cycles' epochs wrap around 2**32
            "memory_bytes": 64 * w.CHUNK_BYTES,
            "stream_ip": "",
            "peers": {str(m): _ip(m) for m in SITES if m != s},
            "workers": [_worker_ip(s, 0), _worker_ip(s, 1)],
            "rounds": rounds,
            "lanes_path": "",
            "start_at": time.time(),
            "report": str(tmp_path / f"site{s}.json"),
            "replicate": "sender",
            "stall_timeout_s": 10.0,
            "linger_s": 0.3,
            "format": fmt,
            "cycles": cycles,
            "period": len(schedule),
            "feed_port": PORT,
            "feed_timeout_s": feed_timeout_s,
            "sites": len(SITES),
        }
        path = tmp_path / f"site{s}.spec.json"
        path.write_text(json.dumps(spec))
        procs.append(subprocess.Popen([sys.executable, "-m", "edge.edge_site", str(path)]))
    return procs


def _vector(fmt: str, cycle: int, site: int, k: int) -> np.ndarray:
    rng = np.random.default_rng([cycle, site, k])
    if fmt == "int32":
        return rng.integers(-(2**24), 2**24, size=ELEMENTS, dtype=np.int32)
    return (rng.standard_normal(ELEMENTS) * 2.0 ** rng.integers(-8, 8)).astype(np.float32)


def _train_like(tmp_path: Path, fmt: str, cycles: int) -> tuple[dict, dict]:
    procs = _start_sites(tmp_path, fmt, cycles)
    got: dict[tuple[int, int], list[np.ndarray]] = {}
    errors: list[BaseException] = []

    def worker(site: int, k: int) -> None:
        try:
            comm = EdgeComm(_ip(site), PORT, timeout_s=30, source_ip=_worker_ip(site, k))
            got[(site, k)] = [comm.sum(_vector(fmt, c, site, k)) for c in range(cycles)]
            comm.close()
        except BaseException as exc:  # re-raised by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(s, k)) for s in SITES for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=90)
    try:
        for p in procs:
            p.wait(timeout=30)
    finally:
        for p in procs:
            p.kill()
    assert not errors, errors
    reports = {s: json.loads((tmp_path / f"site{s}.json").read_text()) for s in SITES}
    return got, reports


def test_every_cycle_hands_every_worker_the_exact_sum_over_all_workers(tmp_path: Path) -> None:
    cycles = 4
    got, reports = _train_like(tmp_path, "int32", cycles)
    for c in range(cycles):
        want = np.zeros(ELEMENTS, dtype=np.int64)
        for s in SITES:
            for k in (0, 1):
                want += _vector("int32", c, s, k)
        for key, results in got.items():
            assert results[c].dtype == np.int32
            assert np.array_equal(results[c], want.astype(np.int32)), (c, key)
    for rep in reports.values():
        assert "error" not in rep, rep
        assert [x["cycle"] for x in rep["cycles"]] == list(range(cycles))
        assert all(x["count"] == 4 for x in rep["cycles"])  # every cycle summed all four sites
        assert len(rep["rounds"]) == 2 * cycles and {r["count"] for r in rep["rounds"]} == {2, 4}


def test_float32_cycles_sum_in_block_fixed_point_within_its_bound(tmp_path: Path) -> None:
    cycles = 2
    got, reports = _train_like(tmp_path, "float32", cycles)
    for c in range(cycles):
        vecs = [_vector("float32", c, s, k).astype(np.float64) for s in SITES for k in (0, 1)]
        want = np.sum(vecs, axis=0)
        scale = max(np.abs(v).max() for v in vecs)
        for results in got.values():
            assert results[c].dtype == np.float32
            # two rounds of block fixed point: each member rounds to half a unit of a block scale that is
            # at least 2**-26 of the block's largest value (31 bits less headroom); far below 1e-6 here
            assert np.abs(results[c] - want).max() <= 1e-6 * scale * 8
        first = list(got.values())
        assert all(np.array_equal(first[0][c], r[c]) for r in first)  # every worker gets the same bits
    assert all("error" not in rep for rep in reports.values())


def test_a_worker_that_leaves_ends_its_site_with_the_reason(tmp_path: Path) -> None:
    procs = _start_sites(tmp_path, "int32", cycles=3, feed_timeout_s=5.0)
    comms = [EdgeComm(_ip(1), PORT, timeout_s=10, source_ip=_worker_ip(1, k)) for k in (0, 1)]
    comms[0].close()  # one worker of site 1 goes away before sending anything
    try:
        procs[0].wait(timeout=30)
        # the other worker, waiting for a result, sees the site's connection close: no hang
        with pytest.raises(ConnectionError):
            comms[1].sum(np.zeros(ELEMENTS, dtype=np.int32))
    finally:
        for c in comms[1:]:
            c.close()
        for p in procs:
            p.kill()
    report = json.loads((tmp_path / "site1.json").read_text())
    assert procs[0].returncode == 1
    assert "closed their connection" in report["error"] and _worker_ip(1, 0) in report["error"]


def test_a_stranger_is_turned_away_and_a_missing_worker_named(tmp_path: Path) -> None:
    """A stranger connecting to the feed port is turned away; the site keeps waiting for its own workers
    and ends with the reason once the wait is over."""
    procs = _start_sites(tmp_path, "int32", cycles=1, feed_timeout_s=2.0)
    import socket

    time.sleep(1.0)
    stranger = socket.create_connection((_ip(1), PORT), timeout=5, source_address=("127.0.5.1", 0))
    assert stranger.recv(1) == b""  # closed by the site
    stranger.close()
    try:
        procs[0].wait(timeout=30)
    finally:
        for p in procs:
            p.kill()
    report = json.loads((tmp_path / "site1.json").read_text())
    assert "no vector from worker(s)" in report["error"]
