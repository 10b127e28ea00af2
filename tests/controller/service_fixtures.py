"""Real p4kit-switch processes (no Mininet, no data ports) and a real controller service for the tests.

Each switch runs `p4kit-switch --no-p4 -- --grpc-server-addr 127.0.0.1:<free port>`, gets the compiled
p4src/inc.p4 and its routes over P4Runtime as `tributary run` would give them, and the service (or the
JobManager directly) is pointed at them through a fabric whose addresses are the test ports.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from controller.provision import Pipeline, connect_all, provision
from controller.service.topology import Topology
from tests.localports import free_port, wait_listening
from topo.addressing import fabric
from topo.wan import default_wan

ROOT = Path(__file__).resolve().parents[2]
SWITCH = [sys.executable, "-m", "p4kit.switch.cli"]
ADMIN_TOKEN = "admin-token-for-tests-0123456789"


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@dataclass
class Switches:
    """Running switches and the topology that points at them."""

    topology: Topology
    pipeline: Pipeline
    dir: Path
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    def start(self, name: str, provisioned: bool = True) -> None:
        sw = self.topology.fabric.switch(name)
        port = int(sw.grpc_addr.rsplit(":", 1)[1])
        log = (self.dir / f"{name}.log").open("ab")
        cmd = [*SWITCH, "--device-id", str(sw.device_id), "--no-p4", "--", "--grpc-server-addr", sw.grpc_addr]
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs[name] = proc
        wait_listening(port, proc, timeout=60, what="p4kit-switch")

    def kill(self, name: str) -> None:
        proc = self.procs.pop(name)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def provision(self) -> None:
        conns = connect_all(self.topology.fabric)
        try:
            provision(self.topology.fabric, conns, self.pipeline)
        finally:
            for c in conns.values():
                c.close()

    def close(self) -> None:
        for proc in self.procs.values():
            stop(proc)
        self.procs.clear()

    def state_file(self) -> Path:
        path = self.dir / "state.json"
        build = self.dir / "build"
        path.write_text(
            json.dumps(
                {
                    "topology": self.topology.to_json(),
                    "pipeline": {
                        "p4info": str(build / "inc.p4info.txtpb"),
                        "device_config": str(build / "inc.json"),
                    },
                }
            )
        )
        return path


def test_topology(sites: str = "TYO,NYC,LON", workers_per_site: int = 2) -> Topology:
    wan = default_wan(sites, workers_per_site=workers_per_site)
    fab = fabric(wan)
    for sw in fab.switches:
        sw.grpc_addr = f"127.0.0.1:{free_port()}"
    topo = Topology.from_fabric(fab, rate_mbit=50.0)
    topo.regions = {s.name: s.continent for s in wan.sites}
    return topo


@contextmanager
def running_switches(tmp: Path, pipeline: Pipeline, sites: str = "TYO,NYC,LON") -> Iterator[Switches]:
    sw = Switches(test_topology(sites), pipeline, tmp)
    try:
        for name in sw.topology.sites:
            sw.start(name)
        sw.provision()
        yield sw
    finally:
        sw.close()


@dataclass
class Service:
    url: str
    proc: subprocess.Popen
    log: Path

    def client(self, token: str | None = ADMIN_TOKEN) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60.0)


def start_service(
    switches: Switches, db: Path, port: int | None = None, extra: tuple[str, ...] = ()
) -> Service:
    port = port or free_port()
    log = switches.dir / f"service-{port}.log"
    env = {**os.environ, "TRIBUTARY_ADMIN_TOKEN": ADMIN_TOKEN, "PYTHONPATH": str(ROOT)}
    cmd = [
        sys.executable,
        "-m",
        "controller.service",
        "--state",
        str(switches.state_file()),
        "--db",
        str(db),
        "--listen",
        f"127.0.0.1:{port}",
        "--monitor-interval",
        "1",
        *extra,
    ]
    proc = subprocess.Popen(
        cmd, stdout=log.open("ab"), stderr=subprocess.STDOUT, env=env, cwd=ROOT, start_new_session=True
    )
    try:
        wait_listening(port, proc, timeout=90, what="the controller service")
    except Exception:
        stop(proc)
        raise RuntimeError(f"the service did not start:\n{log.read_text()[-3000:]}") from None
    return Service(f"http://127.0.0.1:{port}", proc, log)


@contextmanager
def switches_and_service(tmp: Path, extra: tuple[str, ...] = ()) -> Iterator[tuple[Switches, Service]]:
    """Real switches running the compiled switch program and a real service process on them, with its
    SQLite file in `tmp`; both stopped on exit."""
    from topo.pipeline import build_pipeline

    with running_switches(tmp, build_pipeline(tmp / "build")) as sw:
        svc = start_service(sw, tmp / "controller.db", extra=extra)
        try:
            yield sw, svc
        finally:
            stop(svc.proc)
