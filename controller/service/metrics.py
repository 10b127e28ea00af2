"""`GET /metrics`: the Prometheus text exposition (version 0.0.4), scoped to the caller.

The admin gets everything: tenants, jobs by state, every switch's entries and INC counters, every job's
traffic labelled with its owner. A tenant gets whether each switch is up and its own jobs only: no
tenant count, no switch-wide counter (it sums other tenants' traffic), no other owner's name.
"""

from __future__ import annotations

from controller.service.auth import Principal
from controller.service.counters import STAT_NAMES
from controller.service.plans import Plan
from controller.service.state import ServiceState
from controller.service.views import job_counters, shown_state, switches_view

Sample = tuple[dict[str, str | int], float]


class _Text:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def metric(self, name: str, kind: str, help_: str, samples: list[Sample]) -> None:
        self.lines.append(f"# HELP {name} {help_}")
        self.lines.append(f"# TYPE {name} {kind}")
        for labels, value in samples:
            lab = ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items())
            self.lines.append(f"{name}{{{lab}}} {value:g}" if lab else f"{name} {value:g}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def metrics_text(state: ServiceState, principal: Principal, reconciles: int) -> str:
    out = _Text()
    store = state.store
    jobs = store.jobs(None if principal.is_admin else principal.tenant)
    plans = {j.id: Plan.from_json(j.plan) for j in jobs}
    states: dict[str, int] = {}
    for j in jobs:
        shown, _ = shown_state(state, j, plans[j.id])
        states[shown] = states.get(shown, 0) + 1
    if principal.is_admin:
        out.metric("tributary_tenants", "gauge", "Tenants.", [({}, len(store.tenants()))])
    out.metric(
        "tributary_jobs",
        "gauge",
        "Jobs by state (degraded: a switch of the job is down or not yet repaired).",
        [({"state": s}, n) for s, n in sorted(states.items())] or [({"state": "active"}, 0)],
    )
    up: list[Sample] = []
    entries: list[Sample] = []
    agg: list[Sample] = []
    stats: list[Sample] = []
    for row in switches_view(state, principal):
        sw = {"switch": row["name"]}
        up.append((sw, 1 if row["reachable"] and row["pipeline_loaded"] else 0))
        if "entries" in row:
            entries.append((sw, row["entries"]))
        st = row.get("inc_stats", {})
        if st:
            agg.append((sw, st.get("absorbed", 0) + st.get("completed", 0)))
            stats.extend(({**sw, "reason": reason}, st.get(reason, 0)) for reason in STAT_NAMES)
    out.metric("tributary_switch_up", "gauge", "Switch reachable with the pipeline loaded.", up)
    if principal.is_admin:
        out.metric(
            "tributary_switch_entries", "gauge", "Table entries and multicast groups on the switch.", entries
        )
        out.metric(
            "tributary_switch_aggregated_packets_total",
            "counter",
            "INC contributions the switch added (inc_stats absorbed + completed).",
            agg,
        )
        out.metric(
            "tributary_switch_inc_packets_total", "counter", "INC packets by outcome (inc_stats).", stats
        )
    pk: list[Sample] = []
    rc: list[Sample] = []
    for j in jobs:
        if j.state != "active":
            continue
        c = job_counters(state, plans[j.id])
        labels: dict[str, str | int] = {"job": j.id, "tenant": j.tenant}
        pk.append((labels, c["packets"]))
        rc.append((labels, c["rounds_completed"]))
    out.metric("tributary_job_packets_total", "counter", "Contributions the job's switches aggregated.", pk)
    out.metric(
        "tributary_job_rounds_completed", "gauge", "Schedule rounds whose every clique produced a result.", rc
    )
    if principal.is_admin:
        out.metric("tributary_reconciles_total", "counter", "Reconcile passes.", [({}, reconciles)])
    return out.text()


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
