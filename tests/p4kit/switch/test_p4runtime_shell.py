"""p4runtime-shell against a real p4kit-switch process, exactly as users drive simple_switch_grpc."""

from __future__ import annotations

import statistics
import time

import pytest
from p4.v1 import p4runtime_pb2

from ._p4rt_client import switch_process
from ._switch_programs import write_program
from ._switch_testnet import have_root_net, hosts_net, ping_rtts
from .test_ports import Sniffer, frame, send_from

sh = pytest.importorskip("p4runtime_sh.shell")
from p4runtime_sh.p4runtime import P4RuntimeWriteException  # noqa: E402

DEV = 1


@pytest.fixture
def program(tmp_path):
    return write_program(str(tmp_path))


@pytest.fixture
def shell(program):
    p4info_path, json_path = program
    with switch_process("--no-p4", device_id=DEV) as (addr, _):
        sh.setup(
            device_id=DEV, grpc_addr=addr, election_id=(0, 1), config=sh.FwdPipeConfig(p4info_path, json_path)
        )
        try:
            yield sh
        finally:
            sh.teardown()


def lpm(prefix: str, port: int, mac: str = "02:00:00:00:00:02"):
    te = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.ipv4_forward")
    te.match["hdr.ipv4.dstAddr"] = prefix
    te.action["dstAddr"] = mac
    te.action["port"] = str(port)
    return te


def read_lpm() -> list:
    return list(sh.TableEntry("MyIngress.ipv4_lpm").read())


def test_table_entry_lifecycle(shell) -> None:
    te = lpm("10.0.2.0/24", 2)
    te.insert()
    (got,) = read_lpm()
    assert got.match["hdr.ipv4.dstAddr"].lpm.prefix_len == 24
    with pytest.raises(P4RuntimeWriteException, match="ALREADY_EXISTS"):
        te.insert()
    te.action["port"] = "3"
    te.modify()
    assert read_lpm()[0].action["port"].value == b"\x03"
    te.delete()
    assert read_lpm() == []


def test_invalid_write_changes_nothing(shell) -> None:
    lpm("10.0.2.0/24", 2).insert()
    bad = lpm("10.0.3.0/24", 2)
    bad._update_msg()
    bad._entry.action.action.params[1].value = b"\x7f\xff"  # 15 bits for a bit<9> port
    update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    update.entity.table_entry.CopyFrom(bad._entry)
    with pytest.raises(P4RuntimeWriteException, match="INVALID_ARGUMENT"):
        sh.client.write_update(update)
    assert len(read_lpm()) == 1


def test_default_entry_multicast_and_counters(shell) -> None:
    te = sh.TableEntry("MyIngress.ipv4_lpm")(is_default=True, action="MyIngress.to_cpu")
    te.modify()
    (d,) = sh.TableEntry("MyIngress.ipv4_lpm")(is_default=True).read()
    assert d.is_default
    mg = sh.MulticastGroupEntry(7).add(1, 1).add(2, 1)
    mg.insert()
    (got,) = sh.MulticastGroupEntry(7).read()
    assert [(r._msg.egress_port, r._msg.instance) for r in got.replicas] == [(1, 1), (2, 1)]
    cells = list(sh.CounterEntry("MyIngress.port_counter").read())
    assert len(cells) == 512 and all(c.packet_count == 0 for c in cells)


# ------------------------------------------------------------------------------------- with real traffic
def _static_arp(net) -> None:
    h1, h2 = net.hosts
    net.exec(0, "ip", "neigh", "replace", h2.ip, "lladdr", h2.mac, "dev", h1.iface)
    net.exec(1, "ip", "neigh", "replace", h1.ip, "lladdr", h1.mac, "dev", h2.iface)


@pytest.mark.root
@pytest.mark.skipif(not have_root_net(), reason="needs root and iproute2")
def test_forwarding_counters_packet_in_and_out_on_veths(program, tmp_path) -> None:
    p4info_path, json_path = program
    pcap_dir = tmp_path / "pcap"
    with hosts_net(2, subnet="10.82.0") as net:
        h1, h2 = net.hosts
        s1, s2 = net.switch_ifaces
        _static_arp(net)
        args = ["-i", f"1@{s1}", "-i", f"2@{s2}", "--pcap", str(pcap_dir), "--link", "2:delay=10", json_path]
        with switch_process(*args, device_id=DEV) as (addr, _):
            sh.setup(
                device_id=DEV,
                grpc_addr=addr,
                election_id=(0, 1),
                config=sh.FwdPipeConfig(p4info_path, json_path),
            )
            try:
                lpm(f"{h2.ip}/32", 2, h2.mac).insert()
                lpm(f"{h1.ip}/32", 1, h1.mac).insert()
                rtts = ping_rtts(net, 0, 1, count=10, interval=0.05)
                assert len(rtts) >= 9
                assert (
                    10.0 <= statistics.median(rtts) < 14.0
                )  # 10 ms one way on port 2's egress (+ host latency)
                counts = {c.index: c.packet_count for c in sh.CounterEntry("MyIngress.port_counter").read()}
                assert counts[2] >= 9 and counts[1] >= 9

                acl = sh.TableEntry("MyIngress.acl")(action="MyIngress.to_cpu")
                acl.match["hdr.ethernet.etherType"] = "0x88b5&&&0xffff"
                acl.priority = 10
                acl.insert()
                packet_in = sh.PacketIn()
                probe = frame("02:00:00:00:00:99", h1.mac, b"to-the-controller" + bytes(40))
                send_from(h1.ns, h1.iface, probe)
                msgs = list(packet_in.sniff(timeout=3))
                assert msgs, "no PacketIn"
                pin = msgs[0].packet
                assert pin.payload == probe
                assert [(m.metadata_id, m.value) for m in pin.metadata] == [(1, b"\x01"), (2, b"\x00")]

                sniff = Sniffer(h2.ns, h2.iface)
                try:
                    out = frame("02:00:00:00:00:98", "02:00:00:00:00:01", b"from-the-controller" + bytes(40))
                    po = sh.PacketOut(out, egress_port="2")
                    po.send()
                    assert out in sniff.wait(1)
                finally:
                    sniff.close()
            finally:
                sh.teardown()
        time.sleep(0.1)
    assert (pcap_dir / f"{s1}_in.pcap").stat().st_size > 24
    assert (pcap_dir / f"{s2}_out.pcap").stat().st_size > 24
