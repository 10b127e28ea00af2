"""p4kit-cli against a real p4kit-switch process over gRPC: simple_switch_CLI's commands on stdin and at
an interactive prompt, each checked by reading the switch's state back with P4Runtime (not by trusting
the CLI's own output)."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb

from p4kit.cli.session import MAX_PRIORITY

from ._p4rt_client import Client, switch_process
from ._switch_programs import bmv2_json, p4info

LPM, ACL = 37375156, 44506256
FWD = 28792405
PROGRAMS = Path(__file__).resolve().parents[1] / "programs"


def cli(addr: str, commands: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "p4kit.cli.main", "--grpc-addr", addr, "--election-id", "10", *extra],
        input=commands,
        capture_output=True,
        text=True,
        timeout=60,
    )


@contextlib.contextmanager
def running(info: p4info_pb2.P4Info, bmv2: dict) -> Iterator[str]:
    """A switch process running `bmv2` (pushed by a controller that then goes away); yields its address."""
    with switch_process("--no-p4") as (addr, _):
        c = Client(addr, 0)
        s = c.stream(election=1)
        assert s.next("arbitration").arbitration.status.code == 0
        c.set_pipeline(info, json.dumps(bmv2).encode())
        c.close()
        yield addr


def compiled(path: Path) -> tuple[p4info_pb2.P4Info, dict]:
    """(P4Info, BMv2 JSON) of a P4 program, from p4kit-p4c."""
    from p4kit.compiler.driver import compile_file
    from p4kit.compiler.p4info import build_p4info

    result = compile_file(path)
    return build_p4info(result.control_plane), result.bmv2


@pytest.fixture
def switch():
    """A switch running the basic program (set by a controller that then goes away)."""
    with running(p4info(), bmv2_json()) as addr:
        reader = Client(addr, 0)
        yield addr, reader
        reader.close()


def lpm_entries(c: Client) -> list[pb.TableEntry]:
    return [e.table_entry for e in c.read(pb.Entity(table_entry=pb.TableEntry(table_id=LPM)))]


def test_table_commands_change_the_switch(switch) -> None:
    addr, c = switch
    r = cli(
        addr,
        "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.1.1/32 => 00:00:00:00:01:11 1\n"
        "table_add ipv4_lpm ipv4_forward 10.0.2.0/24 => 00:00:00:00:02:22 2\n"
        "table_modify MyIngress.ipv4_lpm MyIngress.ipv4_forward 1 00:00:00:00:02:33 3\n"
        "table_set_default MyIngress.ipv4_lpm MyIngress.drop\n",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Entry has been added with handle 0" in r.stdout and "handle 1" in r.stdout
    got = {(e.match[0].lpm.value, e.match[0].lpm.prefix_len): e.action.action for e in lpm_entries(c)}
    assert set(got) == {(bytes([10, 0, 1, 1]), 32), (bytes([10, 0, 2, 0]), 24)}
    modified = got[(bytes([10, 0, 2, 0]), 24)]
    assert modified.action_id == FWD
    assert [p.value for p in modified.params] == [bytes.fromhex("0233"), b"\x03"]  # canonical bytestrings
    default = c.read(pb.Entity(table_entry=pb.TableEntry(table_id=LPM, is_default_action=True)))
    assert default[0].table_entry.action.action.action_id == 25652968  # MyIngress.drop

    # a second session sees the entries with handles in read order, and deletes by handle
    r = cli(
        addr,
        "table_num_entries MyIngress.ipv4_lpm\ntable_dump MyIngress.ipv4_lpm\ntable_delete MyIngress.ipv4_lpm 0\n",
    )
    assert r.returncode == 0 and r.stdout.splitlines()[0] == "2"
    assert "0a000101/32" in r.stdout and "0a000200/24" in r.stdout and "MyIngress.drop" in r.stdout
    assert len(lpm_entries(c)) == 1
    assert cli(addr, "table_clear MyIngress.ipv4_lpm\n").returncode == 0
    assert lpm_entries(c) == []


def test_priorities_mean_what_they_mean_in_bmv2(switch) -> None:
    """The smaller CLI priority must win: it becomes the larger P4Runtime priority."""
    addr, c = switch
    r = cli(
        addr,
        "table_add MyIngress.acl MyIngress.drop 0x0800&&&0xffff => 10\n"
        "table_add MyIngress.acl MyIngress.to_cpu 0x0800&&&0xff00 => 20\n"
        "table_dump MyIngress.acl\n",
    )
    assert r.returncode == 0, r.stdout
    prio = {
        e.table_entry.action.action.action_id: e.table_entry.priority
        for e in c.read(pb.Entity(table_entry=pb.TableEntry(table_id=ACL)))
    }
    assert prio[25652968] == MAX_PRIORITY - 10 and prio[23118640] == MAX_PRIORITY - 20
    assert prio[25652968] > prio[23118640]
    assert "Priority: 10" in r.stdout and "Priority: 20" in r.stdout


def test_multicast_mirroring_registers_counters(switch) -> None:
    addr, c = switch
    r = cli(
        addr,
        "mc_mgrp_create 1\n"
        "mc_node_create 0 1 2\n"
        "mc_node_create 7 3\n"
        "mc_node_associate 1 0\n"
        "mc_node_associate 1 1\n"
        "mc_node_dissociate 1 0\n"
        "mc_dump\n"
        "mirroring_add 5 4\n"
        "mirroring_add_mc 6 1\n"
        "mirroring_get 5\n"
        "register_write MyIngress.reg 0 42\n"
        "register_read MyIngress.reg 0\n"
        "counter_write MyIngress.port_counter 3 7 700\n"
        "counter_read MyIngress.port_counter 3\n",
    )
    assert r.returncode == 0, r.stdout
    assert "MyIngress.reg[0]= 42" in r.stdout
    # simple_switch_CLI's line, which scripts parse
    assert "MyIngress.port_counter[3]=  BmCounterValue(packets=7, bytes=700)" in r.stdout
    pre = pb.Entity()
    pre.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 1
    group = c.read(pre)[0].packet_replication_engine_entry.multicast_group_entry
    assert [(x.egress_port, x.instance) for x in group.replicas] == [(3, 7)]
    sessions = pb.Entity()
    sessions.packet_replication_engine_entry.clone_session_entry.SetInParent()
    got = {
        e.packet_replication_engine_entry.clone_session_entry.session_id: [
            (x.egress_port, x.instance)
            for x in e.packet_replication_engine_entry.clone_session_entry.replicas
        ]
        for e in c.read(sessions)
    }
    assert got == {5: [(4, 0)], 6: [(3, 7)]}
    reg = pb.RegisterEntry(register_id=371444078)
    reg.index.index = 0
    assert c.read(pb.Entity(register_entry=reg))[0].register_entry.data.bitstring == b"\x2a"

    r = cli(
        addr,
        "register_reset MyIngress.reg\ncounter_reset MyIngress.port_counter\n"
        "mc_mgrp_destroy 1\nmirroring_delete 5\n",
    )
    assert r.returncode == 0, r.stdout
    assert c.read(pb.Entity(register_entry=reg))[0].register_entry.data.bitstring == b"\x00"
    ctr = pb.CounterEntry(counter_id=309010261)
    ctr.index.index = 3
    assert c.read(pb.Entity(counter_entry=ctr))[0].counter_entry.data.packet_count == 0
    assert 5 not in {
        e.packet_replication_engine_entry.clone_session_entry.session_id for e in c.read(sessions)
    }


def test_direct_counter_by_entry_handle(switch) -> None:
    addr, c = switch
    r = cli(
        addr,
        "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.0.0/8 => 00:00:00:00:00:01 1\n"
        "counter_write MyIngress.lpm_counter 0 3 300\n"
        "counter_read MyIngress.lpm_counter 0\n",
    )
    assert r.returncode == 0, r.stdout
    assert "this is the direct counter for table MyIngress.ipv4_lpm" in r.stdout
    assert "MyIngress.lpm_counter[0]=  BmCounterValue(packets=3, bytes=300)" in r.stdout
    dc = pb.DirectCounterEntry()
    dc.table_entry.CopyFrom(lpm_entries(c)[0])
    dc.table_entry.ClearField("action")
    data = c.read(pb.Entity(direct_counter_entry=dc))[0].direct_counter_entry.data
    assert (data.packet_count, data.byte_count) == (3, 300)


def test_errors_are_reported_and_the_batch_goes_on(switch) -> None:
    addr, c = switch
    r = cli(
        addr,
        "table_add foo bar 1 =>\n"
        "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.0.0 => 00:00:00:00:00:01 1\n"  # no /len
        "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.0.0/8 => 00:00:00:00:00:01 512\n"  # bit<9>
        "table_add MyIngress.acl MyIngress.drop 0x0800&&&0xffff\n"  # no priority
        "table_delete MyIngress.ipv4_lpm 99\n"
        "no_such_command\n"
        "# a comment\n"
        "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.0.0/8 => 00:00:00:00:00:01 1\n"
        "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.0.0/8 => 00:00:00:00:00:01 1\n",  # duplicate
    )
    assert r.returncode == 1  # a command failed
    lines = r.stdout.splitlines()
    errors = [ln for ln in lines if ln.startswith(("Error:", "*** Unknown"))]
    assert len(errors) == 7, r.stdout
    assert "Invalid table name (foo)" in errors[0]
    assert "VALUE/PREFIX_LENGTH" in errors[1] and "9 bits" in errors[2] and "priority" in errors[3]
    assert "INVALID_HANDLE" in errors[4] and "no_such_command" in errors[5]
    assert "ALREADY_EXISTS" in errors[6]
    assert len(lpm_entries(c)) == 1  # the good one went in


def test_meters_in_bmv2_units(tmp_path) -> None:
    info, bmv2 = compiled(PROGRAMS / "extern_meter_indirect.p4")
    with running(info, bmv2) as addr:
        r = cli(addr, "meter_set_rates MyIngress.pm 2 0.5:10 1.25:20\nmeter_get_rates MyIngress.pm 2\n")
        assert r.returncode == 0, r.stdout
        assert "0: info rate = 0.5, burst size = 10" in r.stdout
        assert "1: info rate = 1.25, burst size = 20" in r.stdout
        reader = Client(addr, 0)
        me = pb.MeterEntry(meter_id=next(m.preamble.id for m in info.meters))
        me.index.index = 2
        cfg = reader.read(pb.Entity(meter_entry=me))[0].meter_entry.config
        assert (cfg.cir, cfg.cburst, cfg.pir, cfg.pburst) == (500_000, 10, 1_250_000, 20)  # per second
        # every cell at once
        r = cli(
            addr, "meter_array_set_rates MyIngress.pm 3:30 4:40\nmeter_array_set_rates MyIngress.pm 3:30\n"
        )
        assert r.returncode == 1 and "Invalid number of arguments" in r.stdout
        meter = next(m for m in info.meters)
        cells = reader.read(pb.Entity(meter_entry=pb.MeterEntry(meter_id=meter.preamble.id)))
        assert len(cells) == meter.size > 2
        assert {
            (c.meter_entry.config.cir, c.meter_entry.config.cburst, c.meter_entry.config.pir) for c in cells
        } == {(3_000_000, 30, 4_000_000)}
        reader.close()


def test_backup_client_is_told_and_refused(switch) -> None:
    addr, c = switch
    s = c.stream(election=50)  # a controller that stays primary
    assert s.next("arbitration").arbitration.status.code == 0
    r = cli(addr, "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.0.0/8 => 00:00:00:00:00:01 1\n")
    assert r.returncode == 1
    assert "not the primary client" in r.stderr and "--election-id 51" in r.stderr
    assert "PERMISSION_DENIED" in r.stdout
    assert lpm_entries(c) == []


def test_no_switch_is_a_clear_error() -> None:
    from tests.localports import free_port

    r = subprocess.run(
        [sys.executable, "-m", "p4kit.cli.main", "--grpc-addr", f"127.0.0.1:{free_port()}", "--timeout", "1"],
        input="show_tables\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 1 and "cannot connect" in r.stderr and "Traceback" not in r.stderr


def _read_until(fd: int, needle: bytes, timeout: float = 15.0) -> bytes:
    buf = b""
    end = time.monotonic() + timeout
    while needle not in buf:
        left = end - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no {needle!r} in {buf!r}")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
    return buf


def test_interactive_prompt(switch) -> None:
    addr, c = switch
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "p4kit.cli.main", "--grpc-addr", addr, "--election-id", "10"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        close_fds=True,
    )
    os.close(slave)
    try:
        _read_until(master, b"RuntimeCmd: ")
        os.write(master, b"help table_add\n")
        assert b"<match fields> => <action parameters>" in _read_until(master, b"RuntimeCmd: ")
        os.write(
            master,
            b"table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.9.0.0/16 => 00:00:00:00:00:09 9\n",
        )
        assert b"added with handle 0" in _read_until(master, b"RuntimeCmd: ")
        os.write(master, b"quit\n")
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert [e.match[0].lpm.prefix_len for e in lpm_entries(c)] == [16]


def test_action_profiles_members_groups_and_indirect_entries() -> None:
    """act_prof_* and table_indirect_* build what BMv2's CLI builds, read back over P4Runtime: handle h
    is P4Runtime id h + 1; a group's member list is changed one member at a time."""
    info, bmv2 = compiled(PROGRAMS / "table_action_profile_selector.p4")
    ids = {ap.preamble.name: ap.preamble.id for ap in info.action_profiles}
    tables = {t.preamble.name: t.preamble.id for t in info.tables}
    with running(info, bmv2) as addr:
        r = cli(
            addr,
            "act_prof_create_member MyIngress.ap MyIngress.set_r1 7\n"
            "act_prof_create_member MyIngress.ap MyIngress.set_r1 9\n"
            "act_prof_modify_member MyIngress.ap MyIngress.set_r1 1 => 10\n"
            "table_indirect_add MyIngress.t_prof 0x0101 => 1\n"
            "act_prof_create_member MyIngress.as MyIngress.set_port 3\n"
            "table_indirect_create_member MyIngress.t_sel MyIngress.set_port 4\n"
            "act_prof_create_group MyIngress.as\n"
            "act_prof_add_member_to_group MyIngress.as 0 0\n"
            "act_prof_add_member_to_group MyIngress.as 1 0\n"
            "act_prof_remove_member_from_group MyIngress.as 0 0\n"
            "table_indirect_add_with_group MyIngress.t_sel 0x0202 => 0\n"
            "table_dump MyIngress.t_sel\n"
            "act_prof_dump_member MyIngress.ap 1\n"
            "act_prof_create_group MyIngress.ap\n"
            "table_indirect_add_with_group MyIngress.t_sel 0x0303 => 5\n",
        )
        assert r.returncode == 1, r.stdout + r.stderr  # the last two fail, each with its reason
        out = r.stdout
        assert (
            "Member has been created with handle 0" in out and "Member has been created with handle 1" in out
        )
        assert "Group has been created with handle 0" in out
        assert "Index: group(0)" in out and "Members: [1]" in out
        assert "Dumping member 1" in out and "MyIngress.set_r1 - 0a" in out
        assert "Cannot run this command on an action profile without selector" in out
        assert "Invalid group handle 5" in out

        reader = Client(addr, 0)

        def members(name: str) -> dict[int, list[bytes]]:
            e = pb.Entity(action_profile_member=pb.ActionProfileMember(action_profile_id=ids[name]))
            got = reader.read(e)
            return {
                m.action_profile_member.member_id: [p.value for p in m.action_profile_member.action.params]
                for m in got
            }

        assert members("MyIngress.ap") == {1: [b"\x07"], 2: [b"\x0a"]}
        assert members("MyIngress.as") == {1: [b"\x03"], 2: [b"\x04"]}
        e = pb.Entity(action_profile_group=pb.ActionProfileGroup(action_profile_id=ids["MyIngress.as"]))
        groups = [g.action_profile_group for g in reader.read(e)]
        assert [(g.group_id, [m.member_id for m in g.members]) for g in groups] == [(1, [2])]
        entries = {
            t: [
                (x.table_entry.match[0].exact.value, x.table_entry.action)
                for x in reader.read(pb.Entity(table_entry=pb.TableEntry(table_id=tables[t])))
            ]
            for t in ("MyIngress.t_prof", "MyIngress.t_sel")
        }
        assert entries["MyIngress.t_prof"] == [(b"\x01\x01", pb.TableAction(action_profile_member_id=2))]
        assert entries["MyIngress.t_sel"] == [(b"\x02\x02", pb.TableAction(action_profile_group_id=1))]

        r = cli(
            addr,
            "table_indirect_modify MyIngress.t_prof 0 0\n"
            "table_indirect_delete MyIngress.t_sel 0\n"
            "act_prof_delete_group MyIngress.as 0\n"
            "act_prof_delete_member MyIngress.as 1\n"
            "act_prof_dump MyIngress.as\n",
        )
        assert r.returncode == 0, r.stdout + r.stderr
        assert "Dumping member 0" in r.stdout and "Dumping member 1" not in r.stdout
        t_prof = reader.read(pb.Entity(table_entry=pb.TableEntry(table_id=tables["MyIngress.t_prof"])))
        assert t_prof[0].table_entry.action == pb.TableAction(action_profile_member_id=1)
        assert reader.read(pb.Entity(table_entry=pb.TableEntry(table_id=tables["MyIngress.t_sel"]))) == []
        assert members("MyIngress.as") == {1: [b"\x03"]}
        reader.close()


def test_switch_control_service_checks_its_callers(switch) -> None:
    """The queue calls are writes: a backup client is refused; bad bodies and ops get clear codes."""
    import grpc

    from p4kit.switch.control_service import METHOD, decode, encode

    addr, c = switch
    s = c.stream(election=50)  # a controller that stays primary
    assert s.next("arbitration").arbitration.status.code == 0
    r = cli(addr, "set_queue_depth 8\nget_time_elapsed\n")
    assert r.returncode == 1
    assert "PERMISSION_DENIED" in r.stdout and r.stdout.splitlines()[-1].isdigit()  # reads still work
    assert cli(addr, "set_queue_depth 8\n", "--election-id", "50").returncode == 1  # one stream each
    with grpc.insecure_channel(addr) as channel:
        raw = channel.unary_unary(METHOD)
        call = channel.unary_unary(METHOD, request_serializer=encode, response_deserializer=decode)
        cases = [
            (lambda: raw(b"\xff not json", timeout=10), grpc.StatusCode.INVALID_ARGUMENT),
            (lambda: call({"op": "reboot"}, timeout=10), grpc.StatusCode.UNIMPLEMENTED),
            (lambda: call({"op": "show_ports", "device_id": 7}, timeout=10), grpc.StatusCode.NOT_FOUND),
            (
                lambda: call({"op": "set_queue_depth", "depth": -1, "election_id": 50}, timeout=10),
                grpc.StatusCode.INVALID_ARGUMENT,
            ),
            (
                lambda: call(
                    {"op": "set_queue_rate", "pps": 5, "priority": 1, "election_id": 50}, timeout=10
                ),
                grpc.StatusCode.INVALID_ARGUMENT,
            ),
        ]
        for fn, code in cases:
            with pytest.raises(grpc.RpcError) as err:
                fn()
            assert err.value.code() == code, err.value.details()
        assert call({"op": "set_queue_depth", "depth": 8, "election_id": 50}, timeout=10) == {"result": None}
        assert call({"op": "show_ports"}, timeout=10) == {"result": []}


def test_entry_from_key_config_file_switch_info_and_refusals(switch, tmp_path) -> None:
    addr, c = switch
    out_file = tmp_path / "running.json"
    r = cli(
        addr,
        "table_add MyIngress.ipv4_lpm MyIngress.ipv4_forward 10.0.1.1/32 => 00:00:00:00:01:11 1\n"
        "table_add MyIngress.acl MyIngress.drop 0x0800&&&0xffff => 10\n"
        "table_dump_entry_from_key MyIngress.ipv4_lpm 10.0.1.1/32\n"
        "table_dump_entry_from_key MyIngress.acl 0x0800&&&0xffff 10\n"
        "table_dump_entry_from_key MyIngress.acl 0x0800&&&0xffff 11\n"
        "table_dump_entry_from_key MyIngress.ipv4_lpm\n"
        f"write_config_to_file {out_file}\n"
        "switch_info\n"
        "port_add veth9 9\n"
        "reset_state\n",
    )
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout
    assert "0a000101/32" in out and "Action entry: MyIngress.ipv4_forward - 000000000111, 0001" in out
    assert "Priority: 10" in out and out.count("Dumping entry 0x0") == 2
    errors = [ln for ln in out.splitlines() if ln.startswith("Error:")]
    assert "BAD_MATCH_KEY" in errors[0]  # priority 11 is another entry's key
    assert "needs 1 key fields" in errors[1]
    assert "port_add is not supported by p4kit" in errors[2] and "-i" in errors[2]
    assert "reset_state is not supported" in errors[3]
    assert json.loads(out_file.read_text()) == bmv2_json()  # what the controller pushed
    info = {
        k.strip(): v.strip()
        for k, v in (
            ln.split(":", 1) for ln in out.splitlines() if ln.startswith(("device_id", "grpc_server"))
        )
    }
    assert info == {"device_id": "0", "grpc_server_addr": addr}
    assert len(lpm_entries(c)) == 1  # nothing else changed


TIMEOUT_P4 = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; }
struct hs_t { h_t h; }
struct m_t { }
parser P(packet_in p, out hs_t hdr, inout m_t m, inout standard_metadata_t sm) {
    state start { p.extract(hdr.h); transition accept; }
}
control V(inout hs_t hdr, inout m_t m) { apply { } }
control I(inout hs_t hdr, inout m_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table aging { key = { hdr.h.k: exact; } actions = { fwd; NoAction; } support_timeout = true; }
    table fixed { key = { hdr.h.k: exact; } actions = { fwd; NoAction; } }
    apply { aging.apply(); fixed.apply(); }
}
control E(inout hs_t hdr, inout m_t m, inout standard_metadata_t sm) { apply { } }
control C(inout hs_t hdr, inout m_t m) { apply { } }
control D(packet_out p, in hs_t hdr) { apply { p.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_table_set_timeout_sets_the_entrys_idle_timeout(tmp_path) -> None:
    src = tmp_path / "aging.p4"
    src.write_text(TIMEOUT_P4)
    info, bmv2 = compiled(src)
    aging = next(t.preamble.id for t in info.tables if t.preamble.name.endswith("aging"))
    with running(info, bmv2) as addr:
        r = cli(
            addr,
            "table_add I.aging I.fwd 7 => 2\n"
            "table_set_timeout I.aging 0 250\n"
            "table_add I.fixed I.fwd 7 => 2\n"
            "table_set_timeout I.fixed 0 250\n",
        )
        assert r.returncode == 1, r.stdout + r.stderr
        assert "Setting a 250 ms timeout for entry 0" in r.stdout
        assert "does not support entry timeouts" in r.stdout
        reader = Client(addr, 0)
        entry = reader.read(pb.Entity(table_entry=pb.TableEntry(table_id=aging)))[0].table_entry
        assert entry.idle_timeout_ns == 250_000_000
        assert entry.action.action.params[0].value == b"\x02"  # the action stays
        reader.close()
