#!/usr/bin/env python3
"""CPU cost of secure aggregation's masks (edge/secure.py): key agreement among N workers and mask
generation per 64-lane chunk, in-process (no network). The allreduce's own overhead on the WAN is
measured by `sudo tributary allreduce ... --secure --json` against the same command without it.

    .venv/bin/python scripts/bench_secure.py [--workers 6] [--elements 262144] [--json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from pathlib import Path

from edge.protocol import INC_LANES
from edge.secure import PairwiseMasks, publish_and_collect


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=6)
    ap.add_argument("--elements", type=int, default=262144, help="int32 values per worker")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.workers < 2 or args.elements < 1:
        ap.error("--workers must be at least 2 and --elements positive")
    board = Path(tempfile.mkdtemp(prefix="tributary-keys-"))
    masks: list = [None] * args.workers
    t0 = time.perf_counter()

    def agree(rank: int) -> None:
        key, peers = publish_and_collect(board, rank, args.workers)
        masks[rank] = PairwiseMasks(key, peers, rank, 1, 1)

    threads = [threading.Thread(target=agree, args=(r,)) for r in range(args.workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    agreement_s = time.perf_counter() - t0
    chunks = -(-args.elements // INC_LANES)
    c0 = time.process_time()
    rounds = 5
    for _ in range(rounds):
        masks[0].next(chunks)
    per_vector = (time.process_time() - c0) / rounds
    out = {
        "workers": args.workers,
        "chunks": chunks,
        "key_agreement_s_all_workers": round(agreement_s, 4),
        "mask_cpu_s_per_vector": round(per_vector, 5),
        "mask_cpu_us_per_chunk": round(per_vector / chunks * 1e6, 3),
    }
    print(json.dumps(out) if args.json else "\n".join(f"{k}: {v}" for k, v in out.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
