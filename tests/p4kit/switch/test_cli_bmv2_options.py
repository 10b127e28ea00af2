"""simple_switch_grpc's options in p4kit-switch, option by option: main options before `--`, target
options after it; what p4kit can do is done, what it cannot is refused with the reason, and what only
concerns a BMv2 service p4kit replaces is accepted with a printed note. Nothing is ignored silently."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import grpc
import pytest
from p4.v1 import p4runtime_pb2 as pb

from p4kit.switch.cli_args import JSON_VERSION, REFUSED, UsageError, parse_args
from p4kit.switch.runtime import Switch
from tests.localports import free_port, wait_listening

from ._p4rt_client import Client
from ._switch_programs import bmv2_json, p4info

BASE = ["--no-p4"]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "p4kit.switch.cli", *args], capture_output=True, text=True, timeout=30
    )


def test_target_options_in_their_place() -> None:
    opts = parse_args(
        [
            *BASE,
            "--",
            "--drop-port",
            "400",
            "--cpu-port",
            "510",
            "--priority-queues",
            "4",
            "--egress-spec-init-to-drop",
            "--disable-swap",
            "--grpc-server-addr",
            "127.0.0.1:50099",
        ]
    )
    assert opts.drop_port == 400 and opts.cpu_port == 510 and opts.priority_queues == 4
    assert opts.egress_spec_init_to_drop and opts.disable_swap
    assert opts.grpc_addr == "127.0.0.1:50099"


def test_drop_port_is_also_accepted_as_a_main_option_but_not_twice_differently() -> None:
    assert parse_args([*BASE, "--drop-port", "300"]).drop_port == 300
    assert parse_args([*BASE, "--drop-port", "300", "--", "--drop-port", "300"]).drop_port == 300
    with pytest.raises(UsageError, match="twice"):
        parse_args([*BASE, "--drop-port", "300", "--", "--drop-port", "301"])


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (["--use-files", "5"], "interfaces"),
        (["--packet-in", "ipc:///tmp/x"], "nanomsg"),
        (["--debugger"], "debugger"),
        (["--debugger-addr", "ipc:///tmp/d"], "debugger"),
        (["--restore-state", "state.txt"], "P4Runtime"),
        (["--trace-dir", "/tmp"], "log-console"),
        (["--", "--dp-grpc-server-addr", "0.0.0.0:50052"], "DataplaneInterface"),
        (["--", "--load-modules", "x.so"], ".so"),
        (["--", "--grpc-server-ssl"], "plain-text"),
        (["--", "--grpc-server-cert", "c.pem"], "plain-text"),
    ],
)
def test_what_p4kit_cannot_do_is_refused_with_the_reason(argv, reason) -> None:
    with pytest.raises(UsageError, match=reason):
        parse_args([*BASE, *argv])


def test_every_refusal_names_its_option() -> None:
    for name, reason in REFUSED.items():
        assert reason.startswith("--" + name.replace("_", "-")), name


@pytest.mark.parametrize(
    "argv",
    [
        ["--", "--cpu-port", "0"],  # BMv2 exits on it too
        ["--", "--cpu-port", "511"],  # the drop port
        ["-i", "255@veth0", "--", "--cpu-port", "255"],  # an interface on the CPU port
        ["--", "--priority-queues", "0"],
        ["--", "--priority-queues", "9"],
        ["--log-console", "--log-file", "x.log"],  # exclusive in BMv2
        ["--max-port-count", "1", "-i", "1@a", "-i", "2@b"],
        ["--", "--no-such-target-option"],
    ],
)
def test_bad_values_are_refused(argv) -> None:
    with pytest.raises(UsageError):
        parse_args([*BASE, *argv])


def test_options_of_replaced_services_are_accepted_with_a_note() -> None:
    opts = parse_args(
        [
            *BASE,
            "--thrift-port",
            "9090",
            "--nanolog",
            "ipc:///tmp/l.ipc",
            "--notifications-addr",
            "ipc:///tmp/n.ipc",
            "--dump-packet-data",
            "64",
            "--log-flush",
        ]
    )
    text = "\n".join(opts.notes)
    for what in ("--thrift-port", "--nanolog", "--notifications-addr", "--dump-packet-data", "--log-flush"):
        assert what in text
    assert parse_args(["--no-p4", "prog.json"]).json_path is None  # BMv2: a warning, not an error
    assert "ignoring input config" in parse_args(["--no-p4", "prog.json"]).notes[0]


def test_a_missing_pcap_directory_is_made_and_said(tmp_path) -> None:
    opts = parse_args([*BASE, "--pcap", str(tmp_path / "new")])
    assert any("is created" in n for n in opts.notes)


def test_json_version_and_version_flags() -> None:
    r = run_cli("--json-version")
    assert r.returncode == 0 and r.stdout.strip() == JSON_VERSION
    r = run_cli("-v")
    assert r.returncode == 0 and "p4kit" in r.stdout


def test_refusals_exit_1_with_the_reason() -> None:
    r = run_cli("--no-p4", "--debugger")
    assert r.returncode == 1 and "debugger" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("--no-p4", "--", "--cpu-port", "0")
    assert r.returncode == 1 and "--cpu-port 0" in r.stderr


def _forward_nothing_program() -> dict:
    """basic's JSON with an empty ingress: egress_spec keeps its initial value."""
    doc = bmv2_json()
    for p in doc["pipelines"]:
        if p["name"] == "ingress":
            p["init_table"] = None
            p["tables"] = []
            p["conditionals"] = []
    return doc


def test_egress_spec_init_to_drop_drops_what_ingress_leaves_alone() -> None:
    frame = bytes(12) + b"\x88\xb5" + bytes(50)
    plain = Switch()
    plain.load_pipeline(_forward_nothing_program())
    assert [port for port, _ in plain.process_packet(3, frame)] == [0]  # BMv2's default: port 0
    dropping = Switch(egress_spec_init_to_drop=True)
    dropping.load_pipeline(_forward_nothing_program())
    assert dropping.process_packet(3, frame) == []


def test_priority_queues_reach_the_traffic_manager(tmp_path) -> None:
    from p4kit.switch.cli import start

    opts = parse_args(
        ["--no-p4", "--", "--priority-queues", "3", "--grpc-server-addr", f"127.0.0.1:{free_port()}"]
    )
    running = start(opts)
    try:
        assert running.switch.traffic_manager.priorities == 3
    finally:
        running.close()


def test_disable_swap_keeps_the_first_program() -> None:
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "p4kit.switch.cli",
        "--no-p4",
        "--device-id",
        "2",
        "--",
        "--grpc-server-addr",
        f"127.0.0.1:{port}",
        "--disable-swap",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_listening(port, proc, what="p4kit-switch")
        c = Client(f"127.0.0.1:{port}", 2)
        s = c.stream(election=1)
        assert s.next("arbitration").arbitration.status.code == 0
        data = json.dumps(bmv2_json()).encode()
        c.set_pipeline(p4info(), data)  # the first program: allowed
        with pytest.raises(grpc.RpcError) as e:
            c.set_pipeline(p4info(), data)
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION and "--disable-swap" in e.value.details()
        assert c.read(pb.Entity(table_entry=pb.TableEntry())) == []  # still serving the first one
        c.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
