"""Thrift port numbers as names for P4Runtime servers on this machine.

Why: users and course material reach a BMv2 switch with `simple_switch_CLI --thrift-port 9090`, the
port the switch was started with (`simple_switch_grpc --thrift-port 9090 ...`, as p4lang/tutorials'
run_exercise.py starts every switch). p4kit has no Thrift server: p4kit-cli speaks P4Runtime. So a
p4kit-switch started with --thrift-port N records here which P4Runtime address (and device id) answers
for N, and p4kit-cli --thrift-port N looks it up: the command the README prints works unchanged.

One small JSON file per thrift port in a run directory (P4KIT_RUN_DIR, else the system temp folder),
written atomically; an entry whose process has gone is ignored and replaced.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

SIMPLE_SWITCH_CLI_DEFAULT_PORT = 9090  # simple_switch_CLI's --thrift-port default


@dataclass(frozen=True)
class Registration:
    thrift_port: int
    grpc_addr: str  # as the switch listens (0.0.0.0:50051 too)
    device_id: int
    pid: int

    def connect_addr(self, thrift_ip: str | None = None) -> str:
        """Where a client connects: the listening address, a wildcard host made local, or the
        host the user named with --thrift-ip."""
        host, _, port = self.grpc_addr.rpartition(":")
        if thrift_ip:
            host = thrift_ip
        elif host in ("", "0.0.0.0", "[::]", "::", "*"):
            host = "127.0.0.1"
        return f"{host}:{port}"


def run_dir() -> Path:
    return Path(os.environ.get("P4KIT_RUN_DIR") or Path(tempfile.gettempdir()) / "p4kit-thrift-ports")


def _path(thrift_port: int) -> Path:
    return run_dir() / f"{thrift_port}.json"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True


def lookup(thrift_port: int) -> Registration | None:
    """The live switch registered for `thrift_port`, or None."""
    try:
        data = json.loads(_path(thrift_port).read_text())
        reg = Registration(
            int(data["thrift_port"]), str(data["grpc_addr"]), int(data["device_id"]), int(data["pid"])
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return reg if reg.thrift_port == thrift_port and _alive(reg.pid) else None


def register(thrift_port: int, grpc_addr: str, device_id: int) -> Registration | None:
    """Record this process as the switch behind `thrift_port`. None when a live process already holds
    it (BMv2 would fail to bind the port; p4kit-switch goes on and says so)."""
    current = lookup(thrift_port)
    if current is not None and current.pid != os.getpid():
        return None
    reg = Registration(thrift_port, grpc_addr, device_id, os.getpid())
    d = run_dir()
    d.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=f".{thrift_port}.")
    with os.fdopen(fd, "w") as f:
        json.dump(reg.__dict__, f)
    os.chmod(tmp, 0o644)
    os.replace(tmp, _path(thrift_port))
    return reg


def unregister(reg: Registration) -> None:
    """Remove the entry if it is still this registration's."""
    current = lookup(reg.thrift_port)
    if current is not None and current.pid == reg.pid:
        with contextlib.suppress(OSError):
            _path(reg.thrift_port).unlink()
