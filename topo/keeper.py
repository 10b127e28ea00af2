"""The WAN keeper's watch over its switches and its controller: a switch process that dies (a crash,
kill -9) is started again on the same ports and interfaces, within a second or two; so is a controller
that dies (it reconciles from its database on start, so tenants, jobs and entries are kept).

Who gives a restarted switch its state back: the controller, when one runs (it notices the fresh switch,
pushes the pipeline, the routes and every job's entries, cells zeroed; its jobs read `degraded` until
then). With --no-controller the keeper pushes the pipeline and the routes itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from controller.p4rt import P4InfoIndex, P4RuntimeError, SwitchConnection
from controller.provision import Pipeline, route_entities
from controller.routes import plan_routes
from topo.options import log
from topo.switch_node import P4RuntimeSwitch

CHECK_INTERVAL_S = 1.0
STABLE_S = 10.0  # a switch that ran this long before dying is restarted without delay
MAX_BACKOFF_S = 30.0
KEEPER_ELECTION_ID = (0, 2)  # above `tributary run`'s provisioning connection, below the controller's


def provision_one(running: object, name: str) -> int:
    """Pipeline and routes for one (restarted) switch; returns the entries written."""
    fabric = running.network.fabric  # type: ignore[attr-defined]
    pipeline: Pipeline = running.pipeline  # type: ignore[attr-defined]
    sw = fabric.switch(name)
    entities = route_entities(P4InfoIndex(pipeline.p4info), plan_routes(fabric)).get(name, [])
    with SwitchConnection(name, sw.grpc_addr, sw.device_id, KEEPER_ELECTION_ID) as conn:
        conn.set_pipeline(pipeline.p4info, pipeline.device_config)
        conn.insert(entities)
    return len(entities)


@dataclass
class Backoff:
    """A switch that dies again soon after a restart waits longer each time (1, 2, 4 ... 30 s), so a
    switch that cannot run (a bad binary, a port taken) does not spin the keeper; one that ran for a
    while is restarted at once."""

    delay_s: dict[str, float] = field(default_factory=dict)
    not_before: dict[str, float] = field(default_factory=dict)
    last_start: dict[str, float] = field(default_factory=dict)
    died: dict[str, float] = field(default_factory=dict)  # when it was first seen dead since its start

    def may_start(self, name: str, now: float) -> bool:
        """Called for a switch seen dead at `now`: may it be started again already?"""
        self.died.setdefault(name, now)
        return now >= self.not_before.get(name, 0.0)

    def started(self, name: str, now: float) -> None:
        ran = self.died.pop(name, now) - self.last_start.get(name, -1e9)
        delay = min(MAX_BACKOFF_S, 2 * self.delay_s.get(name, 0.5)) if ran < STABLE_S else 0.0
        self.delay_s[name] = delay or 0.5
        self.not_before[name] = now + delay
        self.last_start[name] = now


def restart_dead_switches(running: object, provision: bool, backoff: Backoff | None = None) -> list[str]:
    """One pass: start every switch whose process has ended; returns their names."""
    backoff = backoff or Backoff()
    net = running.network.net  # type: ignore[attr-defined]
    restarted = []
    for sw in net.switches if net is not None else []:
        if not isinstance(sw, P4RuntimeSwitch):
            continue
        status = sw.exited()
        if status is None or not backoff.may_start(sw.name, time.monotonic()):
            continue
        log(f"switch {sw.name} exited (status {status}): starting it again")
        backoff.started(sw.name, time.monotonic())
        try:
            sw.start([])
            if provision:
                n = provision_one(running, sw.name)
                log(f"switch {sw.name}: pipeline and {n} routes pushed")
        except (RuntimeError, OSError, P4RuntimeError) as exc:
            log(f"switch {sw.name} could not be restarted: {exc} (trying again)")
            continue
        restarted.append(sw.name)
    return restarted


def keep_running(
    running: object,
    provision: bool,
    state_path: Path | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Until SIGTERM/SIGINT (running_wan turns SIGTERM into KeyboardInterrupt): restart dead switches,
    and the controller of `state_path` should it die."""
    from topo import detach

    backoff = Backoff()
    while True:
        sleep(CHECK_INTERVAL_S)
        restart_dead_switches(running, provision, backoff)
        if state_path is not None:
            try:
                detach.revive_controller(state_path)
            except detach.DetachError as exc:
                log(f"the controller could not be restarted: {exc} (trying again)")
