"""Why INC's measured speed-up over the best host baseline falls short of what the bounds allow.

The goal (issue #13) reads a run against its bounds: INC's speed-up over the best host baseline should
be at least 0.9 times the ratio of their bounds. When it is not, the report names the cause with the
numbers that show it, from what the run measured (never from a model):
- CPU: every switch, worker and stage shares this machine's cores; the switches' and workers' CPU
  seconds over INC's run (from /proc and the workers' own process times) say how close INC came to
  using all of them, and the busiest switch how close one process came to a whole core;
- window: the delay-based window against the bandwidth-delay product it would need at the bound's rate;
- latency: the smoothed RTT the workers saw against the path's base RTT (queues in the switches).
Both algorithms' distance to their own bounds is reported beside them.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from edge.protocol import FRAME_LEN

if TYPE_CHECKING:  # only a type here: topo.allreduce_run imports this module
    from topo.allreduce_run import AlgoResult

GOAL = 0.9  # the speed-up should reach this fraction of the bound ratio


def bound_ratio(inc: AlgoResult, host: AlgoResult) -> float | None:
    """What INC's speed-up over `host` would be if both ran at their bounds."""
    return round(host.bound_s / inc.bound_s, 3) if inc.bound_s and host.bound_s else None


def analyse(inc: AlgoResult, host: AlgoResult, chunks: int, cores: int | None = None) -> dict[str, object]:
    """The numbers behind a shortfall, and the reasons they support (strongest first)."""
    cores = cores or os.cpu_count() or 1
    seconds = inc.seconds or 1e-9
    switch_cpu = inc.extra.get("switch_cpu_s", {})
    assert isinstance(switch_cpu, dict)
    sw_total = float(sum(switch_cpu.values()))
    workers = inc.stats.get("cpu_ms", 0) / 1000.0
    busiest = max(switch_cpu, key=lambda k: switch_cpu[k]) if switch_cpu else None
    cores_used = (sw_total + workers) / seconds
    out: dict[str, object] = {
        "inc_times_bound": round(inc.seconds / inc.bound_s, 2) if inc.bound_s else None,
        "host_times_bound": round(host.seconds / host.bound_s, 2) if host.bound_s else None,
        "cpu": {
            "switches_s": round(sw_total, 2),
            "workers_s": round(workers, 2),
            "cores_used": round(cores_used, 2),
            "cores": cores,
            "busiest_switch": busiest,
            "busiest_switch_core_share": round(switch_cpu[busiest] / seconds, 2) if busiest else None,
        },
    }
    machine = inc.extra.get("machine_cores_busy")
    if isinstance(machine, float | int):
        out["cpu"]["machine_cores_busy"] = machine  # type: ignore[index]
    reasons = []
    if isinstance(machine, float | int) and machine >= 0.85 * cores:
        reasons.append(
            f"CPU: the machine's {cores} cores were {machine / cores:.0%} busy while INC ran "
            f"(its own switches and workers: {cores_used:.2f} cores)"
        )
    elif cores_used >= 0.75 * cores:
        reasons.append(f"CPU: switches and workers used {cores_used:.2f} of {cores} cores during INC's run")
    elif busiest and switch_cpu[busiest] / seconds >= 0.75:
        reasons.append(f"CPU: switch {busiest} used {switch_cpu[busiest] / seconds:.2f} of a core")
    srtt, base = inc.stats.get("max_srtt_ms", 0.0), inc.stats.get("max_base_rtt_ms", 0.0)
    window = inc.stats.get("max_window", 0)
    if srtt and base:
        out["latency"] = {"max_srtt_ms": srtt, "max_base_rtt_ms": base}
        if srtt > 1.3 * base:
            reasons.append(
                f"latency: queues in the switches ({srtt:.0f} ms smoothed RTT on a {base:.0f} ms path)"
            )
    sent, resent = inc.stats.get("packets_sent", 0), inc.stats.get("retransmissions", 0)
    if sent:
        out["retransmitted_share"] = round(resent / sent, 3)
        if resent / sent >= 0.03:
            dup = inc.stats.get("duplicates", 0)
            reasons.append(
                f"window: {resent / sent:.1%} of INC's packets were retransmissions, {dup} of them spurious "
                "(the result arrived twice: a timeout that queueing, not loss, set off), each taking link time"
            )
    if window and inc.bound_s and base:
        per_chunk_s = (inc.bound_s - base / 1000.0) / max(1, chunks)  # the bound's pace, one chunk
        needed = (base / 1000.0) / per_chunk_s if per_chunk_s > 0 else 0
        out["window"] = {"max_window": window, "needed_at_bound": round(needed), "frame_bytes": FRAME_LEN}
        if window < 0.9 * needed:
            reasons.append(f"window: {window} chunks in flight where the bound's pace needs {needed:.0f}")
    out["reasons"] = reasons or ["none of CPU, window or latency stands out; see the numbers"]
    return out


def against_bound(inc: AlgoResult, tree_rtt_s: float, cores: int | None = None) -> dict[str, object]:
    """Where an INC run's time went beside its own bound, from what the run measured.

    The bound is the busiest link's bytes at its rate (`link_s`) plus the slowest tree RTT (`rtt_s`).
    Beside it: the CPU the switches and the workers used over the run, and `cpu_floor_s`, the least
    time the machine's cores needed for that work even if they did nothing else; the retransmissions,
    by what set them off (a later result showing the hole, a timeout of a chunk sent once, a tail-loss
    probe, a lost repair) and the copies sent beside them; and the RTTs the workers measured (a smoothed
    RTT well above the base is a queue)."""
    cores = cores or os.cpu_count() or 1
    stats = inc.stats
    switch_cpu = inc.extra.get("switch_cpu_s", {})
    assert isinstance(switch_cpu, dict)
    sw = float(sum(switch_cpu.values()))
    workers = stats.get("cpu_ms", 0) / 1000.0
    floor = (sw + workers) / cores
    resent = int(stats.get("retransmissions", 0))
    early, repeats = int(stats.get("early_retransmissions", 0)), int(stats.get("repeat_retransmissions", 0))
    probes = int(stats.get("tail_probes", 0))
    return {
        "seconds": round(inc.seconds, 3),
        "bound_s": round(inc.bound_s, 3),
        "times_bound": round(inc.seconds / inc.bound_s, 2) if inc.bound_s else None,
        "bound": {"link_s": round(max(0.0, inc.bound_s - tree_rtt_s), 3), "rtt_s": round(tree_rtt_s, 3)},
        "cpu": {
            "switches_s": round(sw, 2),
            "workers_s": round(workers, 2),
            # of the workers' CPU: their own code, and the kernel's (their sends and receives, and on a
            # veth the switch's receive of what they send, which runs in the sender's system call)
            "workers_user_s": round(stats.get("cpu_user_ms", 0) / 1000.0, 2),
            "workers_system_s": round(stats.get("cpu_sys_ms", 0) / 1000.0, 2),
            "cores": cores,
            "floor_s": round(floor, 3),
            "floor_times_bound": round(floor / inc.bound_s, 2) if inc.bound_s else None,
            "share_of_run": round(floor / inc.seconds, 2) if inc.seconds else None,
        },
        "retransmissions": {
            "total": resent,
            "by_order": early,
            "by_timeout": max(0, resent - early - repeats - probes),
            "tail_probes": probes,
            "lost_repairs": repeats,
            "share": round(resent / stats["packets_sent"], 3) if stats.get("packets_sent") else None,
            "copies": int(stats.get("repair_copies", 0)),  # beside them (docs/protocol.md, repair copies)
        },
        "rtt_ms": {"max_srtt": stats.get("max_srtt_ms", 0.0), "max_base": stats.get("max_base_rtt_ms", 0.0)},
    }
