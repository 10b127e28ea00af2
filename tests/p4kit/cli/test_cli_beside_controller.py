"""p4kit-cli beside a running P4Runtime controller, as simple_switch_CLI is used beside p4lang/tutorials'
mycontroller.py: the tutorials' controllers all take election id 1 and wait for the arbitration answer
without a timeout. Without --election-id p4kit-cli must neither take that id (the controller would be
refused and hang) nor fail because it is taken; it reads at once and writes once no controller is the
primary. Against a real p4kit-switch process; the switch's state is read back over P4Runtime."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest
from p4.v1 import p4runtime_pb2 as pb

from tests.p4kit.switch._p4rt_client import Client, switch_process
from tests.p4kit.switch._switch_programs import bmv2_json, p4info

LPM = 37375156
ADD = "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.7.0/24 => 00:00:00:00:07:77 7\n"


def cli(addr: str, commands: str, *extra: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """p4kit-cli with its default options (no --election-id), commands on stdin."""
    return subprocess.run(
        [sys.executable, "-m", "p4kit.cli.main", "--grpc-addr", addr, *extra],
        input=commands,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def lpm_prefixes(c: Client) -> set[tuple[bytes, int]]:
    entries = c.read(pb.Entity(table_entry=pb.TableEntry(table_id=LPM)))
    return {(e.table_entry.match[0].lpm.value, e.table_entry.match[0].lpm.prefix_len) for e in entries}


@pytest.fixture
def controller():
    """A switch and a controller stream with election id 1 that pushed the program and stays."""
    with switch_process("--no-p4") as (addr, _):
        c = Client(addr, 0)
        s = c.stream(election=1)
        assert s.next("arbitration").arbitration.status.code == 0
        c.set_pipeline(p4info(), json.dumps(bmv2_json()).encode())
        yield addr, c, s
        c.close()


def test_reads_beside_a_controller_leave_it_primary(controller) -> None:
    addr, c, s = controller
    r = cli(
        addr, "show_tables\ntable_num_entries MyIngress.ipv4_lpm\ncounter_read MyIngress.port_counter 1\n"
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "MyIngress.ipv4_lpm" in r.stdout
    assert "MyIngress.port_counter[1]=  BmCounterValue(packets=0, bytes=0)" in r.stdout
    assert s.error is None  # the controller's stream is untouched
    # and it still writes as the primary
    te = pb.TableEntry(table_id=LPM)
    m = te.match.add(field_id=1)
    m.lpm.value, m.lpm.prefix_len = bytes([10, 0, 9, 0]), 24
    te.action.action.action_id = 25652968  # MyIngress.drop
    c.write(pb.Update(type=pb.Update.INSERT, entity=pb.Entity(table_entry=te)))
    assert (bytes([10, 0, 9, 0]), 24) in lpm_prefixes(c)


def test_a_controller_arriving_while_a_cli_session_is_open_becomes_primary() -> None:
    with switch_process("--no-p4") as (addr, _):
        first = Client(addr, 0)
        s = first.stream(election=1)
        assert s.next("arbitration").arbitration.status.code == 0
        first.set_pipeline(p4info(), json.dumps(bmv2_json()).encode())
        first.close()
        session = subprocess.Popen(
            [sys.executable, "-m", "p4kit.cli.main", "--grpc-addr", addr],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert session.stdin is not None
            session.stdin.write("show_tables\n")
            session.stdin.flush()
            assert session.stdout is not None
            first = session.stdout.readline()  # the session is up and has read the P4Info
            assert "MyIngress.ipv4_lpm" in first or "MyIngress.acl" in first, first
            c = Client(addr, 0)
            s2 = c.stream(election=1)
            answer = s2.next("arbitration")
            assert answer is not None, s2.error
            assert answer.arbitration.status.code == 0  # primary, not refused for a taken id
            c.close()
        finally:
            out, err = session.communicate("", timeout=30)
        assert session.returncode == 0, out + err


def test_a_write_waits_until_the_controller_has_gone(controller) -> None:
    addr, c, s = controller
    leave = threading.Timer(2.0, s.close)  # the controller finishes programming and disconnects
    leave.start()
    try:
        started = time.monotonic()
        r = cli(addr, ADD, "--timeout", "20")
        waited = time.monotonic() - started
    finally:
        leave.cancel()
    assert r.returncode == 0, r.stdout + r.stderr
    assert waited >= 1.5  # it did not write while the controller was the primary
    assert (bytes([10, 0, 7, 0]), 24) in lpm_prefixes(c)


def test_a_write_beside_a_controller_that_stays_is_refused_with_the_way_out(controller) -> None:
    addr, c, s = controller
    r = cli(addr, ADD, "--timeout", "2")
    assert r.returncode == 1
    assert "election id 1" in r.stdout and "--election-id 2" in r.stdout, r.stdout
    assert (bytes([10, 0, 7, 0]), 24) not in lpm_prefixes(c)
    assert s.error is None
    # the way out: a higher id takes over the writes
    r = cli(addr, ADD, "--election-id", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (bytes([10, 0, 7, 0]), 24) in lpm_prefixes(c)


def test_a_write_with_no_client_connected_needs_no_arbitration(controller) -> None:
    addr, c, s = controller
    s.close()
    r = cli(addr, ADD)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (bytes([10, 0, 7, 0]), 24) in lpm_prefixes(c)
