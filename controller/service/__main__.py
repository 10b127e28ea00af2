"""`python -m controller.service`: serve the REST API for one network (normally started by `tributary run`).

The network comes from a JSON file with `topology` (controller.service.topology) and `pipeline`
(`p4info` and `device_config` paths): the state file `tributary run --detach` writes has both.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from controller.service.auth import load_admin_token
from controller.service.bodylimit import DEFAULT_MAX_BODY
from controller.service.quotas import DEFAULT_JOBS, DEFAULT_ROUNDS, DEFAULT_SLOTS, Quotas
from controller.service.switches import SwitchPool, load_pipeline
from controller.service.topology import Topology

DEFAULT_LISTEN = "127.0.0.1:8080"


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"--listen wants HOST:PORT, e.g. {DEFAULT_LISTEN}; got {text!r}")
    return host or "127.0.0.1", int(port)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m controller.service",
        description="The Tributary controller: REST API for tenants and INC jobs over the switches' P4Runtime. "
        "The admin token comes from $TRIBUTARY_ADMIN_TOKEN or --admin-token-file; it is never logged.",
    )
    p.add_argument("--state", type=Path, required=True, help="JSON file with 'topology' and 'pipeline'")
    p.add_argument("--db", type=Path, required=True, help="SQLite database (created if missing)")
    p.add_argument(
        "--listen",
        type=parse_listen,
        default=parse_listen(DEFAULT_LISTEN),
        help=f"HOST:PORT of the REST API (default {DEFAULT_LISTEN}: loopback only)",
    )
    p.add_argument("--admin-token-file", type=Path, help="file holding the admin token")
    p.add_argument(
        "--monitor-interval", type=float, default=2.0, help="seconds between switch checks (0: off)"
    )
    q = p.add_argument_group("limits")
    q.add_argument(
        "--quota-jobs", type=_positive, default=DEFAULT_JOBS, help=f"jobs per tenant (default {DEFAULT_JOBS})"
    )
    q.add_argument(
        "--quota-slots",
        type=_positive,
        default=DEFAULT_SLOTS,
        help=f"slots per tenant over all its switches and rounds (default {DEFAULT_SLOTS})",
    )
    q.add_argument(
        "--quota-rounds",
        type=_positive,
        default=DEFAULT_ROUNDS,
        help=f"rounds per job's schedule (default {DEFAULT_ROUNDS})",
    )
    q.add_argument(
        "--max-body",
        type=_positive,
        default=DEFAULT_MAX_BODY,
        help=f"largest request body in bytes (default {DEFAULT_MAX_BODY}); larger ones get 413",
    )
    return p


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"want a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"want 1 or more, got {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    log = logging.getLogger("tributary.controller")
    try:
        token = load_admin_token(args.admin_token_file)
        doc = json.loads(args.state.read_text())
        topology = Topology.from_json(doc["topology"])
        pipeline = load_pipeline(Path(doc["pipeline"]["p4info"]), Path(doc["pipeline"]["device_config"]))
    except (ValueError, OSError, KeyError) as exc:
        print(f"controller: error: {exc}", file=sys.stderr)
        return 2
    import uvicorn

    from controller.service.app import create_app
    from controller.service.manager import JobManager
    from controller.service.store import Store

    host, port = args.listen
    if host not in ("127.0.0.1", "localhost", "::1"):
        log.warning("the REST API listens on %s, not only loopback: protect the tokens", host)
    store = Store(args.db)
    quotas = Quotas(args.quota_jobs, args.quota_slots, args.quota_rounds)
    manager = JobManager(topology, SwitchPool(topology, pipeline), store, token, quotas=quotas)
    report = manager.start(monitor_interval_s=args.monitor_interval or None)
    log.info(
        "reconciled %d switch(es): %d inserted, %d deleted; %d job(s) in the store",
        len(report.switches),
        report.total("inserted"),
        report.total("deleted"),
        len(store.jobs()),
    )
    try:
        uvicorn.run(
            create_app(manager, max_body=args.max_body),
            host=host,
            port=port,
            log_level="info",
            access_log=True,
        )
    finally:
        manager.close()
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
