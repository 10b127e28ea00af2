"""Port I/O on real veths: forwarding, no echo of our own transmissions, pcap files, injection, CPU port."""

from __future__ import annotations

import os
import struct
import threading
import time

import pytest

from p4kit.switch.pcap import PcapWriter, read_pcap
from p4kit.switch.ports import ETH_P_ALL, PortError, PortLoop, parse_interface

from ._switch_testnet import have_root_net, hosts_net, sh


def frame(dst: str, src: str, payload: bytes, ethertype: int = 0x88B5) -> bytes:
    return (
        bytes.fromhex(dst.replace(":", ""))
        + bytes.fromhex(src.replace(":", ""))
        + struct.pack("!H", ethertype)
        + payload
    )


def test_parse_interface() -> None:
    assert parse_interface("3@veth1") == (3, "veth1")
    with pytest.raises(ValueError):
        parse_interface("veth1")


def test_pcap_roundtrip(tmp_path) -> None:
    w = PcapWriter(str(tmp_path / "x.pcap"))
    w.write(b"\x01" * 60, timestamp=1.5)
    w.write(b"\x02" * 1500, timestamp=2.25)
    w.close()
    data = (tmp_path / "x.pcap").read_bytes()
    assert struct.unpack("<IHHiIII", data[:24])[:3] == (0xA1B2C3D4, 2, 4)
    assert read_pcap(str(tmp_path / "x.pcap")) == [(1.5, b"\x01" * 60), (2.25, b"\x02" * 1500)]


@pytest.mark.root
def test_missing_interface_is_a_clear_error() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root")
    with pytest.raises(PortError, match="does not exist"):
        PortLoop({1: "p4k-nosuchif"}, lambda p, f: [])


class Sniffer:
    """Collects frames arriving on an interface inside a namespace (via a helper thread in that ns)."""

    def __init__(self, ns: str, iface: str) -> None:
        import subprocess
        import sys

        code = (
            "import socket,sys\n"
            f"s=socket.socket(socket.AF_PACKET,socket.SOCK_RAW,socket.htons({ETH_P_ALL}))\n"
            f"s.bind(({iface!r},0))\n"
            "s.settimeout(3)\n"
            "print('ready',flush=True)\n"
            "try:\n"
            "    while True:\n"
            "        d,a=s.recvfrom(65536)\n"
            "        if a[2]!=4: print(d.hex(),flush=True)\n"
            "except socket.timeout: pass\n"
        )
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, sys.executable, "-c", code], stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout.readline().strip() == "ready"
        self.frames: list[bytes] = []
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.frames.append(bytes.fromhex(line.strip()))

    def wait(self, n: int, timeout: float = 3.0) -> list[bytes]:
        end = time.monotonic() + timeout
        while len(self.frames) < n and time.monotonic() < end:
            time.sleep(0.01)
        return list(self.frames)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def send_from(ns: str, iface: str, data: bytes) -> None:
    import sys

    code = (
        f"import socket;s=socket.socket(socket.AF_PACKET,socket.SOCK_RAW);s.bind(({iface!r},0));"
        f"s.send(bytes.fromhex({data.hex()!r}))"
    )
    sh(sys.executable, "-c", code, ns=ns)


@pytest.mark.root
def test_forwarding_pcap_and_no_echo(tmp_path) -> None:
    if not have_root_net():
        pytest.skip("needs root and iproute2")
    seen: list[tuple[int, bytes]] = []

    def process(port: int, data: bytes) -> list[tuple[int, bytes]]:
        seen.append((port, data))
        return [(2 if port == 1 else 1, data)]

    with hosts_net(2, subnet="10.80.0") as net:
        h1, h2 = net.hosts
        loop = PortLoop(net.ports(), process, pcap_dir=str(tmp_path))
        loop.start()
        sniff = Sniffer(h2.ns, h2.iface)
        try:
            pkt = frame("02:00:00:00:00:99", h1.mac, b"hello-p4kit" + bytes(50))
            send_from(h1.ns, h1.iface, pkt)
            got = sniff.wait(1)
            time.sleep(0.2)
        finally:
            sniff.close()
            loop.stop()
        s1, s2 = net.switch_ifaces
    assert pkt in got
    # the switch saw the frame once, on port 1: its own transmission on port 2 did not come back
    assert [p for p, d in seen if d == pkt] == [1]
    assert [d for _, d in read_pcap(str(tmp_path / f"{s1}_in.pcap"))].count(pkt) == 1
    assert [d for _, d in read_pcap(str(tmp_path / f"{s2}_out.pcap"))].count(pkt) == 1
    assert (tmp_path / f"{s1}_out.pcap").exists() and (tmp_path / f"{s2}_in.pcap").exists()


@pytest.mark.root
def test_inject_and_cpu_port() -> None:
    if not have_root_net():
        pytest.skip("needs root and iproute2")
    to_cpu: list[bytes] = []

    def process(port: int, data: bytes) -> list[tuple[int, bytes]]:
        if port == 255:  # from the controller: out of port 2
            return [(2, data)]
        return [(255, data)]  # everything else to the controller

    with hosts_net(2, subnet="10.81.0") as net:
        h1, h2 = net.hosts
        loop = PortLoop(net.ports(), process, cpu_port=255, on_cpu=to_cpu.append)
        loop.start()
        sniff = Sniffer(h2.ns, h2.iface)
        try:
            out = frame("02:00:00:00:00:98", "02:00:00:00:00:01", b"packet-out" + bytes(50))
            loop.inject(255, out)
            pkt = frame("02:00:00:00:00:97", h1.mac, b"packet-in" + bytes(50))
            send_from(h1.ns, h1.iface, pkt)
            got = sniff.wait(1)
            end = time.monotonic() + 2
            while not to_cpu and time.monotonic() < end:
                time.sleep(0.01)
        finally:
            sniff.close()
            loop.stop()
    assert out in got
    assert pkt in to_cpu


@pytest.mark.root
def test_batches_go_to_process_batch_and_a_failing_batch_loses_only_itself() -> None:
    if not have_root_net():
        pytest.skip("needs root and iproute2")
    batches: list[list[bytes]] = []

    def process(port: int, data: bytes) -> list[tuple[int, bytes]]:
        raise AssertionError("frames from interfaces must go to process_batch")

    def process_batch(port: int, frames: list[bytes], on_error, sinks) -> list[tuple[int, bytes]]:
        batches.append(frames)
        if any(b"boom" in f for f in frames):
            raise RuntimeError("dataplane bug")
        return [(2 if port == 1 else 1, f) for f in frames]

    with hosts_net(2, subnet="10.82.0") as net:
        h1, h2 = net.hosts
        loop = PortLoop(net.ports(), process, process_batch=process_batch)
        loop.start()
        sniff = Sniffer(h2.ns, h2.iface)
        try:
            bad = frame("02:00:00:00:00:96", h1.mac, b"boom" + bytes(50))
            send_from(h1.ns, h1.iface, bad)
            end = time.monotonic() + 2
            while not loop.failures and time.monotonic() < end:
                time.sleep(0.01)
            good = frame("02:00:00:00:00:95", h1.mac, b"after-the-bug" + bytes(50))
            send_from(h1.ns, h1.iface, good)
            got = sniff.wait(1)
        finally:
            sniff.close()
            loop.stop()
    assert loop.failures >= 1
    assert good in got and bad not in got
    assert any(good in b for b in batches)


@pytest.mark.root
@pytest.mark.parametrize("vnet", [False, True])
def test_transmit_ring_sends_frames_intact_in_order(vnet: bool) -> None:
    """Both slot layouts (plain, and with a virtio_net_hdr asking for one linear copy) deliver every
    frame byte for byte and in order, from minimum size to a full 1500-byte MTU frame; a frame
    larger than a slot is refused (the port loop then sends it with send())."""
    if not have_root_net():
        pytest.skip("needs root and iproute2")
    import socket

    from p4kit.switch.rings import TX_FRAME_SIZE, TxRing

    with hosts_net(1, subnet="10.84.0") as net:
        h1 = net.hosts[0]
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        sock.bind((net.switch_ifaces[0], 0))
        ring = TxRing(sock, vnet=vnet)
        if ring.vnet != vnet:
            ring.close()
            sock.close()
            pytest.skip("this kernel refuses PACKET_VNET_HDR on a transmit ring")
        sniff = Sniffer(h1.ns, h1.iface)
        try:
            sent = [
                frame("02:00:00:00:00:93", "02:00:00:00:00:01", bytes([i]) * size)
                for i, size in enumerate((46, 100, 999, 1500, 46, 64))
            ]
            for f in sent:
                assert ring.put(f)
            assert not ring.put(bytes(TX_FRAME_SIZE))
            ring.flush()
            got = sniff.wait(len(sent))
        finally:
            sniff.close()
            ring.close()
            sock.close()
    assert [f for f in got if f in sent] == sent


@pytest.mark.root
def test_a_burst_of_thousands_waits_in_the_ring_while_the_dataplane_is_busy() -> None:
    """An INC worker's window sends thousands of chunks at once; the receive ring holds them until
    the loop reads them (a 512-slot ring dropped most of such a burst)."""
    if not have_root_net():
        pytest.skip("needs root and iproute2")
    import sys

    got: list[int] = []
    lock = threading.Lock()

    def process_batch(port: int, frames: list[bytes], on_error, sinks) -> list[tuple[int, bytes]]:
        got.extend(struct.unpack_from("!I", f, 14)[0] for f in frames)
        return []

    n = 3000
    with hosts_net(2, subnet="10.83.0") as net:
        h1, _ = net.hosts
        loop = PortLoop(net.ports(), lambda p, f: [], process_batch=process_batch, lock=lock)
        loop.start()
        try:
            with lock:  # the dataplane is busy: the loop stops at its first batch
                code = (
                    "import socket,struct;s=socket.socket(socket.AF_PACKET,socket.SOCK_RAW);"
                    f"s.bind(({h1.iface!r},0));h=bytes.fromhex('02000000009402000000000188b5')\n"
                    f"for i in range({n}): s.send(h+struct.pack('!I',i)+bytes(300))"
                )
                sh(sys.executable, "-c", code, ns=h1.ns)
            end = time.monotonic() + 5
            while len(got) < n and time.monotonic() < end:
                time.sleep(0.02)
        finally:
            loop.stop()
    assert sorted(got) == list(range(n))
