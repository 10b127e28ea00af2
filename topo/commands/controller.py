"""`tributary stop`, `tributary controller restart|status`, `tributary tenant ...` and `tributary job ...`.

The tenant and job commands are thin clients of the controller's REST API (docs/api.md): they find the
controller through the state file of `tributary run` (or --url) and send what curl would send.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import httpx

TOKEN_ENV = "TRIBUTARY_TOKEN"


def add_controller_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `tributary run` that concern the controller and the background mode."""
    g = parser.add_argument_group("the controller")
    g.add_argument(
        "--detach",
        action="store_true",
        help="bring the WAN and the controller up in the background and return ('tributary stop' ends them)",
    )
    g.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help="where the REST API listens (default 127.0.0.1:8080: loopback only)",
    )
    g.add_argument(
        "--db",
        type=Path,
        help="the controller's SQLite database (default: /var/lib/tributary/controller.db, or "
        "$TRIBUTARY_DATA_DIR/controller.db; it outlives the run, so tenants and jobs are kept)",
    )
    g.add_argument(
        "--state",
        type=Path,
        help="state file shared with stop/controller/job (default $TRIBUTARY_STATE or /run/tributary/state.json)",
    )
    g.add_argument("--no-controller", action="store_true", help="do not start the controller service")


def _state_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--state",
        type=Path,
        help="state file of the running WAN (default $TRIBUTARY_STATE or /run/tributary/state.json)",
    )


def _client_args(p: argparse.ArgumentParser, admin: bool = False) -> None:
    _state_arg(p)
    p.add_argument("--url", help="controller URL (default: from the state file, else http://127.0.0.1:8080)")
    who = (
        "the admin token (default: $TRIBUTARY_ADMIN_TOKEN, else the run's token file)"
        if admin
        else (f"your tenant token (default ${TOKEN_ENV})")
    )
    p.add_argument("--token", help=who)
    p.add_argument("--json", action="store_true", help="print the raw JSON answer")


def register(subparsers: argparse._SubParsersAction) -> None:
    stop = subparsers.add_parser(
        "stop",
        help="stop what 'tributary run --detach' started: controller, switches, Mininet",
        description="Stop the controller and the background WAN of 'tributary run --detach'. Should the WAN "
        "keeper be dead or not stop, remove what its run recorded as its own (processes, interfaces), and "
        "nothing else. The controller's database stays. Needs root.",
    )
    _state_arg(stop)
    stop.set_defaults(func=cmd_stop)

    ctl = subparsers.add_parser("controller", help="the controller service of a running WAN")
    ctl_sub = ctl.add_subparsers(dest="controller_command", metavar="ACTION", required=True)
    restart = ctl_sub.add_parser(
        "restart",
        help="restart only the controller: jobs, tenants and switch entries survive",
        description="Stop the controller service and start it again on the same database. On start it reads "
        "every switch over P4Runtime, re-installs what a job is missing and removes what belongs to no job. "
        "The WAN and the traffic on it keep going.",
    )
    _state_arg(restart)
    restart.set_defaults(func=cmd_controller_restart)
    status = ctl_sub.add_parser("status", help="is the controller up; where; how many jobs")
    _state_arg(status)
    status.set_defaults(func=cmd_controller_status)

    tenant = subparsers.add_parser("tenant", help="tenants of the controller (admin): create, list, delete")
    t_sub = tenant.add_subparsers(dest="tenant_command", metavar="ACTION", required=True)
    tc = t_sub.add_parser("create", help="create a tenant; prints its token (shown only once)")
    tc.add_argument("name", help="1-32 lower-case letters, digits, '-'")
    _client_args(tc, admin=True)
    tc.set_defaults(func=cmd_tenant, method="POST", path="/tenants")
    tl = t_sub.add_parser("list", help="list tenants")
    _client_args(tl, admin=True)
    tl.set_defaults(func=cmd_tenant, method="GET", path="/tenants")
    td = t_sub.add_parser("delete", help="delete a tenant and remove all its jobs")
    td.add_argument("name")
    _client_args(td, admin=True)
    td.set_defaults(func=cmd_tenant, method="DELETE", path="/tenants/{name}")

    job = subparsers.add_parser(
        "job",
        help="INC jobs on the controller: submit, list, show, delete (a REST client)",
        description=f"A thin client of the controller's REST API; authenticate with your tenant's token "
        f"(--token or ${TOKEN_ENV}).",
    )
    j_sub = job.add_subparsers(dest="job_command", metavar="ACTION", required=True)
    js = j_sub.add_parser(
        "submit",
        help="install a job: its trees, slots and multicast groups",
        description="Submit a job. A core-cliques or edge-cliques job rotates cliques of sites: --schedule "
        "auto asks the optimiser (with --memory and --size), or give the rounds, e.g. 'TYO+NYC/LON;NYC+LON' "
        "(rounds split by ';', cliques by '/', sites by '+'). The edge-* strategies run on the sites' edge "
        "stages (docs/edge-inc.md): --memory and --size are the stages' memory and the vector at real "
        "scale, --max-rate caps the pacing; the answer lists the spec every stage and receiver runs with.",
        epilog="examples:\n"
        "  tributary job submit --workers TYOw1,NYCw1,LONw1\n"
        "  tributary job submit --workers TYOw1,NYCw1,LONw1 --strategy core-cliques --schedule auto --memory 4MB\n"
        "  tributary job submit --workers TYOw1,NYCw1,LONw1 --strategy core-cliques --schedule 'TYO+NYC;NYC+LON'\n"
        "  tributary job submit --workers TYOw1,NYCw1,LONw1 --strategy edge-all-to-all --memory 256MB --max-rate 1.3\n"
        "  tributary job submit --workers TYOw1,NYCw1,LONw1 --strategy edge-cliques --schedule auto --memory 4MB\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    js.add_argument("--workers", required=True, help="comma-separated worker hosts, e.g. TYOw1,NYCw1")
    js.add_argument(
        "--strategy",
        choices=("core-tree", "core-cliques", "ring-baseline", "edge-cliques", "edge-all-to-all"),
        default="core-tree",
    )
    js.add_argument(
        "--format", choices=("int32", "float32"), default="int32", help="number format (default int32)"
    )
    js.add_argument("--slots", type=int, default=256, help="slots per switch and round (default 256)")
    js.add_argument("--name", default="", help="a label")
    js.add_argument("--schedule", help="core-/edge-cliques: 'auto' or rounds like 'TYO+NYC/LON;NYC+LON'")
    js.add_argument(
        "--memory", default="4MB", help="auto schedule and edge-*: edge memory per site (default 4MB)"
    )
    js.add_argument(
        "--size", default="64MB", help="auto schedule and edge-*: bytes per site and round (default 64MB)"
    )
    js.add_argument(
        "--max-rate", type=float, metavar="MBIT", help="edge-*: pace the streams for at most this link rate"
    )
    _client_args(js)
    js.set_defaults(func=cmd_job_submit)
    jl = j_sub.add_parser("list", help="your jobs")
    _client_args(jl)
    jl.set_defaults(func=cmd_job, method="GET", path="/jobs")
    jsh = j_sub.add_parser("show", help="a job: state, trees per round, slots per switch, counters")
    jsh.add_argument("id", type=int)
    _client_args(jsh)
    jsh.set_defaults(func=cmd_job, method="GET", path="/jobs/{id}")
    jd = j_sub.add_parser("delete", help="remove a job and every entry it has on the switches")
    jd.add_argument("id", type=int)
    _client_args(jd)
    jd.set_defaults(func=cmd_job, method="DELETE", path="/jobs/{id}")


# --- background life cycle -----------------------------------------------------------------------------


def cmd_stop(args: argparse.Namespace) -> int:
    from topo import detach
    from topo.options import require_root

    if not require_root("stop"):
        return 1
    path = detach.state_path(args.state)
    if not path.exists():
        print(f"nothing running (no {path}); 'tributary clean' removes leftovers of a crashed run")
        return 0
    try:
        for line in detach.stop_all(path):
            print(line)
    except detach.DetachError as exc:
        print(f"tributary stop: error: {exc}", file=sys.stderr)
        return 1
    print("stopped")
    return 0


def cmd_controller_restart(args: argparse.Namespace) -> int:
    from topo import detach

    path = detach.state_path(args.state)
    try:
        state = detach.restart_controller(path)
    except detach.DetachError as exc:
        print(f"tributary controller restart: error: {exc}", file=sys.stderr)
        return 1
    ctl = state["controller"]
    print(
        f"controller restarted (pid {ctl['pid']}) at {ctl['url']}; it reconciled the switches with its database"
    )
    return 0


def cmd_controller_status(args: argparse.Namespace) -> int:
    from topo import detach

    try:
        state = detach.read_state(detach.state_path(args.state))
    except detach.DetachError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    ctl = detach.controller_of(state)
    keeper = f"WAN keeper: {'up' if detach.alive(state.get('pid')) else 'DOWN'} (pid {state.get('pid')})"
    if not ctl:
        print("controller: none (the run was started with --no-controller)")
        print(keeper)
        return 1
    up = detach.alive(ctl.get("pid"))
    restarts = int(ctl.get("restarts", 0))
    print(
        f"controller: {'up' if up else 'DOWN'} (pid {ctl.get('pid')}) at {ctl['url']}, db {ctl['db']}, "
        f"restarted {restarts} time(s)"
    )
    print(keeper)
    return 0 if up else 1


# --- REST client ---------------------------------------------------------------------------------------


def _url(args: argparse.Namespace) -> str:
    if args.url:
        return args.url.rstrip("/")
    from topo import detach

    try:
        return detach.controller_of(detach.read_state(detach.state_path(args.state)))["url"]
    except (detach.DetachError, KeyError):
        return "http://127.0.0.1:8080"


def _admin_token(args: argparse.Namespace) -> str | None:
    if args.token:
        return args.token
    if os.environ.get("TRIBUTARY_ADMIN_TOKEN"):
        return os.environ["TRIBUTARY_ADMIN_TOKEN"]
    from topo import detach

    try:
        return Path(detach.read_state(detach.state_path(args.state))["admin_token_file"]).read_text().strip()
    except (detach.DetachError, KeyError, OSError):
        return None


def _call(
    args: argparse.Namespace, method: str, path: str, token: str | None, body: dict | None = None
) -> int:
    if not token:
        print(
            f"tributary: no token: give --token or set ${TOKEN_ENV} (tenants get theirs from 'tributary tenant create')",
            file=sys.stderr,
        )
        return 2
    url = _url(args)
    try:
        r = httpx.request(
            method, url + path, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=120.0
        )
    except httpx.HTTPError as exc:
        print(f"tributary: cannot reach the controller at {url}: {exc}", file=sys.stderr)
        return 1
    try:
        doc = r.json()
    except ValueError:
        doc = {"error": r.text}
    if r.status_code >= 400:
        print(
            f"tributary: error {r.status_code}: {doc.get('error', doc) if isinstance(doc, dict) else doc}",
            file=sys.stderr,
        )
        return 1
    print(json.dumps(doc, indent=None if args.json else 2))
    return 0


def cmd_tenant(args: argparse.Namespace) -> int:
    path = args.path.format(name=getattr(args, "name", ""))
    body = {"name": args.name} if args.method == "POST" else None
    return _call(args, args.method, path, _admin_token(args), body)


def cmd_job(args: argparse.Namespace) -> int:
    return _call(
        args,
        args.method,
        args.path.format(id=getattr(args, "id", 0)),
        args.token or os.environ.get(TOKEN_ENV),
    )


def parse_rounds(text: str) -> list[list[list[str]]]:
    """'TYO+NYC/LON;NYC+LON' -> [[["TYO","NYC"],["LON"]], [["NYC","LON"]]]."""
    rounds = []
    for rnd in text.split(";"):
        cliques = [[s.strip().upper() for s in c.split("+") if s.strip()] for c in rnd.split("/")]
        rounds.append([c for c in cliques if c])
    return [r for r in rounds if r]


def cmd_job_submit(args: argparse.Namespace) -> int:
    body: dict = {
        "name": args.name,
        "workers": [w.strip() for w in args.workers.split(",") if w.strip()],
        "strategy": args.strategy,
        "format": args.format,
        "slots": args.slots,
    }
    if args.schedule:
        if args.schedule == "auto":
            body["schedule"] = {"mode": "auto", "memory": args.memory, "size": args.size}
        else:
            body["schedule"] = {"mode": "explicit", "rounds": parse_rounds(args.schedule)}
    if args.strategy.startswith("edge-"):
        body["edge"] = {"max_rate_mbit": args.max_rate}
        if args.schedule != "auto":
            body["edge"].update(memory=args.memory, size=args.size)
    return _call(args, "POST", "/jobs", args.token or os.environ.get(TOKEN_ENV), body)
