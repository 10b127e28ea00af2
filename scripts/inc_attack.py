#!/usr/bin/env python3
"""A hostile host on the emulated WAN: forged, stale, wrapping and corrupted INC packets, forged results
and spoofed sources, at a bounded rate for a bounded time. Run it inside a Mininet host while a job runs
(the Mininet tests do: tests/topo/test_inc_mininet.py), then read the switches' counters: every packet
lands in `inc_stats` (wrong epoch 9, not a child 2, bad checksum 10, stale 3, malformed 0),
`guard_stats(0)` (spoofed source) or `route_guard(1)` (addressed to a worker port), and the job's sums
stay exact.

    python scripts/inc_attack.py --iface TYOw1-eth0 --mac 00:00:0a:00:01:01 --ip 10.0.1.1 \\
        --switch-mac 00:00:0a:00:01:fe --switch-ip 10.0.1.254 --tenant 2 --epoch 12345 \\
        --victim-ip 10.0.1.2 --seconds 10 --rate 400

`--epoch` is what the attacker knows (an epoch of a job it belongs to, say); the attacks aimed at
another tenant use it and random guesses. Prints one JSON line: packets sent per attack.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import socket
import sys
import time

import numpy as np

from edge import protocol as P  # noqa: N812


def attacks(args: argparse.Namespace, rng: random.Random) -> dict[str, object]:
    """Name -> a function returning one frame of that attack."""
    values = np.full(P.INC_LANES, 1000, dtype=np.uint32)

    def contribution(tenant: int, chunk: int, epoch: int, src_ip: str | None = None, flags: int = 0) -> bytes:
        slot = chunk % 4
        header = P.IncHeader(tenant, 0, slot, chunk % P.SERIAL_MOD, flags=flags, epoch=epoch)
        return P.frame(
            args.mac,
            args.switch_mac,
            src_ip or args.ip,
            args.switch_ip,
            P.worker_port(tenant),
            P.INC_UDP_PORT,
            P.encode(header, values),
        )

    def corrupt(frame: bytes) -> bytes:
        at = rng.randrange(42, len(frame))
        return frame[:at] + bytes([frame[at] ^ 0x10]) + frame[at + 1 :]

    def forged_result(src_ip: str) -> bytes:
        header = P.IncHeader(args.tenant, 0, 0, 0, flags=P.F_RESULT, count=2, epoch=args.epoch)
        return P.frame(
            args.mac,
            args.switch_mac,
            src_ip,
            args.victim_ip,
            P.INC_UDP_PORT,
            P.worker_port(args.tenant),
            P.encode(header, values),
        )

    chunks = itertools.count()
    return {
        # the other tenant's id with the epoch the attacker knows, and with random guesses
        "known_epoch": lambda: contribution(args.tenant, next(chunks) % 64, args.epoch),
        "guessed_epoch": lambda: contribution(args.tenant, next(chunks) % 64, rng.getrandbits(32) or 1),
        # chunk numbers far ahead (what once stalled a tenant) and at the top of the space
        "wrapping_chunk": lambda: contribution(args.tenant, 0xFFFFFFFF, args.epoch),
        # posing as the victim worker (source guard) and as the switch (source guard)
        "spoofed_worker": lambda: contribution(
            args.tenant, next(chunks) % 64, args.epoch, src_ip=args.victim_ip
        ),
        "forged_result_spoofed": lambda: forged_result(args.switch_ip),
        # a result straight to the victim's result port, from the attacker's own address (route guard)
        "forged_result": lambda: forged_result(args.ip),
        "corrupted": lambda: corrupt(contribution(args.tenant, next(chunks) % 64, args.epoch)),
        "truncated": lambda: contribution(args.tenant, 0, args.epoch)[: rng.randrange(42, P.FRAME_LEN)],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag in ("--iface", "--mac", "--ip", "--switch-mac", "--switch-ip", "--victim-ip"):
        ap.add_argument(flag, required=True)
    ap.add_argument("--tenant", type=int, required=True, help="the tenant under attack")
    ap.add_argument("--epoch", type=int, default=1, help="an epoch the attacker knows")
    ap.add_argument("--seconds", type=float, default=5.0, help="how long to attack (default 5)")
    ap.add_argument("--rate", type=float, default=300.0, help="packets per second in all (default 300)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if not 0 < args.rate <= 5000 or not 0 < args.seconds <= 600:
        ap.error("--rate must be in (0, 5000] and --seconds in (0, 600]")
    rng = random.Random(args.seed)
    kinds = attacks(args, rng)
    sent = dict.fromkeys(kinds, 0)
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    sock.bind((args.iface, 0))
    end = time.monotonic() + args.seconds
    interval = 1.0 / args.rate
    next_at = time.monotonic()
    for name in itertools.cycle(kinds):
        now = time.monotonic()
        if now >= end:
            break
        if now < next_at:
            time.sleep(next_at - now)
        next_at += interval
        sock.send(kinds[name]())  # type: ignore[operator]
        sent[name] += 1
    print(json.dumps({"sent": sent}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
