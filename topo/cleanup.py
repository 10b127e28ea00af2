"""Repair a machine left dirty by a crashed run: switch processes, Mininet host shells and the
interfaces they leave behind. Safe to run any time; touches only what Tributary creates."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from pathlib import Path

# Interfaces Tributary creates: <SITE>-eth<N> and <SITE>w<k>-eth0 / <SITE>e-eth0 (sites are upper case).
OWN_INTERFACE = re.compile(r"^[A-Z][A-Z0-9]*(w\d+|e)?-eth\d+$")
OWN_PROCESS = re.compile(
    r"(p4kit-switch|simple_switch_grpc)\b.*--device-id|mininet:[A-Z][A-Z0-9]*(w\d+|e)?\b"
)


def _processes() -> list[tuple[int, str]]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if cmd:
            out.append((int(entry.name), cmd))
    return out


def leftover_processes() -> list[tuple[int, str]]:
    return [(pid, cmd) for pid, cmd in _processes() if OWN_PROCESS.search(cmd)]


def leftover_interfaces() -> list[str]:
    res = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True)
    names = []
    for line in res.stdout.splitlines():
        parts = line.split(":", 2)
        if len(parts) >= 2:
            name = parts[1].strip().split("@", 1)[0]
            if OWN_INTERFACE.match(name):
                names.append(name)
    return names


def clean(verbose: bool = True) -> tuple[int, int]:
    """Kill leftover processes and delete leftover interfaces; returns (processes, interfaces) removed."""
    procs = leftover_processes()
    for pid, cmd in procs:
        if verbose:
            print(f"killing {pid}: {cmd[:100]}")
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    # a killed host shell takes its namespace, and the veths into it, along when it is gone
    deadline = time.monotonic() + 3.0
    while any(Path(f"/proc/{pid}").exists() for pid, _ in procs) and time.monotonic() < deadline:
        time.sleep(0.05)
    intfs = leftover_interfaces()
    for name in intfs:
        if verbose:
            print(f"deleting interface {name}")
        subprocess.run(["ip", "link", "del", name], capture_output=True)
    return len(procs), len(intfs)
