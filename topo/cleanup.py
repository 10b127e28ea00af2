"""Repair a machine left dirty by a crashed run: the switch processes, Mininet host shells, controller
and interfaces that the run recorded as its own (topo/ledger.py), and nothing else.

The name patterns below only *look*: tests and diagnostics use them to see whether anything that looks
like a run is around. `clean` never acts on a name alone, since another program (a user's own BMv2 with
`--device-id`, a lab's `S1-eth1`) may carry the same kind of name.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from topo.ledger import Cleaned
from topo.ledger import clean as clean_recorded

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
    """Processes whose command line looks like a run's (for looking only)."""
    return [(pid, cmd) for pid, cmd in _processes() if OWN_PROCESS.search(cmd)]


def leftover_interfaces() -> list[str]:
    """Interfaces named like a run's (for looking only)."""
    res = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True)
    names = []
    for line in res.stdout.splitlines():
        parts = line.split(":", 2)
        if len(parts) >= 2:
            name = parts[1].strip().split("@", 1)[0]
            if OWN_INTERFACE.match(name):
                names.append(name)
    return names


def clean(verbose: bool = True, owner: int | None = None) -> Cleaned:
    """Remove what crashed runs recorded (all whose owner is dead, or only `owner`'s run)."""
    return clean_recorded(verbose=verbose, owner=owner)
