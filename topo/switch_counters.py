"""What the INC program's counters say about a run: per switch, how many packets each verdict of its
state machine took (docs/protocol.md, "The switch's checks and state machine"), the int32 path's
`inc_stats` and the packed and wide path's `wide_stats` added together.

Why: a run's workers see only what came back. Where a repair went nowhere, the switches' verdicts say
why (a duplicate at an incomplete cell, a stale chunk, a bad checksum), and a run report that carries
them lets anyone tell a loss on a link from a verdict of a switch without rerunning it.
"""

from __future__ import annotations

from controller.p4rt import P4InfoIndex
from controller.service.counters import switch_stats
from topo.session import RunningWan

COUNTERS = ("inc_stats", "wide_stats")


def snapshot(running: RunningWan) -> dict[str, dict[str, int]]:
    """Per switch: packets so far under each reason, over both counters."""
    index = P4InfoIndex(running.pipeline.p4info)
    out: dict[str, dict[str, int]] = {}
    for name, conn in running.conns.items():
        totals: dict[str, int] = {}
        for counter in COUNTERS:
            for reason, (packets, _) in switch_stats(conn, index, timeout=10.0, counter=counter).items():
                totals[reason] = totals.get(reason, 0) + packets
        out[name] = totals
    return out


def since(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """The packets each switch counted in between, under the reasons that counted any."""
    out: dict[str, dict[str, int]] = {}
    for name, now in after.items():
        then = before.get(name, {})
        moved = {reason: n - then.get(reason, 0) for reason, n in now.items() if n != then.get(reason, 0)}
        out[name] = dict(sorted(moved.items()))
    return out
