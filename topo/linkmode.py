"""How WAN links get their delay, rate and loss: the kernel's netem where it exists, else the switch's
own egress emulation (`p4kit-switch --link`). Both shape each direction at the sending end."""

from __future__ import annotations

import subprocess
import uuid
from functools import cache

MODES = ("auto", "netem", "switch")


@cache
def netem_available() -> bool:
    """True when the kernel accepts a netem qdisc (tried on a throwaway dummy interface; needs root)."""
    name = f"tnq{uuid.uuid4().hex[:8]}"
    if subprocess.run(["ip", "link", "add", name, "type", "dummy"], capture_output=True).returncode != 0:
        return False
    try:
        res = subprocess.run(
            ["tc", "qdisc", "add", "dev", name, "root", "netem", "delay", "1ms"], capture_output=True
        )
        return res.returncode == 0
    finally:
        subprocess.run(["ip", "link", "del", name], capture_output=True)


def resolve(mode: str) -> str:
    """The mode to use: 'netem' or 'switch'. 'auto' picks netem when the kernel has it."""
    if mode not in MODES:
        raise ValueError(f"link mode must be one of {', '.join(MODES)}, got {mode!r}")
    if mode == "auto":
        return "netem" if netem_available() else "switch"
    if mode == "netem" and not netem_available():
        raise RuntimeError("this kernel has no netem qdisc (sch_netem); use --link-mode switch")
    return mode
