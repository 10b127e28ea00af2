"""Local TCP ports for tests that start servers (switches, the controller service): pick a free one,
wait until a started process listens on it."""

from __future__ import annotations

import socket
import subprocess
import time


def free_port() -> int:
    """A port nothing listens on right now (the kernel's choice for an ephemeral bind)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(
    port: int, proc: subprocess.Popen, timeout: float = 20.0, what: str = "the process"
) -> None:
    """Return once something accepts connections on 127.0.0.1:`port`; raise if `proc` exits first
    (with its stderr when it was captured) or nothing listens within `timeout` seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr is not None else ""
            raise RuntimeError(f"{what} exited with {proc.returncode}: {err}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"{what} does not listen on port {port} after {timeout} s")
