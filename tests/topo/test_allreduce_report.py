"""What `tributary allreduce --repeat` calls bit-identical."""

from __future__ import annotations


def test_bit_identical_means_every_worker_of_every_run() -> None:
    from topo.allreduce_run import AlgoResult
    from topo.commands.allreduce import _identical

    def run(*digests: str) -> AlgoResult:
        return AlgoResult("inc", 1.0, 10, True, 0.0, digests=list(digests))

    assert _identical([run("a", "a"), run("a", "a")])
    assert not _identical([run("a", "a"), run("a", "b")])
    assert not _identical([run("a", "a"), run("a")])  # a worker without a result


def _inc(**stats: float) -> object:
    from topo.allreduce_run import AlgoResult

    res = AlgoResult("inc", 2.0, 262144, True, 0.0, bound_s=1.0, stats=dict(stats))
    res.extra = {"switch_cpu_s": {"TYO": 0.5, "NYC": 1.7}, "machine_cores_busy": 1.0}
    return res


def test_a_shortfall_names_its_causes_with_their_numbers() -> None:
    from topo.allreduce_run import AlgoResult
    from topo.shortfall import analyse, bound_ratio

    host = AlgoResult("hierarchical", 1.5, 262144, True, 0.0, bound_s=1.2)
    inc = _inc(
        cpu_ms=300,
        max_srtt_ms=260.0,
        max_base_rtt_ms=170.0,
        max_window=100,
        packets_sent=1000,
        retransmissions=80,
        duplicates=70,
    )
    assert bound_ratio(inc, host) == 1.2  # type: ignore[arg-type]
    out = analyse(inc, host, chunks=4096, cores=2)  # type: ignore[arg-type]
    assert out["inc_times_bound"] == 2.0 and out["host_times_bound"] == 1.25
    cpu = out["cpu"]
    assert cpu["busiest_switch"] == "NYC" and cpu["busiest_switch_core_share"] == 0.85  # type: ignore[index]
    assert cpu["cores_used"] == 1.25  # (0.5 + 1.7 + 0.3) / 2 s  # type: ignore[index]
    reasons = " | ".join(out["reasons"])  # type: ignore[arg-type]
    assert "switch NYC used 0.85 of a core" in reasons
    assert "260 ms smoothed RTT on a 170 ms path" in reasons
    assert "8.0% of INC's packets were retransmissions, 70 of them spurious" in reasons
    # the bound's pace: 4,096 chunks in 1.0 - 0.17 s, a 170 ms path: about 839 chunks in flight needed
    assert out["window"]["needed_at_bound"] == 839 and "window: 100 chunks in flight" in reasons  # type: ignore[index]


def test_a_busy_machine_is_named_before_the_runs_own_cpu() -> None:
    from topo.allreduce_run import AlgoResult
    from topo.shortfall import analyse

    inc = _inc(cpu_ms=100)
    inc.extra["machine_cores_busy"] = 1.9  # type: ignore[attr-defined]
    out = analyse(inc, AlgoResult("ring", 1.0, 10, True, 0.0, bound_s=0.5), chunks=10, cores=2)  # type: ignore[arg-type]
    assert out["reasons"][0].startswith("CPU: the machine's 2 cores were 95% busy")  # type: ignore[index]


def test_the_results_table_is_the_runs_own_numbers() -> None:
    from topo.baseline_table import table

    run = {
        "inc": {"seconds": 3.1658, "bound_s": 2.8078, "times_bound": 1.13, "exact": True},
        "mpi": {
            "seconds": 55.3,
            "bound_s": 3.96,
            "times_bound": 13.96,
            "exact": True,
            "algorithm": "other",
            "bound_of": "best host bound (hierarchical)",
            "traffic_bound_s": 6.9259,
        },
        "hierarchical": {
            "seconds": 4.515,
            "bound_s": 3.9643,
            "times_bound": 1.14,
            "exact": False,
            "stats": {"max_warmup_s": 4.6957},
        },
        "best_host": "hierarchical",
        "ratio_vs_best_host": 1.426,
        "bound_ratio_vs_best_host": 1.412,
        "goal_met": True,
    }
    text = table(run)
    assert "| INC (Core-INC tree) | 3.166 | 2.808 | 1.13 | yes |" in text
    assert "| hierarchical | 4.515 | 3.964 | 1.14 | NO | untimed warm-up 4.7 s |" in text
    assert "its bytes alone need 6.926 s" in text
    assert text.index("INC") < text.index("hierarchical") < text.index("MPI")
    assert "(hierarchical): 1.426, their bounds' ratio 1.412; goal (at least 0.9 of it): met." in text


def test_switch_verdicts_are_the_counts_in_between_and_only_those_that_moved() -> None:
    from topo.switch_counters import since

    before = {"TYO": {"completed": 10, "stale": 2}, "NYC": {"completed": 5}}
    after = {"TYO": {"completed": 74, "stale": 2, "resent": 3}, "NYC": {"completed": 69, "duplicate": 7}}
    assert since(before, after) == {
        "TYO": {"completed": 64, "resent": 3},
        "NYC": {"completed": 64, "duplicate": 7},
    }
    assert since({}, {"LON": {}}) == {"LON": {}}  # a switch that counted nothing
