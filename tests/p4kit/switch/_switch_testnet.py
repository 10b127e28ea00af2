"""Throw-away network namespaces and veth pairs for the switch's tests and benchmark.

Why a helper: every test that touches real interfaces needs the same shape -- hosts in their own
namespaces, the switch's ends of the veths in the root namespace -- with unique names (tests may run in
parallel with a live emulation) and a teardown that runs even when the test fails.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

from p4kit.switch.offloads import offloads_off_command


def have_root_net() -> bool:
    return os.geteuid() == 0 and shutil.which("ip") is not None


def sh(*args: str, check: bool = True, ns: str | None = None) -> subprocess.CompletedProcess:
    cmd = list(args)
    if ns is not None:
        cmd = ["ip", "netns", "exec", ns, *cmd]
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


@dataclass
class Host:
    ns: str
    iface: str  # the host's end, inside ns
    ip: str
    mac: str


@dataclass
class HostsNet:
    """Hosts h1..hN, each in a namespace, linked to switch ports 1..N (interfaces in the root ns)."""

    tag: str
    hosts: list[Host] = field(default_factory=list)
    switch_ifaces: list[str] = field(default_factory=list)

    def ports(self) -> dict[int, str]:
        return {i + 1: name for i, name in enumerate(self.switch_ifaces)}

    def exec(self, host: int, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return sh(*args, check=check, ns=self.hosts[host].ns)


def _disable_offloads(iface: str, ns: str | None) -> None:
    if shutil.which("ethtool"):  # see p4kit.switch.offloads for why
        sh(*offloads_off_command(iface), check=False, ns=ns)


@contextlib.contextmanager
def hosts_net(n_hosts: int = 2, subnet: str = "10.77.0") -> Iterator[HostsNet]:
    """Create the namespaces and veths; always remove them on exit."""
    tag = uuid.uuid4().hex[:6]
    net = HostsNet(tag)
    created_ns: list[str] = []
    created_links: list[str] = []
    try:
        for i in range(1, n_hosts + 1):
            ns = f"p4kt{tag}h{i}"
            sw_if = f"p4k{tag}s{i}"
            h_if = f"p4k{tag}h{i}"
            sh("ip", "netns", "add", ns)
            created_ns.append(ns)
            sh("ip", "link", "add", sw_if, "type", "veth", "peer", "name", h_if)
            created_links.append(sw_if)
            sh("ip", "link", "set", h_if, "netns", ns)
            mac = f"02:00:00:{int(tag[:2], 16):02x}:{int(tag[2:4], 16):02x}:{i:02x}"
            ip = f"{subnet}.{i}"
            sh("ip", "link", "set", h_if, "address", mac, ns=ns)
            sh("ip", "addr", "add", f"{ip}/24", "dev", h_if, ns=ns)
            sh("ip", "link", "set", h_if, "up", ns=ns)
            sh("ip", "link", "set", "lo", "up", ns=ns)
            sh("ip", "link", "set", sw_if, "up")
            sh("sysctl", "-qw", f"net.ipv6.conf.{sw_if}.disable_ipv6=1", check=False)
            sh("sysctl", "-qw", f"net.ipv6.conf.{h_if}.disable_ipv6=1", check=False, ns=ns)
            _disable_offloads(sw_if, None)
            _disable_offloads(h_if, ns)
            net.hosts.append(Host(ns, h_if, ip, mac))
            net.switch_ifaces.append(sw_if)
        yield net
    finally:
        for link in created_links:
            sh("ip", "link", "del", link, check=False)
        for ns in created_ns:
            sh("ip", "netns", "del", ns, check=False)


def ping_rtts(net: HostsNet, src: int, dst: int, count: int = 10, interval: float = 0.05) -> list[float]:
    """RTTs in ms of `count` pings from host src to host dst (indices into net.hosts)."""
    out = net.exec(
        src, "ping", "-c", str(count), "-i", str(interval), "-W", "2", "-n", net.hosts[dst].ip, check=False
    ).stdout
    rtts = []
    for line in out.splitlines():
        if "time=" in line:
            rtts.append(float(line.split("time=")[1].split()[0]))
    return rtts
