"""P4Runtime with programs built by p4kit's compiler (P4Info + BMv2 JSON from tests/p4kit/programs)."""

from __future__ import annotations

import json
import queue
import time
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.v1 import p4runtime_pb2 as pb

from ._p4rt_client import Client, switch_process, update
from ._switch_testnet import have_root_net, hosts_net
from .test_ports import Sniffer, frame, send_from

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"


def compile_program(name: str, out_dir: Path):
    driver = pytest.importorskip("p4kit.compiler.driver")
    p4info_mod = pytest.importorskip("p4kit.compiler.p4info")
    result = driver.compile_file(PROGRAMS / f"{name}.p4")
    p4info = p4info_mod.build_p4info(result.control_plane)
    info_path, json_path = out_dir / f"{name}.p4info.txtpb", out_dir / f"{name}.json"
    info_path.write_text(text_format.MessageToString(p4info))
    json_path.write_text(json.dumps(result.bmv2))
    return p4info, result.bmv2, str(info_path), str(json_path)


def test_digest_list_is_streamed_once_configured(tmp_path) -> None:
    p4info, bmv2, _, _ = compile_program("extern_digest_truncate_log", tmp_path)
    (digest,) = p4info.digests
    with switch_process("--no-p4", device_id=0, cpu_port=64) as (addr, _):
        c = Client(addr, 0)
        s = c.stream(election=1)
        assert s.next("arbitration").arbitration.status.code == 0
        c.set_pipeline(p4info, json.dumps(bmv2).encode())
        out = pb.StreamMessageRequest()
        out.packet.payload = bytes.fromhex("0110222233334444")
        s.send(out)  # no DigestEntry yet: nothing is streamed
        with pytest.raises(queue.Empty):
            s.next("digest", timeout=0.5)
        c.write(update("INSERT", pb.Entity(digest_entry=pb.DigestEntry(digest_id=digest.preamble.id))))
        s.send(out)
        msg = s.next("digest", timeout=3).digest
        assert msg.digest_id == digest.preamble.id and len(msg.data) == 1
        assert [m.bitstring for m in msg.data[0].struct.members] == [
            b"\x11",
            b"\x40",
        ]  # a (+1 by the program), port 64
        ack = pb.StreamMessageRequest()
        ack.digest_ack.digest_id, ack.digest_ack.list_id = msg.digest_id, msg.list_id
        s.send(ack)
        (read,) = c.read(pb.Entity(digest_entry=pb.DigestEntry()))
        assert read.digest_entry.digest_id == digest.preamble.id
        c.close()


@pytest.mark.root
@pytest.mark.skipif(not have_root_net(), reason="needs root and iproute2")
def test_packet_in_and_out_with_compiled_program(tmp_path) -> None:
    sh = pytest.importorskip("p4runtime_sh.shell")
    _, _, info_path, json_path = compile_program("controller_packet_io", tmp_path)
    with hosts_net(1, subnet="10.85.0") as net:
        h1 = net.hosts[0]
        with switch_process("-i", f"1@{net.switch_ifaces[0]}", "--no-p4", device_id=1, cpu_port=64) as (
            addr,
            _,
        ):
            sh.setup(
                device_id=1, grpc_addr=addr, election_id=(0, 1), config=sh.FwdPipeConfig(info_path, json_path)
            )
            try:
                sniff = Sniffer(h1.ns, h1.iface)
                try:
                    out = frame("02:00:00:00:00:98", "02:00:00:00:00:01", b"hello-host" + bytes(40))
                    sh.PacketOut(out, egress_port="1").send()
                    assert out in sniff.wait(1)
                finally:
                    sniff.close()
                packet_in = sh.PacketIn()
                probe = frame("02:00:00:00:00:99", h1.mac, b"hello-controller" + bytes(40))
                send_from(h1.ns, h1.iface, probe)
                msgs = list(packet_in.sniff(timeout=3))
                assert msgs and msgs[0].packet.payload == probe
                assert msgs[0].packet.metadata[0].value == b"\x01"
            finally:
                sh.teardown()
        time.sleep(0.1)


class Compiled:
    """A switch process running one compiled program, with a primary client and name lookups."""

    def __init__(self, name: str, tmp: Path) -> None:
        self.p4info, bmv2, _, _ = compile_program(name, tmp)
        self._ctx = switch_process("--no-p4", device_id=0, cpu_port=None)
        addr, _ = self._ctx.__enter__()
        self.client = Client(addr, 0)
        stream = self.client.stream(election=1)
        assert stream.next("arbitration").arbitration.status.code == 0
        self.client.set_pipeline(self.p4info, json.dumps(bmv2).encode())

    def id(self, name: str) -> int:
        for group in ("tables", "actions", "action_profiles", "meters", "direct_meters", "value_sets"):
            for obj in getattr(self.p4info, group):
                if obj.preamble.name == name:
                    return obj.preamble.id
        raise KeyError(name)

    def close(self) -> None:
        self.client.close()
        self._ctx.__exit__(None, None, None)


@pytest.fixture
def compiled(tmp_path):
    made: list[Compiled] = []

    def make(name: str) -> Compiled:
        made.append(Compiled(name, tmp_path))
        return made[-1]

    yield make
    for c in made:
        c.close()


def exact_entry(table_id: int, key: bytes) -> pb.TableEntry:
    te = pb.TableEntry(table_id=table_id)
    te.match.add(field_id=1).exact.value = key
    return te


def write_codes(c: Client, *updates: pb.Update) -> list[str]:
    import grpc

    from ._p4rt_client import write_errors

    try:
        c.write(*updates)
    except grpc.RpcError as e:
        return [code for code, _ in write_errors(e)]
    return ["OK"] * len(updates)


def test_action_profile_members_groups_and_indirect_entries(compiled) -> None:
    sw = compiled("table_action_profile_selector")
    c = sw.client
    sel, prof = sw.id("MyIngress.as"), sw.id("MyIngress.ap")
    set_port = sw.id("MyIngress.set_port")

    def member(profile: int, mid: int, port: int) -> pb.Entity:
        m = pb.ActionProfileMember(action_profile_id=profile, member_id=mid)
        m.action.action_id = set_port if profile == sel else sw.id("MyIngress.set_r1")
        m.action.params.add(param_id=1, value=bytes([port]))
        return pb.Entity(action_profile_member=m)

    def group(gid: int, *mids: int) -> pb.Entity:
        g = pb.ActionProfileGroup(action_profile_id=sel, group_id=gid, max_size=8)
        for mid in mids:
            g.members.add(member_id=mid, weight=1)
        return pb.Entity(action_profile_group=g)

    c.write(
        update("INSERT", member(sel, 1, 1)),
        update("INSERT", member(sel, 2, 2)),
        update("INSERT", member(prof, 7, 3)),
    )
    assert {
        e.action_profile_member.member_id
        for e in c.read(pb.Entity(action_profile_member=pb.ActionProfileMember()))
    } == {1, 2, 7}
    assert write_codes(c, update("INSERT", member(sel, 1, 5))) == ["ALREADY_EXISTS"]
    c.write(update("INSERT", group(10, 1, 2)))
    (g,) = c.read(group(10))
    assert [m.member_id for m in g.action_profile_group.members] == [
        1,
        2,
    ] and g.action_profile_group.max_size == 8
    assert write_codes(c, update("INSERT", group(11, 9))) == ["NOT_FOUND"]  # no member 9
    te = exact_entry(sw.id("MyIngress.t_sel"), b"\x00\x05")
    te.action.action_profile_group_id = 10
    te2 = exact_entry(sw.id("MyIngress.t_prof"), b"\x00\x06")
    te2.action.action_profile_member_id = 7
    c.write(update("INSERT", pb.Entity(table_entry=te)), update("INSERT", pb.Entity(table_entry=te2)))
    (got,) = c.read(pb.Entity(table_entry=pb.TableEntry(table_id=sw.id("MyIngress.t_prof"))))
    assert got.table_entry.action.action_profile_member_id == 7
    bad = exact_entry(sw.id("MyIngress.t_prof"), b"\x00\x07")
    bad.action.action.action_id = set_port  # a direct action on an indirect table
    missing = exact_entry(sw.id("MyIngress.t_prof"), b"\x00\x08")
    missing.action.action_profile_member_id = 99
    assert write_codes(
        c, update("INSERT", pb.Entity(table_entry=bad)), update("INSERT", pb.Entity(table_entry=missing))
    ) == [
        "INVALID_ARGUMENT",
        "NOT_FOUND",
    ]
    # members in use cannot go
    assert (
        write_codes(c, update("DELETE", member(prof, 7, 0)), update("DELETE", group(10)))
        == ["FAILED_PRECONDITION"] * 2
    )
    c.write(update("DELETE", pb.Entity(table_entry=te2)), update("DELETE", member(prof, 7, 0)))


def test_direct_and_indirect_meters(compiled, tmp_path) -> None:
    sw = compiled("table_direct_counter_meter")
    c = sw.client
    te = exact_entry(sw.id("MyIngress.t"), b"\x00\x01")
    te.action.action.action_id = sw.id("MyIngress.metered")
    te.action.action.params.add(param_id=1, value=b"\x02")
    te.meter_config.cir, te.meter_config.cburst, te.meter_config.pir, te.meter_config.pburst = (
        1000,
        10,
        2000,
        20,
    )
    c.write(update("INSERT", pb.Entity(table_entry=te)))
    req = pb.TableEntry(table_id=sw.id("MyIngress.t"))
    req.meter_config.SetInParent()
    (got,) = c.read(pb.Entity(table_entry=req))
    assert got.table_entry.meter_config == te.meter_config
    dm = pb.DirectMeterEntry(table_entry=exact_entry(sw.id("MyIngress.t"), b"\x00\x01"))
    dm.config.cir, dm.config.cburst, dm.config.pir, dm.config.pburst = 5000, 50, 6000, 60
    c.write(update("MODIFY", pb.Entity(direct_meter_entry=dm)))
    (got,) = c.read(
        pb.Entity(
            direct_meter_entry=pb.DirectMeterEntry(table_entry=pb.TableEntry(table_id=sw.id("MyIngress.t")))
        )
    )
    assert got.direct_meter_entry.config == dm.config

    sw2 = compiled("extern_meter_indirect")
    meter = sw2.id("MyIngress.pm")
    me = pb.MeterEntry(meter_id=meter)
    me.index.index = 3
    me.config.cir, me.config.cburst, me.config.pir, me.config.pburst = 100, 1, 200, 2
    sw2.client.write(update("MODIFY", pb.Entity(meter_entry=me)))
    cells = sw2.client.read(pb.Entity(meter_entry=pb.MeterEntry(meter_id=meter)))
    assert (
        len(cells) == 16
        and cells[3].meter_entry.config == me.config
        and not cells[2].meter_entry.HasField("config")
    )
    reset = pb.MeterEntry(meter_id=meter)
    reset.index.index = 3
    sw2.client.write(update("MODIFY", pb.Entity(meter_entry=reset)))
    assert not sw2.client.read(pb.Entity(meter_entry=reset))[0].meter_entry.HasField("config")


def test_const_table_with_range_and_optional_matches(compiled) -> None:
    """`const entries` are read back (is_const, priorities N..1, don't care fields omitted) and
    cannot be changed."""
    sw = compiled("table_range_optional")
    c = sw.client
    tid = sw.id("MyIngress.trange")
    got = [e.table_entry for e in c.read(pb.Entity(table_entry=pb.TableEntry(table_id=tid)))]
    assert len(got) == 5 and all(e.is_const for e in got)
    by_priority = {e.priority: e for e in got}
    assert sorted(by_priority) == [1, 2, 3, 4, 5]
    first = by_priority[5]  # (10..20, 1, 0) -> 1
    assert [m.field_id for m in first.match] == [1, 2, 3]
    assert (first.match[0].range.low, first.match[0].range.high) == (b"\x0a", b"\x14")
    assert first.match[1].optional.value == b"\x01" and first.match[2].exact.value == b"\x00"
    assert [m.field_id for m in by_priority[4].match] == [1, 3]  # y is a wildcard
    assert [m.field_id for m in by_priority[1].match] == [3]  # (any, *, 9)
    te = pb.TableEntry()
    te.CopyFrom(first)
    te.is_const = False
    te.priority = 50
    assert write_codes(c, update("INSERT", pb.Entity(table_entry=te))) == ["PERMISSION_DENIED"]
    te.priority = 5
    assert write_codes(c, update("MODIFY", pb.Entity(table_entry=te))) == ["PERMISSION_DENIED"]
    assert write_codes(c, update("DELETE", pb.Entity(table_entry=te))) == ["PERMISSION_DENIED"]
    assert len(c.read(pb.Entity(table_entry=pb.TableEntry(table_id=tid)))) == 5


def test_parser_value_set(compiled) -> None:
    sw = compiled("parser_value_set")
    vs_id = sw.id("MyParser.custom_types")
    vs = pb.ValueSetEntry(value_set_id=vs_id)
    for v in (b"\x12\x34", b"\x56\x78"):
        vs.members.add().match.add(field_id=1).exact.value = v
    sw.client.write(update("MODIFY", pb.Entity(value_set_entry=vs)))
    (got,) = sw.client.read(pb.Entity(value_set_entry=pb.ValueSetEntry(value_set_id=vs_id)))
    assert sorted(m.match[0].exact.value for m in got.value_set_entry.members) == [b"\x12\x34", b"\x56\x78"]
