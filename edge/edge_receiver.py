"""A site worker's end of Edge-INC: the one stream of results its edge stage hands it, per round.

`python -m edge.edge_receiver SPEC.json`: binds EDGE_RESULT_PORT on the worker's address, collects the
results of the rounds it is told about, asks the stage again for chunks it missed (the site keeps each
round's result in its memory), and writes the last round's vector (.npy, chunks x 64 uint32), its
contribution count and when each round's first and last results arrived. A stage that never delivers
ends in a report with the error after `timeout_s`, never a hang.
"""

from __future__ import annotations

import json
import select
import socket
import sys
import time
from pathlib import Path

import numpy as np

from edge import edge_wire as w

ASK_AFTER_S = 1.0  # quiet time after which missing results of a round are asked for again


def receive(spec: dict) -> dict:
    rounds = {int(r["round"]): int(r["chunks"]) for r in spec["rounds"]}
    last = max(rounds) if rounds else None
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind((spec["ip"], w.EDGE_RESULT_PORT))
    sock.setblocking(False)
    have = {r: np.zeros(n, dtype=bool) for r, n in rounds.items()}
    first: dict[int, float] = {}
    done: dict[int, float] = {}
    result = np.zeros((rounds[last], w.LANES), dtype=np.uint32) if last is not None else None
    counts: set[int] = set()
    duplicates = 0
    deadline = time.time() + float(spec["timeout_s"])
    last_heard = time.time()
    buf = bytearray(2048)
    cpu0 = time.process_time()
    try:
        while last is not None and last not in done:
            now = time.time()
            if now > deadline:
                missing = {r: int((~h).sum()) for r, h in have.items() if r not in done}
                return {
                    "error": f"no complete result after {spec['timeout_s']} s; missing chunks per round {missing}"
                }
            if now - last_heard > ASK_AFTER_S and first:
                # only rounds the stage has started delivering can be asked for
                for r in sorted(first):
                    if r not in done:
                        chunks = [int(q) for q in np.flatnonzero(~have[r])]
                        for p in w.nack_packets(0, spec["tenant"], r, spec["epoch"], chunks):
                            sock.sendto(w.encode(p), (spec["stage_ip"], w.EDGE_REPAIR_PORT))
                last_heard = now
            readable, _, _ = select.select([sock], [], [], 0.1)
            if not readable:
                continue
            for p in w.drain(sock, buf):
                if p is None:
                    continue
                t = time.time()
                if not p.flags & w.F_RESULT or p.round not in have or p.tenant != spec["tenant"]:
                    continue
                if p.epoch != spec["epoch"] or not 0 <= p.chunk < rounds[p.round]:
                    continue
                last_heard = t
                h = have[p.round]
                if h[p.chunk]:
                    duplicates += 1
                    continue
                h[p.chunk] = True
                first.setdefault(p.round, t)
                if p.round == last:
                    assert result is not None
                    result[p.chunk] = p.lanes
                    counts.add(p.count)
                if h.all():
                    done[p.round] = t
    finally:
        sock.close()
    assert result is not None
    np.save(spec["out"], result)
    return {
        "count": sorted(counts),
        "first": {str(r): v for r, v in first.items()},
        "done": {str(r): v for r, v in done.items()},
        "duplicates": duplicates,
        "cpu_s": time.process_time() - cpu0,
    }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    spec = json.loads(Path(args[0]).read_text())
    report = receive(spec)
    Path(spec["report"]).write_text(json.dumps(report))
    return 0 if "error" not in report else 1


if __name__ == "__main__":
    sys.exit(main())
