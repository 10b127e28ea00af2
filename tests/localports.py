"""Local TCP ports for tests that start servers (switches, the controller service): pick a free one,
wait until a started process listens on it."""

from __future__ import annotations

import random
import socket
import subprocess
import time

# Below Linux's ephemeral range (32768-60999 by default), so no outgoing connection of another test
# can be given one of these ports between our check and the server's bind.
_BLOCK_RANGE = (20000, 32000)


def free_port() -> int:
    """A port nothing listens on right now (the kernel's choice for an ephemeral bind)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port_block(n: int) -> int:
    """The first of `n` consecutive ports, none of which anything binds right now, for servers that
    listen on base + rank. Chosen outside the ephemeral range: the kernel's pick for one ephemeral
    bind says nothing about its neighbours, which client sockets of earlier tests may hold."""
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(_BLOCK_RANGE[0], _BLOCK_RANGE[1] - n)
        held: list[socket.socket] = []
        try:
            for p in range(base, base + n):
                s = socket.socket()
                held.append(s)
                s.bind(("0.0.0.0", p))
            return base
        except OSError:
            continue
        finally:
            for s in held:
                s.close()
    raise RuntimeError(f"no {n} consecutive free ports in {_BLOCK_RANGE}")


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
