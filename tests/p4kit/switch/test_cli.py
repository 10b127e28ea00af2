"""The p4kit-switch command line: simple_switch_grpc's options, errors, readiness and the trace log."""

from __future__ import annotations

import subprocess
import sys

import pytest

from p4kit.switch.cli_args import DEFAULT_GRPC_ADDR, UsageError, parse_args
from p4kit.switch.linkemu import LinkParams

from ._p4rt_client import switch_process
from ._switch_programs import write_program
from ._switch_testnet import have_root_net, hosts_net
from .test_ports import frame, send_from


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "p4kit.switch.cli", *args], capture_output=True, text=True, timeout=30
    )


def test_simple_switch_grpc_command_line() -> None:
    opts = parse_args(
        [
            "-i",
            "1@s1-eth1",
            "-i",
            "2@s1-eth2",
            "--pcap",
            "/tmp",
            "--device-id",
            "3",
            "build/x.json",
            "--log-console",
            "--thrift-port",
            "9090",
            "--link",
            "2:delay=40,rate=10,loss=1",
            "--",
            "--grpc-server-addr",
            "0.0.0.0:50051",
            "--cpu-port",
            "255",
        ]
    )
    assert opts.interfaces == {1: "s1-eth1", 2: "s1-eth2"}
    assert opts.json_path == "build/x.json" and opts.device_id == 3 and opts.pcap_dir == "/tmp"
    assert opts.log_console and opts.thrift_port == 9090
    assert opts.grpc_addr == "0.0.0.0:50051" and opts.cpu_port == 255
    assert opts.links == {2: LinkParams(delay_ms=40, rate_mbit=10, loss_pct=1)}


def test_defaults_bind_loopback_only() -> None:
    opts = parse_args(["--no-p4"])
    assert opts.grpc_addr == DEFAULT_GRPC_ADDR == "127.0.0.1:9559"
    assert opts.drop_port == 511 and opts.cpu_port is None and opts.pcap_dir is None


@pytest.mark.parametrize(
    "argv",
    [
        [],  # neither JSON nor --no-p4
        ["--no-p4", "-i", "eth0"],
        ["--no-p4", "-i", "1@a", "-i", "1@b"],
        ["--no-p4", "--link", "3:delay=5"],  # no such port
        ["--no-p4", "-i", "1@a", "--link", "1:speed=5"],
        ["--no-p4", "--", "--grpc-server-addr", "nohost"],
        ["--no-p4", "--", "--bogus"],
    ],
)
def test_bad_command_lines(argv) -> None:
    with pytest.raises(UsageError):
        parse_args(argv)


def test_version_and_help() -> None:
    v = run_cli("--version")
    assert v.returncode == 0 and "p4kit" in v.stdout
    h = run_cli("--help")
    assert h.returncode == 0 and "no Thrift" in h.stdout and "--link" in h.stdout and "--cpu-port" in h.stdout


def test_errors_exit_1_without_traceback(tmp_path) -> None:
    r = run_cli("--no-p4", "-i", "1@a", "-i", "1@b")
    assert r.returncode == 1 and "error" in r.stderr and "Traceback" not in r.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = run_cli(str(bad))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    r = run_cli(str(tmp_path / "missing.json"))
    assert r.returncode == 1 and "Traceback" not in r.stderr


def test_starts_with_a_json_listens_and_stops_on_sigterm(tmp_path) -> None:
    _, json_path = write_program(str(tmp_path))
    with switch_process(json_path, "--thrift-port", "9090", "--nanolog", "ipc:///tmp/bm-0-log.ipc") as (
        addr,
        proc,
    ):
        assert proc.poll() is None
    assert proc.returncode == 0
    out = proc.stdout.read()
    assert f"Server listening on {addr}" in out and "Thrift" in out


@pytest.mark.root
@pytest.mark.skipif(not have_root_net(), reason="needs root and iproute2")
def test_log_file_has_the_per_packet_trace(tmp_path) -> None:
    _, json_path = write_program(str(tmp_path))
    log = tmp_path / "switch.log"
    with hosts_net(1, subnet="10.83.0") as net:
        h1 = net.hosts[0]
        with switch_process("-i", f"1@{net.switch_ifaces[0]}", "--log-file", str(log), json_path):
            send_from(h1.ns, h1.iface, frame("02:00:00:00:00:99", h1.mac, bytes(50)))
            import time

            time.sleep(0.5)
    text = log.read_text()
    assert "port 1" in text and "MyIngress.acl" in text


def test_pcap_flag_without_directory_before_the_json() -> None:
    opts = parse_args(["--pcap", "prog.json", "-i", "1@a"])
    assert opts.json_path == "prog.json" and opts.pcap_dir == "."


def test_busy_grpc_port_is_a_clear_error() -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = run_cli("--no-p4", "--", "--grpc-server-addr", f"127.0.0.1:{port}")
    assert r.returncode == 1 and "cannot listen" in r.stderr and "Traceback" not in r.stderr
