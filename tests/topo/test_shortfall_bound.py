"""An INC run read against its own bound (topo.shortfall.against_bound): the bound's two parts, the CPU
floor of the work the run's switches and workers did, and the retransmissions by cause."""

from __future__ import annotations


def _run() -> object:
    from topo.allreduce_run import AlgoResult

    stats = {
        "cpu_ms": 600,
        "cpu_user_ms": 450,
        "cpu_sys_ms": 150,
        "repair_copies": 90,
        "packets_sent": 26_000,
        "retransmissions": 1_800,
        "early_retransmissions": 1_400,
        "repeat_retransmissions": 300,
        "tail_probes": 20,
        "max_srtt_ms": 430.0,
        "max_base_rtt_ms": 170.0,
    }
    inc = AlgoResult("inc-t1", 1.0, 262144, True, 0.0, bound_s=0.373, stats=stats)
    inc.extra = {"switch_cpu_s": {"TYO": 0.25, "NYC": 0.4, "LON": 0.25}}
    return inc


def test_a_run_is_read_against_its_bound_with_its_cpu_floor_and_retransmissions() -> None:
    from topo.shortfall import against_bound

    out = against_bound(_run(), tree_rtt_s=0.162, cores=2)  # type: ignore[arg-type]
    assert out["times_bound"] == 2.68
    assert out["bound"] == {"link_s": 0.211, "rtt_s": 0.162}
    cpu = out["cpu"]
    assert cpu["switches_s"] == 0.9 and cpu["workers_s"] == 0.6  # type: ignore[index]
    assert cpu["floor_s"] == 0.75 and cpu["floor_times_bound"] == 2.01  # 1.5 CPU-s on 2 cores  # type: ignore[index]
    assert cpu["share_of_run"] == 0.75  # type: ignore[index]
    assert cpu["workers_user_s"] == 0.45 and cpu["workers_system_s"] == 0.15  # type: ignore[index]
    assert out["retransmissions"] == {
        "total": 1800,
        "by_order": 1400,
        "by_timeout": 80,
        "tail_probes": 20,
        "lost_repairs": 300,
        "share": 0.069,
        "copies": 90,
    }
    assert out["rtt_ms"] == {"max_srtt": 430.0, "max_base": 170.0}


def test_the_allreduce_prints_the_run_beside_its_bound_and_its_cpu_floor() -> None:
    from topo.allreduce_run import _bound_line
    from topo.shortfall import against_bound

    line = _bound_line(against_bound(_run(), tree_rtt_s=0.162, cores=2))  # type: ignore[arg-type]
    assert line == (
        "1.000 s, 2.68x the bound of 0.373 s (busiest link 0.211 s + slowest tree RTT 0.162 s); "
        "CPU floor 0.750 s (switches 0.90 + workers 0.60 CPU-s over 2 cores: 2.01x the bound, 75 % of the run)"
    )
