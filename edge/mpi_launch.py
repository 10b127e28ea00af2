"""Launching OpenMPI's `mpirun` across the emulated WAN's hosts (each a Mininet network namespace).

Why an agent script: mpirun starts its daemon (orted) on every other node through a remote shell
(`--mca plm_rsh_agent`, ssh by default). The hosts here are namespaces on one machine, so the agent
maps the node name mpirun gives it (a worker's IP address) to the PID of that host's shell and runs the
daemon's command line inside that host's namespaces with Mininet's `mnexec -a PID`. mpirun itself runs
in rank 0's host, so every daemon and every rank talks to it, and to each other, over the emulated WAN.

The library keeps its own algorithm selection (coll/tuned's fixed decision rules); only the transport is
pinned: the TCP BTL (plus self) on the workers' 10.0.0.0/8 addresses, no process binding (the ranks of
all hosts share this machine's cores, and each daemon would otherwise pin its rank to the same first
core), yielding the CPU while waiting (as OpenMPI does when it knows a node is oversubscribed), and
root allowed (Mininet runs as root).
"""

from __future__ import annotations

import shlex
import shutil
import stat
from pathlib import Path

WAN_SUBNET = "10.0.0.0/8"


def mpirun_path() -> str | None:
    """OpenMPI's mpirun, or None when it is not installed (Debian: openmpi-bin)."""
    return shutil.which("mpirun")


def agent_script(pids: dict[str, int], tmp_base: Path, mnexec: str = "mnexec") -> str:
    """A POSIX shell script usable as plm_rsh_agent: `agent [-opts] HOST COMMAND...`.

    Each daemon gets a session directory of its own under `tmp_base`: all the emulated hosts share
    this machine's hostname and /tmp, and daemons of one job in the same session directory write the
    same shared-memory topology file at once (orted then crashes in hwloc_shmem_topology_write)."""
    cases = "\n".join(f"  {shlex.quote(ip)}) pid={pid} ;;" for ip, pid in sorted(pids.items()))
    return f"""#!/bin/sh
# OpenMPI remote-shell agent for the emulated WAN: run COMMAND in the namespaces of HOST's Mininet shell.
while [ $# -gt 0 ]; do
  case "$1" in -*) shift ;; *) break ;; esac  # ssh-style options: nothing to do here
done
host="$1"
shift
case "$host" in
{cases}
  *) echo "tributary mpi agent: no emulated host $host" >&2; exit 255 ;;
esac
dir={shlex.quote(str(tmp_base))}/"$host"
mkdir -p "$dir" || exit 255
exec {shlex.quote(mnexec)} -a "$pid" env OMPI_MCA_orte_tmpdir_base="$dir" /bin/sh -c "$*"
"""


def write_agent(path: Path, pids: dict[str, int]) -> Path:
    path.write_text(agent_script(pids, path.parent / "daemons", shutil.which("mnexec") or "mnexec"))
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def mpirun_command(
    mpirun: str, agent: Path, ips: list[str], program: list[str], extra_mca: dict[str, str] | None = None
) -> list[str]:
    """mpirun with one slot per worker, rank r on `ips[r]`, and the transport pinned as the module says."""
    mca = {
        "plm_rsh_agent": str(agent),
        "btl": "self,tcp",
        "btl_tcp_if_include": WAN_SUBNET,
        "oob_tcp_if_include": WAN_SUBNET,
        "pml": "ob1",
        "btl_base_warn_component_unused": "0",
        # every rank shares this machine's cores with the others and with the switches, but each daemon
        # sees a node of its own and would let its rank spin on the CPU while it waits; a real cluster
        # gives each rank its own node. Yielding while idle is what OpenMPI itself does oversubscribed.
        "mpi_yield_when_idle": "1",
    }
    mca.update(extra_mca or {})
    cmd = [mpirun, "--allow-run-as-root", "-np", str(len(ips)), "--host", ",".join(f"{ip}:1" for ip in ips)]
    cmd += ["--map-by", "slot", "--bind-to", "none", "--tag-output"]
    for key, value in mca.items():
        cmd += ["--mca", key, value]
    return cmd + program
