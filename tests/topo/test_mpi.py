"""The MPI baseline's pieces that run without a network: the remote-shell agent (run for real by the
shell, with a stand-in for mnexec that prints what it was asked to do), mpirun's command line, and the
naming of the algorithm from the bytes each rank sent."""

from __future__ import annotations

import subprocess
from pathlib import Path

from edge.mpi_launch import agent_script, mpirun_command
from topo.mpi_run import classify


def _agent(tmp_path: Path) -> Path:
    fake = tmp_path / "mnexec"
    fake.write_text('#!/bin/sh\nprintf "%s|" "$@"\n')
    fake.chmod(0o755)
    agent = tmp_path / "agent.sh"
    agent.write_text(agent_script({"10.0.1.1": 101, "10.0.2.1": 202}, tmp_path / "d", str(fake)))
    agent.chmod(0o755)
    return agent


def test_the_agent_runs_the_command_in_the_named_hosts_namespace(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    # as OpenMPI calls an rsh agent: options (ignored), the node, then the daemon's words
    out = subprocess.run(
        [str(agent), "-x", "10.0.2.1", "orted", "-mca", "ess", "env"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    # each daemon in a session directory of its own (the hosts share /tmp and the hostname)
    daemon_dir = tmp_path / "d" / "10.0.2.1"
    assert out.stdout == f"-a|202|env|OMPI_MCA_orte_tmpdir_base={daemon_dir}|/bin/sh|-c|orted -mca ess env|"
    assert daemon_dir.is_dir()


def test_the_agent_refuses_a_host_it_does_not_know(tmp_path: Path) -> None:
    out = subprocess.run([str(_agent(tmp_path)), "10.0.9.9", "orted"], capture_output=True, text=True)
    assert out.returncode == 255
    assert "no emulated host 10.0.9.9" in out.stderr


def test_mpirun_gets_one_slot_per_worker_and_the_pinned_transport(tmp_path: Path) -> None:
    cmd = mpirun_command("mpirun", tmp_path / "a.sh", ["10.0.1.1", "10.0.2.1"], ["python", "x"], {"k": "v"})
    assert cmd[:6] == ["mpirun", "--allow-run-as-root", "-np", "2", "--host", "10.0.1.1:1,10.0.2.1:1"]
    pairs = {cmd[i + 1]: cmd[i + 2] for i, word in enumerate(cmd) if word == "--mca"}
    assert pairs["plm_rsh_agent"] == str(tmp_path / "a.sh")
    assert pairs["btl"] == "self,tcp" and pairs["btl_tcp_if_include"] == "10.0.0.0/8"
    assert pairs["k"] == "v"
    assert cmd[cmd.index("--bind-to") + 1] == "none"
    assert cmd[-2:] == ["python", "x"]


def test_a_ring_is_named_from_its_traffic() -> None:
    v = 300_000
    ring = [{1: 4 * v // 3 + 500}, {2: 4 * v // 3 + 500}, {0: 4 * v // 3 + 500}]  # 2(n-1)V/n each
    assert classify(ring, v) == "ring"
    ring[1][0] = 900  # the daemons' few bytes to mpirun in rank 0's host do not make a peer
    assert classify(ring, v) == "ring"
    assert classify([{1: 10}, {2: 10}, {0: 10}], v) == "other"  # too few bytes for a ring allreduce
    assert classify([{1: v, 2: v}, {0: v, 2: v}, {0: v, 1: v}], v) == "all-pairs"
    assert classify([{1: v}, {0: v}, {0: v}], v) == "other"
