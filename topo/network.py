"""The emulated WAN in Mininet: one P4 switch per site, its worker and edge hosts, and the WAN links
shaped with real inter-site latencies."""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from mininet.link import Link, TCLink
from mininet.log import setLogLevel
from mininet.net import Mininet
from mininet.node import Host

from controller.fabric import Fabric
from topo import addressing, ledger, linkmode
from topo.switch_node import P4RuntimeSwitch, default_switch_binary
from topo.wan import Wan

CPU_PORT = 255
_PING_TIME = re.compile(r"time=([\d.]+) ms")


@dataclass
class WanNetworkConfig:
    wan: Wan
    run_dir: Path
    link_mode: str = "auto"  # "auto" | "netem" | "switch"
    switch_binary: str | None = None  # default: p4kit-switch
    pcap: bool = False
    trace: bool = False  # per-packet switch traces in logs/<site>.log


def link_spec(rtt_ms: float, rate_mbit: float, loss_pct: float, jitter_ms: float) -> str:
    """p4kit-switch's --link shaping for one direction of a link (half the RTT each way)."""
    spec = f"delay={rtt_ms / 2:g},rate={rate_mbit:g}"
    if jitter_ms:
        spec += f",jitter={jitter_ms:g}"
    if loss_pct:
        spec += f",loss={loss_pct:g}"
    return spec


def access_qdisc(intf: str, rate_mbit: float) -> str:
    """The tc command that shapes a worker's sending direction of its access link: a token bucket at the
    access rate (htb and tbf work on this kernel, netem does not). The bucket holds about 4 ms of bytes
    (at least two full frames), so bursts stay short; its queue is 1000 frames, like the switch's
    egress queue on the other direction, and a socket that fills it blocks rather than loses."""
    bps = rate_mbit * 1e6
    burst = max(2 * 1514, int(bps / 8 * 0.004))
    return f"tc qdisc replace dev {intf} root tbf rate {bps:.0f}bit burst {burst} limit {1000 * 1514}"


def shape_access(host: Host, rate_mbit: float) -> None:
    """Shape the worker-to-switch direction of a host's access link at its sending end, as the switch
    shapes every other direction at its egress."""
    for intf in host.intfList():
        if intf.name != "lo":
            out = host.cmd(access_qdisc(intf.name, rate_mbit) + " 2>&1; echo rc=$?")
            if not out.strip().endswith("rc=0"):
                raise RuntimeError(f"{host.name}: cannot shape {intf.name} at {rate_mbit:g} Mbit/s: {out}")


@dataclass
class WanNetwork:
    """Start with `start()` (or `with WanNetwork(cfg) as net:`), stop with `stop()`: nothing stays behind."""

    config: WanNetworkConfig
    net: Mininet | None = None
    link_mode: str = ""
    fabric: Fabric = field(init=False)
    record: ledger.Record | None = None  # what this run started, for `tributary clean` after a crash

    def __post_init__(self) -> None:
        self.fabric = addressing.fabric(self.config.wan)

    @property
    def wan(self) -> Wan:
        return self.config.wan

    def build(self) -> Mininet:
        setLogLevel("warning")
        cfg = self.config
        self.link_mode = linkmode.resolve(cfg.link_mode)
        binary = cfg.switch_binary or default_switch_binary()
        log_dir = cfg.run_dir / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        pcap_dir = cfg.run_dir / "pcap" if cfg.pcap else None
        if pcap_dir:
            pcap_dir.mkdir(parents=True, exist_ok=True)
        ports = addressing.wan_port_plan(cfg.wan)
        net = Mininet(
            controller=None, build=False, autoSetMacs=False, autoStaticArp=False, waitConnected=False
        )
        for sw in self.fabric.switches:
            specs: dict[int, str] = {}
            access = cfg.wan.access_rate_mbit
            if self.link_mode == "switch":
                if access:  # the access links' switch-to-worker direction (the other: shape_access)
                    for h in sw.hosts:
                        if h.role == "worker":
                            specs[h.port] = f"rate={access:g}"
                for p in ports:
                    if p.site == sw.name:
                        link = cfg.wan.link(p.site, p.peer)
                        assert link is not None
                        specs[p.port] = link_spec(link.rtt_ms, link.rate_mbit, link.loss_pct, link.jitter_ms)
            net.addSwitch(
                sw.name,
                cls=P4RuntimeSwitch,
                binary=binary,
                device_id=sw.device_id,
                grpc_addr=sw.grpc_addr,
                log_path=log_dir / f"{sw.name}.log",
                pcap_dir=pcap_dir,
                link_specs=specs,
                cpu_port=CPU_PORT,
                trace=cfg.trace,
                record=self.record,
            )
            for h in sw.hosts:
                net.addHost(h.name, cls=Host, ip=f"{h.ip}/8", mac=h.mac)
                if access and h.role == "worker" and self.link_mode == "netem":
                    net.addLink(h.name, sw.name, port2=h.port, cls=TCLink, bw=access)
                else:
                    net.addLink(h.name, sw.name, port2=h.port, cls=Link)
        port_of = {(p.site, p.peer): p.port for p in ports}
        for link in cfg.wan.links:
            pa, pb = port_of[(link.a, link.b)], port_of[(link.b, link.a)]
            if self.link_mode == "netem":
                shaping = {
                    "delay": f"{link.rtt_ms / 2:g}ms",
                    "bw": link.rate_mbit,
                    "loss": link.loss_pct or None,
                }
                if link.jitter_ms:
                    shaping["jitter"] = f"{link.jitter_ms:g}ms"
                net.addLink(link.a, link.b, port1=pa, port2=pb, cls=TCLink, **shaping)
            else:
                net.addLink(link.a, link.b, port1=pa, port2=pb, cls=Link)
        return net

    def start(self) -> None:
        self.record = ledger.for_this_process(self.config.run_dir)
        self.net = self.build()
        self._record_nodes(self.net)
        try:
            self.net.build()
            for host in self.net.hosts:
                self._setup_host(host)
            if self.wan.access_rate_mbit and self.link_mode == "switch":
                for sw in self.fabric.switches:
                    for h in sw.hosts:
                        if h.role == "worker":
                            shape_access(self.net.get(h.name), self.wan.access_rate_mbit)
            self.net.staticArp()
            for sw in self.fabric.switches:
                for h in sw.hosts:
                    self.net.get(h.name).setARP(sw.inc_ip, sw.inc_mac)
            self.net.start()
        except BaseException:
            self.stop()
            raise

    def _record_nodes(self, net: Mininet) -> None:
        """Every node's shell (a host's holds its network namespace) and the switches' interfaces,
        which live in the root namespace; the hosts' ends go with their namespaces."""
        assert self.record is not None
        for node in [*net.hosts, *net.switches]:
            if node.pid:
                self.record.add_process(node.pid, f"Mininet shell of {node.name}")
        self.record.add_interfaces([i.name for sw in net.switches for i in sw.intfList() if i.name != "lo"])

    @staticmethod
    def _setup_host(host: Host) -> None:
        host.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1")
        # kept connections keep their congestion window across the pause between two collectives, as
        # WAN deployments of host libraries configure it (the kernel's default restarts slow start after
        # an idle RTO, which makes every allreduce of a kept connection start cold)
        host.cmd("sysctl -qw net.ipv4.tcp_slow_start_after_idle=0")
        for intf in host.intfList():
            host.cmd(f"ethtool -K {intf.name} tx off rx off tso off gso off gro off >/dev/null 2>&1")

    def stop(self) -> None:
        if self.net is not None:
            net, self.net = self.net, None
            try:
                net.stop()
            finally:
                for sw in net.switches:
                    if isinstance(sw, P4RuntimeSwitch):
                        sw.stop(deleteIntfs=True)
            if self.record is not None:
                # the switches are gone; shells and interfaces go with Mininet's stop
                ledger.clean_record(self.record, ledger.Cleaned())
                self.record = None

    def __enter__(self) -> WanNetwork:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- measurements ------------------------------------------------------------------------------

    def host(self, name: str) -> Host:
        assert self.net is not None, "network not started"
        return self.net.get(name)

    def first_worker(self, site: str) -> str:
        return next(h.name for h in self.fabric.switch(site).hosts if h.role == "worker")

    def ping_rtts(
        self, pairs: list[tuple[str, str]], count: int = 5, interval: float = 0.2
    ) -> dict[tuple[str, str], float | None]:
        """Median RTT (ms) between the first workers of each pair of sites, all pairs pinged at once."""
        procs = {}
        for a, b in pairs:
            src = self.host(self.first_worker(a))
            dst_ip = self.fabric.host(self.first_worker(b))[1].ip
            procs[(a, b)] = src.popen(
                ["ping", "-n", "-c", str(count), "-i", str(interval), "-W", "2", dst_ip]
            )
        out: dict[tuple[str, str], float | None] = {}
        for key, proc in procs.items():
            text, _ = proc.communicate(timeout=count * interval + 30)
            times = [float(t) for t in _PING_TIME.findall(text.decode(errors="replace"))]
            out[key] = statistics.median(times) if times else None
        return out
