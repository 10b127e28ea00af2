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
from pathlib import Path

from controller.p4rt import P4InfoIndex, P4RuntimeError, SwitchConnection
from controller.provision import Pipeline, route_entities
from controller.routes import plan_routes
from topo.options import log
from topo.switch_node import P4RuntimeSwitch

CHECK_INTERVAL_S = 1.0
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


def restart_dead_switches(running: object, provision: bool) -> list[str]:
    """One pass: start every switch whose process has ended; returns their names."""
    net = running.network.net  # type: ignore[attr-defined]
    restarted = []
    for sw in net.switches if net is not None else []:
        if not isinstance(sw, P4RuntimeSwitch):
            continue
        status = sw.exited()
        if status is None:
            continue
        log(f"switch {sw.name} exited (status {status}): starting it again")
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

    while True:
        sleep(CHECK_INTERVAL_S)
        restart_dead_switches(running, provision)
        if state_path is not None:
            try:
                detach.revive_controller(state_path)
            except detach.DetachError as exc:
                log(f"the controller could not be restarted: {exc} (trying again)")
