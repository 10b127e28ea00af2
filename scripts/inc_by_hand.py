#!/usr/bin/env python3
"""Hand-crafted INC packets into one switch, and the results sniffed on the workers. Needs root.

    sudo .venv/bin/python scripts/inc_by_hand.py

Brings up one site (FRA: one p4kit-switch, three worker hosts), installs an aggregation job of tenant 7
over the three workers through the controller, then, from inside each worker's namespace, sends one
scapy-built INC packet (chunk 0, every value = 1, 10, 100) and sniffs what comes back: one result per
worker with every value 111 and count 3. Then worker 2 sends its contribution again, as after a lost
result: only worker 2 gets the result again, flagged RETRANSMIT. Adapt the packets below to try
duplicates, other chunks, unknown tenants or truncated packets, and watch `inc_stats` move.
"""

from __future__ import annotations

import argparse
import json
import sys

SNIFF_SECONDS = 6.0


def send_mode(args: argparse.Namespace) -> None:
    """Runs inside a worker's namespace: send one INC contribution built with scapy."""
    from scapy.all import IP, UDP, Ether, conf, sendp

    from edge.protocol import INC_LANES, INC_UDP_PORT, worker_port
    from edge.scapy_inc import INC, INCValues

    flags = "RETRANSMIT" if args.retransmit else 0
    pkt = (
        Ether(dst=args.gw_mac)
        / IP(dst=args.gw_ip)
        / UDP(sport=worker_port(args.tenant), dport=INC_UDP_PORT)  # scapy fills in the checksum
        / INC(tenant=args.tenant, chunk=0, slot=0, flags=flags, epoch=args.epoch)
        / INCValues(values=[args.value] * INC_LANES)
    )
    sendp(pkt, iface=conf.iface, verbose=False)


def sniff_mode(args: argparse.Namespace) -> None:
    """Runs inside a worker's namespace: print every INC result that arrives, as JSON lines."""
    from scapy.all import UDP, sniff

    from edge.protocol import worker_port
    from edge.scapy_inc import INC, INCValues

    def show(p) -> None:  # type: ignore[no-untyped-def]
        if INC in p:
            inc = p[INC]
            print(
                json.dumps(
                    {
                        "from": p["IP"].src,
                        "chunk": inc.chunk,
                        "count": inc.count,
                        "flags": str(inc.flags),
                        "values": sorted(set(p[INCValues].values)),
                    }
                ),
                flush=True,
            )

    port = worker_port(args.tenant)
    sniff(
        iface=args.iface,
        started_callback=lambda: print("READY", flush=True),
        lfilter=lambda p: UDP in p and p[UDP].dport == port,  # a Python filter: no libpcap needed
        prn=show,
        timeout=args.seconds,
        store=False,
    )


def lab() -> int:
    from controller.inc.allocation import Allocator
    from controller.inc.install import JobInstaller
    from controller.inc.jobs import plan_job
    from controller.p4rt import P4InfoIndex
    from topo.options import require_root
    from topo.session import running_wan

    if not require_root("inc_by_hand"):
        return 1
    wan_args = argparse.Namespace(
        topology=None,
        sites="FRA",
        rate=None,
        loss=None,
        workers_per_site=3,
        link_mode="auto",
        switch_binary=None,
        pcap=True,
        run_dir=None,
        trace=True,
    )
    tenant = 7
    with running_wan(wan_args, label="inc-by-hand") as rw:
        fabric = rw.network.fabric
        workers = ["FRAw1", "FRAw2", "FRAw3"]
        plan = plan_job(fabric, Allocator([s.name for s in fabric.switches]), tenant, [[workers]], nslots=4)
        index = P4InfoIndex(rw.pipeline.p4info)
        JobInstaller(rw.conns, index, print).install(plan)
        sw = fabric.switch("FRA")
        me = [sys.executable, __file__]
        # the job's epoch: the switches drop INC packets of any other (try a wrong one: inc_stats 9 moves)
        common = ["--tenant", str(tenant), "--epoch", str(plan.epoch)]

        def run_round(senders: list[tuple[str, int, bool]]) -> None:
            sniffers = {
                w: rw.network.host(w).popen(
                    [*me, "--sniff", "--iface", f"{w}-eth0", "--seconds", str(SNIFF_SECONDS), *common]
                )
                for w in workers
            }
            for proc in sniffers.values():  # wait until every sniffer listens
                assert proc.stdout is not None
                while (line := proc.stdout.readline()) and line.strip() != b"READY":
                    print("   ", line.decode(errors="replace").rstrip())
                if not line:
                    raise RuntimeError("a sniffer exited before it was ready (see above)")
            for w, value, retransmit in senders:
                cmd = [
                    *me,
                    "--send",
                    "--value",
                    str(value),
                    "--gw-ip",
                    sw.inc_ip,
                    "--gw-mac",
                    sw.inc_mac,
                    *common,
                ]
                if retransmit:
                    cmd.append("--retransmit")
                print(f"{w} sends chunk 0 with every value {value}{' (RETRANSMIT)' if retransmit else ''}")
                rw.network.host(w).popen(cmd).wait()
            for w, proc in sniffers.items():
                out, _ = proc.communicate()
                lines = [ln for ln in out.decode().splitlines() if ln.startswith("{")]
                print(f"  {w} received: {lines if lines else 'nothing'}")

        print("\n== three contributions: every worker gets the sum ==")
        run_round([("FRAw1", 1, False), ("FRAw2", 10, False), ("FRAw3", 100, False)])
        print("\n== worker 2 lost its result and sends again: only worker 2 gets it, flagged RETRANSMIT ==")
        run_round([("FRAw2", 10, True)])
        stats = rw.conns["FRA"].read([index.counter_entry("inc_stats")])
        names = [
            "malformed",
            "unknown tenant",
            "not a child",
            "stale",
            "duplicate",
            "absorbed",
            "completed",
            "re-sent",
            "result down",
            "wrong epoch",
            "bad checksum",
        ]
        counts = {e.counter_entry.index.index: e.counter_entry.data.packet_count for e in stats}
        print("\ninc_stats:", {n: counts.get(i, 0) for i, n in enumerate(names)})
        print(f"switch trace and pcaps: {rw.run_dir}/logs, {rw.run_dir}/pcap")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--send", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--sniff", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tenant", type=int, default=7, help=argparse.SUPPRESS)
    ap.add_argument("--epoch", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--value", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--retransmit", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--gw-ip", help=argparse.SUPPRESS)
    ap.add_argument("--gw-mac", help=argparse.SUPPRESS)
    ap.add_argument("--seconds", type=float, default=SNIFF_SECONDS, help=argparse.SUPPRESS)
    ap.add_argument("--iface", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.send:
        send_mode(args)
        return 0
    if args.sniff:
        sniff_mode(args)
        return 0
    return lab()


if __name__ == "__main__":
    sys.exit(main())
