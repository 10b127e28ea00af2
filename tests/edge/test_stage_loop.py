"""The Edge-INC site and worker processes over real UDP sockets on loopback addresses (no switches: the
senders replicate their streams themselves), through a two-round 2x2 grid: the start agreement between
rounds, the stage's results handed to the workers, and the exact sum of all four sites at every worker."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from edge import edge_wire as w

SITES = [1, 2, 3, 4]
ROUNDS = [(1, [(1, 2), (3, 4)]), (2, [(1, 3), (2, 4)])]
CHUNKS = 60


def _ip(site: int) -> str:
    return f"127.0.0.{10 + site}"


def _worker_ip(site: int) -> str:
    return f"127.0.1.{10 + site}"


def _run_sites(tmp_path: Path, sites: list[int], schedule: list[tuple[int, list[tuple[int, ...]]]], fmt: str = "int32", vectors: dict | None = None):  # type: ignore[no-untyped-def]  # fmt: skip
    """Start a receiver and a site process per site on loopback addresses; wait; return the inputs.
    float32: each round of the schedule runs as an exponent (max) round and a sum round."""
    rng = np.random.default_rng(5)
    vectors = vectors or {
        s: rng.integers(0, 2**32, size=(CHUNKS, w.LANES), dtype=np.uint64).astype(np.uint32) for s in sites
    }
    if fmt == "float32":
        schedule = [
            (2 * rnd - 1 + i, cliques, kind)
            for rnd, cliques in schedule
            for i, kind in ((0, "max"), (1, "sum"))
        ]
    else:
        schedule = [(rnd, cliques, "sum") for rnd, cliques in schedule]
    start_at = time.time() + 3.0
    procs = []
    for s in sites:
        np.save(tmp_path / f"in{s}.npy", vectors[s])
        rounds = []
        for rnd, cliques, kind in schedule:
            members = next((c for c in cliques if s in c), None)
            if members is None:
                continue  # this site sits the round out
            rounds.append(
                {
                    "kind": kind,
                    "round": rnd,
                    "members": list(members),
                    "gap_s": 0.001,
                    "agree_s": 0.01,
                    "rtt_s": {str(m): 0.002 for m in members if m != s},
                    "idle_s": 0.05,
                }
            )
        site_spec = {
            "site": s,
            "ip": _ip(s),
            "tenant": 3,
            "epoch": 77,
            "memory_bytes": 8 * w.CHUNK_BYTES,
            "stream_ip": "",
            "peers": {str(m): _ip(m) for m in sites if m != s},
            "workers": [_worker_ip(s)],
            "rounds": rounds,
            "lanes_path": str(tmp_path / f"in{s}.npy"),
            "start_at": start_at,
            "report": str(tmp_path / f"site{s}.json"),
            "replicate": "sender",
            "stall_timeout_s": 10.0,
            "linger_s": 0.5,
            "format": fmt,
        }
        recv_spec = {
            "ip": _worker_ip(s),
            "stage_ip": _ip(s),
            "tenant": 3,
            "epoch": 77,
            "rounds": [{"round": r["round"], "chunks": CHUNKS} for r in rounds if r["kind"] == "sum"],
            "out": str(tmp_path / f"out{s}.npy"),
            "report": str(tmp_path / f"recv{s}.json"),
            "timeout_s": 30,
        }
        (tmp_path / f"site{s}.spec.json").write_text(json.dumps(site_spec))
        (tmp_path / f"recv{s}.spec.json").write_text(json.dumps(recv_spec))
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "edge.edge_receiver", str(tmp_path / f"recv{s}.spec.json")]
            )
        )
        procs.append(
            subprocess.Popen([sys.executable, "-m", "edge.edge_site", str(tmp_path / f"site{s}.spec.json")])
        )
    try:
        for p in procs:
            p.wait(timeout=60)
    finally:
        for p in procs:
            p.kill()
    return vectors


def test_two_round_grid_over_loopback_sockets(tmp_path: Path):
    vectors = _run_sites(tmp_path, SITES, ROUNDS)
    want = np.zeros_like(vectors[1])
    for v in vectors.values():
        want += v
    for s in SITES:
        site = json.loads((tmp_path / f"site{s}.json").read_text())
        assert "error" not in site, site
        assert [r["count"] for r in site["rounds"]] == [2, 4]
        r1, r2 = site["rounds"]
        # round 2 starts after the last member of its clique was ready, by the agreement delay
        assert r2["start"] >= r1["done"] + 0.01 - 1e-3
        assert all(r["stage"]["peak_chunks"] <= 8 for r in site["rounds"])
        recv = json.loads((tmp_path / f"recv{s}.json").read_text())
        assert "error" not in recv, recv
        assert recv["count"] == [4]
        assert np.array_equal(np.load(tmp_path / f"out{s}.npy"), want)
    # the two members of each round-2 clique started at the same instant (A4)
    starts = {s: json.loads((tmp_path / f"site{s}.json").read_text())["rounds"][1]["start"] for s in SITES}
    assert abs(starts[1] - starts[3]) < 1e-6 and abs(starts[2] - starts[4]) < 1e-6


def test_rotating_pairs_with_a_site_that_sits_out_the_first_round(tmp_path: Path):
    """Three sites, pairs: site 3 idles in round 1 and joins in round 2, so its first round needs the
    start agreement like everyone else's later rounds."""
    schedule = [(1, [(1, 2)]), (2, [(2, 3)]), (3, [(1, 3)])]
    vectors = _run_sites(tmp_path, [1, 2, 3], schedule)
    v = {s: vectors[s].copy() for s in vectors}
    counts = dict.fromkeys(v, 1)
    for _rnd, cliques in schedule:  # the exact sums each round gives (mod 2**32)
        for c in cliques:
            total = sum(v[m] for m in c)
            n = sum(counts[m] for m in c)
            for m in c:
                v[m], counts[m] = total.copy(), n
    for s in (1, 2, 3):
        site = json.loads((tmp_path / f"site{s}.json").read_text())
        assert "error" not in site, site
        recv = json.loads((tmp_path / f"recv{s}.json").read_text())
        assert "error" not in recv, recv
        assert recv["count"] == [counts[s]]
        assert np.array_equal(np.load(tmp_path / f"out{s}.npy"), v[s])
    site3 = json.loads((tmp_path / "site3.json").read_text())
    site2 = json.loads((tmp_path / "site2.json").read_text())
    assert site3["rounds"][0]["start"] == site2["rounds"][1]["start"]  # one agreed start
    assert site3["rounds"][0]["start"] >= site2["rounds"][0]["done"]


def test_float32_grid_sums_in_block_fixed_point_with_agreed_exponents(tmp_path: Path):
    """float32 through the stages: per round an exponent (max) round, then the block fixed point sum.
    Blocks of very different scales at different sites; every worker gets exactly what the stages'
    arithmetic gives (edge.edge_float.replay, bit for bit), within the stated bound of the float64 sum."""
    from edge import edge_float

    rng = np.random.default_rng(11)
    vectors = {
        s: (
            rng.standard_normal((CHUNKS, w.LANES)) * np.ldexp(1.0, rng.integers(-12, 12, (CHUNKS, 1)))
        ).astype(np.float32)
        for s in SITES
    }
    vectors[3][5] = 0.0  # an all-zero block at one site
    _run_sites(tmp_path, SITES, ROUNDS, "float32", vectors)
    named = {str(s): v for s, v in vectors.items()}
    want, exact, bound = edge_float.replay(named, [[tuple(map(str, c)) for c in cl] for _, cl in ROUNDS])
    for s in SITES:
        site = json.loads((tmp_path / f"site{s}.json").read_text())
        assert "error" not in site, site
        assert [r["round"] for r in site["rounds"]] == [1, 2, 3, 4]
        assert [r["count"] for r in site["rounds"]] == [1, 2, 2, 4]  # max rounds count nothing new
        recv = json.loads((tmp_path / f"recv{s}.json").read_text())
        assert "error" not in recv and recv["count"] == [4], recv
        got = np.load(tmp_path / f"out{s}.npy").view(np.float32)
        assert np.array_equal(got.view(np.uint32), want[str(s)].view(np.uint32))
        err = np.abs(got.astype(np.float64) - exact[str(s)])
        assert (err <= bound[str(s)]).all()
        assert err.max() > 0  # block fixed point is not the float64 sum, and the test would see it
    total = sum(v.astype(np.float64) for v in vectors.values())
    assert np.allclose(want["1"], total, rtol=1e-5, atol=1e-6 * np.abs(total).max())
