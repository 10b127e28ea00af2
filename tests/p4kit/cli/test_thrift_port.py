"""`simple_switch_CLI --thrift-port N` reaches the switch started with `--thrift-port N`, as p4lang/tutorials'
READMEs tell users (acl_with_counters: `simple_switch_CLI --thrift-port 9090`, then `counter_read`).
p4kit has no Thrift: the switch records its P4Runtime address under the thrift port, p4kit-cli looks it up.
Checked against a real p4kit-switch process, reading its state back over P4Runtime."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

from p4kit.cli import thrift_ports
from tests.localports import free_port, wait_listening
from tests.p4kit.switch._p4rt_client import Client

BIN = Path(sys.executable).parent

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    counter(8, CounterType.packets_and_bytes) seen;
    action fwd(bit<9> port) { sm.egress_spec = port; seen.count(1); }
    table t { key = { hdr.h.k : exact; } actions = { fwd; NoAction; } default_action = NoAction(); }
    apply { t.apply(); }
}
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "run"
    monkeypatch.setenv("P4KIT_RUN_DIR", str(d))
    return d


@pytest.fixture
def program(tmp_path: Path) -> tuple[Path, p4info_pb2.P4Info]:
    src = tmp_path / "prog.p4"
    src.write_text(PROGRAM)
    out, info = tmp_path / "prog.json", tmp_path / "prog.p4info.txtpb"
    subprocess.run(
        [str(BIN / "p4kit-p4c"), "--p4v", "16", "-o", str(out), "--p4runtime-files", str(info), str(src)],
        check=True,
        timeout=120,
    )
    return out, text_format.Parse(info.read_text(), p4info_pb2.P4Info())


def start_switch(json_path: Path, thrift: int, grpc_port: int, device: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "p4kit.switch.cli",
            "--device-id",
            str(device),
            "--thrift-port",
            str(thrift),
            "--no-p4",
            "--",
            "--grpc-server-addr",
            f"0.0.0.0:{grpc_port}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    wait_listening(grpc_port, proc, what="p4kit-switch")
    return proc


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=10)


def cli(*args: str, commands: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "p4kit.cli.main", "--election-id", "10", *args],
        input=commands,
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )


def test_thrift_port_names_the_switch(run_dir: Path, program) -> None:
    json_path, info = program
    thrift, grpc_port = free_port(), free_port()
    proc = start_switch(json_path, thrift, grpc_port, device=3)
    try:
        reg = thrift_ports.lookup(thrift)
        assert reg is not None and reg.device_id == 3 and reg.connect_addr() == f"127.0.0.1:{grpc_port}"
        c = Client(f"127.0.0.1:{grpc_port}", 3)
        s = c.stream(election=1)
        assert s.next("arbitration").arbitration.status.code == 0
        c.set_pipeline(info, json_path.read_bytes())
        r = cli("--thrift-port", str(thrift), commands="table_add I.t I.fwd 5 => 2\ncounter_read I.seen 1\n")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "Entry has been added with handle 0" in r.stdout
        assert "I.seen[1]=" in r.stdout.replace(" ", "")
        table_id = next(t.preamble.id for t in info.tables if t.preamble.name == "I.t")
        entries = c.read(pb.Entity(table_entry=pb.TableEntry(table_id=table_id)))
        assert [e.table_entry.match[0].exact.value for e in entries] == [b"\x05"]
        c.close()
    finally:
        stop(proc)
    assert thrift_ports.lookup(thrift) is None  # the switch removed its entry when it stopped


def test_unknown_thrift_port_says_so(run_dir: Path) -> None:
    thrift = free_port()
    r = cli("--thrift-port", str(thrift), "--timeout", "1", commands="show_tables\n")
    assert r.returncode == 1
    assert f"no p4kit-switch was started with --thrift-port {thrift}" in r.stderr


def test_a_dead_switch_entry_is_ignored(run_dir: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    pid = int(dead.stdout)
    run_dir.mkdir(parents=True)
    (run_dir / "9999.json").write_text(
        f'{{"thrift_port": 9999, "grpc_addr": "127.0.0.1:1", "device_id": 0, "pid": {pid}}}'
    )
    assert thrift_ports.lookup(9999) is None
    reg = thrift_ports.register(9999, "127.0.0.1:2", 1)
    assert reg is not None and thrift_ports.lookup(9999) == reg
    thrift_ports.unregister(reg)
    assert thrift_ports.lookup(9999) is None
