"""What the demo scripts share: bringing a detached WAN up around a run (`--start`), and a throwaway
tenant on its controller for the run's jobs, removed afterwards."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from topo import detach

ROOT = Path(__file__).resolve().parent.parent


def around_wan(start: bool, sites: str | None, say: Callable[[str], None], body: Callable[[], int]) -> int:
    """`body()`, with a one-worker-per-site WAN brought up before and stopped after when `start`."""
    if start:
        cmd = [sys.executable, "-m", "topo.cli", "run", "--detach", "--workers-per-site", "1"]
        cmd += ["--sites", sites] if sites else []
        say("bringing the WAN up: " + " ".join(cmd[2:]))
        if subprocess.run(cmd, cwd=ROOT).returncode != 0:
            return 1
    try:
        return body()
    finally:
        if start:
            subprocess.run([sys.executable, "-m", "topo.cli", "stop"], cwd=ROOT)


@dataclass
class DemoSession:
    state: dict
    topology: dict  # GET /topology
    client: httpx.Client  # authenticated as the run's own tenant

    @property
    def sites(self) -> list[str]:
        return [s["name"] for s in self.topology["sites"]]


@contextmanager
def demo_tenant(state_file: Path, prefix: str) -> Iterator[DemoSession]:
    """A tenant of its own on the running WAN's controller (the admin token from the run's token
    file), deleted with its jobs when the run ends."""
    state = detach.read_state(state_file)
    url = state["controller"]["url"]
    admin_token = Path(state["admin_token_file"]).read_text().strip()
    admin = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {admin_token}"}, timeout=300)
    name = f"{prefix}-{int(time.time()) % 100000}"
    token = admin.post("/tenants", json={"name": name}).json()["token"]
    me = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=300)
    try:
        yield DemoSession(state, admin.get("/topology").json(), me)
    finally:
        admin.delete(f"/tenants/{name}")
