"""The WAN and its controller in the background: `tributary run --detach`, `stop`, `controller restart`.

Three processes, so each can go alone: the *WAN keeper* (Mininet, the switches; started detached by
`run --detach`, it lives until SIGTERM), the *controller service* (python -m controller.service; a
separate process so that it can be restarted without touching the network), and the short-lived
commands. They meet in a state file (default /run/tributary/state.json): the topology, the compiled
pipeline's paths, the controller's address, database and pid, the keeper's pid, where the logs are.
The admin token lives in its own file (mode 0600), never in the state file, a log or a child's
environment. The keeper also watches its switches: one that dies is started again on the same ports,
and the controller (or, without one, the keeper) gives it its pipeline, routes and jobs back.

The controller's database outlives the run: by default it is /var/lib/tributary/controller.db (or
$TRIBUTARY_DATA_DIR/controller.db), so `tributary stop` then `tributary run --detach` finds the same
tenants and jobs; the run folder holds only what belongs to one run (logs, build, pcaps).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from controller.service.auth import ADMIN_TOKEN_ENV, write_token_file
from controller.service.topology import LinkInfo, Topology
from topo import ledger
from topo.options import log
from topo.secrets_env import take_secrets, without_secrets

STATE_ENV = "TRIBUTARY_STATE"
DEFAULT_STATE = Path("/run/tributary/state.json")
DEFAULT_LISTEN = "127.0.0.1:8080"
DAEMON_ENV = "TRIBUTARY_DAEMON_STATE"  # set for the keeper: where to write its state
READY_TIMEOUT_S = 300.0
DATA_ENV = "TRIBUTARY_DATA_DIR"
DEFAULT_DATA_DIR = Path("/var/lib/tributary")


def default_db() -> Path:
    """Where the controller keeps tenants and jobs across runs, unless --db says otherwise."""
    return Path(os.environ.get(DATA_ENV) or DEFAULT_DATA_DIR) / "controller.db"


class DetachError(RuntimeError):
    """Something the user can fix (already running, nothing running, a process that will not start)."""


def state_path(given: Path | None = None) -> Path:
    if given is not None:
        return given
    return Path(os.environ.get(STATE_ENV) or DEFAULT_STATE)


def read_state(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise DetachError(
            f"nothing is running: no state file {path} (start with 'tributary run --detach')"
        ) from None
    except (OSError, json.JSONDecodeError) as exc:
        raise DetachError(f"cannot read the state file {path}: {exc}") from None


def write_state(path: Path, state: dict) -> None:
    """Atomically (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1))
    os.replace(tmp, path)


def alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (exited, not yet reaped by its parent) counts as gone
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z"):
            return False
    return True


def terminate(pid: int | None, timeout: float = 30.0) -> bool:
    """SIGTERM, wait, SIGKILL if needed; True when the process is gone."""
    if not alive(pid):
        return True
    assert pid is not None
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)
    return not alive(pid)


def wait_healthy(url: str, pid: int, timeout: float = 120.0, log_path: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            tail = log_path.read_text(errors="replace")[-3000:] if log_path and log_path.exists() else ""
            raise DetachError(f"the controller exited during start-up; its log ends with:\n{tail}")
        try:
            if httpx.get(f"{url}/health", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise DetachError(f"the controller did not answer at {url} within {timeout:.0f} s")


# --- the controller process ------------------------------------------------------------------------


def start_controller(state: dict, state_file: Path) -> int:
    """Start the controller service detached (its own session); returns its pid once it answers."""
    ctl = state["controller"]
    log_path = Path(ctl["log"])
    log_path.parent.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "controller.service",
        "--state",
        str(state_file),
        "--db",
        ctl["db"],
        "--listen",
        ctl["listen"],
        "--admin-token-file",
        state["admin_token_file"],
    ]
    env = without_secrets()  # the token file is the one source
    with log_path.open("ab") as out:
        proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
            cwd=str(Path(__file__).resolve().parent.parent),
        )
    owner = ledger.for_owner(int(state.get("pid") or 0))
    if owner is not None:  # the run's record: `tributary clean` stops it should the keeper die
        owner.add_process(proc.pid, "controller")
    wait_healthy(ctl["url"], proc.pid, log_path=log_path)
    return proc.pid


@contextlib.contextmanager
def controller_lock(path: Path) -> Iterator[None]:
    """One restart of the controller at a time (`controller restart` and the keeper's watch)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with (path.parent / (path.name + ".lock")).open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def restart_controller(path: Path) -> dict:
    with controller_lock(path):
        state = read_state(path)
        if not controller_of(state):
            raise DetachError("this run has no controller (it was started with --no-controller)")
        old = state["controller"].get("pid")
        if not terminate(old):
            raise DetachError(f"the controller (pid {old}) does not stop")
        state["controller"]["pid"] = None
        write_state(path, state)
        state["controller"]["pid"] = start_controller(state, path)
        state["controller"]["restarts"] = int(state["controller"].get("restarts", 0)) + 1
        write_state(path, state)
    return state


def revive_controller(path: Path) -> int | None:
    """Start the controller again if it died (kill -9, a crash); returns its new pid, or None when it
    is alive or none is configured. It reconciles from its database on start: nothing is lost."""
    with controller_lock(path):
        state = read_state(path)
        pid = controller_of(state).get("pid")
        if not pid or alive(pid) or state.get("stopping"):
            return None
        log(f"the controller (pid {pid}) died: starting it again")
        state["controller"]["pid"] = start_controller(state, path)
        state["controller"]["restarts"] = int(state["controller"].get("restarts", 0)) + 1
        write_state(path, state)
        return int(state["controller"]["pid"])


# --- run --detach: the parent ------------------------------------------------------------------------


def launch(args: argparse.Namespace) -> int:
    """Start the WAN keeper in the background and return once the controller answers."""
    try:
        return _launch(args)
    except DetachError as exc:
        print(f"tributary run: error: {exc}", file=sys.stderr)
        return 1


def _launch(args: argparse.Namespace) -> int:
    from topo.runs import new_run_dir

    path = state_path(getattr(args, "state", None))
    if path.exists():
        old = json.loads(path.read_text() or "{}")
        if alive(old.get("pid")):
            raise DetachError(
                f"a WAN is already running (pid {old['pid']}, state {path}): 'tributary stop' first"
            )
        # the last run's keeper died without `stop`: end its controller, remove what its run recorded
        terminate(controller_of(old).get("pid"))
        if old.get("pid"):
            from topo import cleanup

            left = cleanup.clean(verbose=False, owner=int(old["pid"]))
            if left.processes or left.interfaces:
                log(
                    f"removed what the last run left: {len(left.processes)} process(es), {len(left.interfaces)} interface(s)"
                )
        path.unlink()
    run_dir = (args.run_dir or new_run_dir(label="run")).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    out = (run_dir / "tributary.log").open("ab")
    admin_token_file(path, _admin_token(args))  # the keeper finds it; the token is in no environment
    env = {**without_secrets(), DAEMON_ENV: str(path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "topo.cli", *keeper_argv(args, run_dir)],
        stdout=out,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        env=env,
        cwd=os.getcwd(),
    )
    log(f"starting the WAN in the background (pid {proc.pid}); log: {run_dir / 'tributary.log'}")
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = (run_dir / "tributary.log").read_text(errors="replace")[-3000:]
            raise DetachError(f"the WAN did not come up (exit status {proc.returncode}):\n{tail}")
        with contextlib.suppress(OSError, json.JSONDecodeError):
            state = json.loads(path.read_text())
            if state.get("ready") and state.get("pid") == proc.pid:
                _print_ready(state, path)
                return 0
        time.sleep(0.5)
    terminate(proc.pid)
    raise DetachError(
        f"the WAN was not ready within {READY_TIMEOUT_S:.0f} s; see {run_dir / 'tributary.log'}"
    )


def controller_of(state: dict) -> dict:
    """The state's controller part ({} for a run with --no-controller)."""
    return state.get("controller") or {}


def _print_ready(state: dict, path: Path) -> None:
    ctl = controller_of(state)
    sites = [s["name"] for s in state["topology"]["switches"]]
    where = f"controller at {ctl['url']} (OpenAPI: {ctl['url']}/docs)" if ctl else "no controller"
    print(f"WAN up: {len(sites)} sites ({', '.join(sites)}), {where}")
    print(f"admin token: {state['admin_token_file']} (e.g. TOKEN=$(sudo cat {state['admin_token_file']}))")
    print(f"state: {path}   logs: {state['run_dir']}")
    print("stop everything with: sudo tributary stop")


# --- the WAN keeper ------------------------------------------------------------------------------------


def topology_doc(running: object) -> dict:
    """The state file's topology: the fabric plus link rates and regions (controller.service.topology)."""
    network = running.network  # type: ignore[attr-defined]
    wan = network.wan
    topo = Topology(
        network.fabric,
        [LinkInfo(link.a, link.b, link.rtt_ms, link.rate_mbit, link.loss_pct) for link in wan.links],
        {s.name: s.continent for s in wan.sites},
        wan.real_rate_mbit,
    )
    return topo.to_json()


def host_pids(running: object) -> dict[str, int]:
    """Each Mininet host's shell: its network namespace is /proc/<pid>/ns/net (scripts run there)."""
    net = running.network.net  # type: ignore[attr-defined]
    return {h.name: h.pid for h in net.hosts} if net is not None else {}


def host_command(state: dict, host: str, argv: list[str]) -> list[str]:
    """`argv` run inside `host`'s network namespace of a detached WAN (needs root)."""
    pid = state.get("hosts", {}).get(host)
    if pid is None:
        raise DetachError(f"no host {host!r} in the running WAN")
    return ["nsenter", f"--net=/proc/{pid}/ns/net", *argv]


def _admin_token(args: argparse.Namespace) -> str | None:
    """The admin token given to `tributary run` ($TRIBUTARY_ADMIN_TOKEN, taken out of the environment)."""
    given = getattr(args, "secrets", None)
    if given is None:
        given = args.secrets = take_secrets()
    return given.get(ADMIN_TOKEN_ENV, "").strip() or None


def admin_token_file(path: Path, token: str | None = None, reuse: bool = False) -> Path:
    """The token file next to the state file, with `token` or a new random one; `reuse`: keep a file
    that exists (the WAN keeper's, written by `run --detach` before it started the keeper)."""
    file = path.parent / "admin-token"
    if reuse and file.exists() and file.read_text().strip():
        return file
    write_token_file(file, token or secrets.token_urlsafe(32))
    return file


def controller_state(args: argparse.Namespace, run_dir: Path) -> dict:
    listen = getattr(args, "listen", None) or DEFAULT_LISTEN
    host, _, port = listen.rpartition(":")
    url_host = "127.0.0.1" if host in ("", "0.0.0.0") else host
    db = getattr(args, "db", None) or default_db()
    return {
        "listen": listen,
        "url": f"http://{url_host}:{port}",
        "db": str(Path(db).resolve()),
        "log": str(run_dir / "controller.log"),
        "pid": None,
        "restarts": 0,
    }


def run_state(
    running: object, args: argparse.Namespace, path: Path, detached: bool, controller: bool
) -> dict:
    """The state file's content for a WAN that is up (not yet written, not yet ready)."""
    run_dir = running.run_dir.resolve()  # type: ignore[attr-defined]
    return {
        "version": 1,
        "pid": os.getpid(),
        "detached": detached,
        "run_dir": str(run_dir),
        "admin_token_file": str(
            admin_token_file(path, _admin_token(args), reuse=keeper_state_path() is not None)
        ),
        "controller": controller_state(args, run_dir) if controller else None,
        "pipeline": {
            "p4info": str(run_dir / "build" / "inc.p4info.txtpb"),
            "device_config": str(run_dir / "build" / "inc.json"),
        },
        "topology": topology_doc(running),
        "hosts": host_pids(running),
        "ready": False,
    }


def run_controller(running: object, args: argparse.Namespace, path: Path, detached: bool) -> dict:
    """Write the state file and start the controller for a WAN that is up; returns the state."""
    state = run_state(running, args, path, detached, controller=True)
    write_state(path, state)
    state["controller"]["pid"] = start_controller(state, path)
    state["ready"] = True
    write_state(path, state)
    log(f"controller at {state['controller']['url']} (pid {state['controller']['pid']})")
    return state


def stop_controller(path: Path) -> None:
    """Stop whichever controller the state file names now (it may have been restarted)."""
    with contextlib.suppress(DetachError):
        terminate(controller_of(read_state(path)).get("pid"))


def _signal_and_wait(pid: int, timeout: float) -> bool:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    return not alive(pid)


def stop_all(path: Path, timeout: float = 90.0) -> list[str]:
    """Stop the controller and the WAN keeper; clean what a killed keeper left. Returns what was done."""
    from topo import cleanup

    done: list[str] = []
    with controller_lock(path):  # from now on the keeper does not start a controller that is gone
        state = read_state(path)
        state["stopping"] = True
        write_state(path, state)
    ctl = controller_of(state).get("pid")
    if terminate(ctl):
        done.append(f"controller (pid {ctl}) stopped")
    keeper = state.get("pid")
    if alive(keeper) and _signal_and_wait(keeper, timeout):
        done.append(f"WAN (pid {keeper}) stopped")
    elif keeper:
        # the keeper died, or could not tear its network down: remove what its run recorded, only that
        terminate(keeper, timeout=5)
        left = cleanup.clean(verbose=False, owner=int(keeper))
        done.append(
            f"WAN (pid {keeper}) had died or would not stop; removed {len(left.processes)} process(es) and "
            f"{len(left.interfaces)} interface(s) it had started"
        )
    Path(state.get("admin_token_file", path.parent / "admin-token")).unlink(missing_ok=True)
    path.unlink(missing_ok=True)
    return done


# --- hooks for `tributary run` ---------------------------------------------------------------------------


def keeper_state_path() -> Path | None:
    """Set when this process is the WAN keeper of `run --detach`."""
    value = os.environ.get(DAEMON_ENV)
    return Path(value) if value else None


@contextlib.contextmanager
def controller_for(running: object, args: argparse.Namespace) -> Iterator[dict | None]:
    """The controller service for the WAN's lifetime (none with --no-controller); state file removed after."""
    keeper = keeper_state_path()
    if getattr(args, "no_controller", False):
        if keeper is None:
            yield None
            return
        # `run --detach --no-controller`: the state file still tells `stop` and the others about the WAN
        state = run_state(running, args, keeper, detached=True, controller=False)
        state["ready"] = True
        write_state(keeper, state)
        try:
            yield None
        finally:
            with contextlib.suppress(OSError, DetachError):
                if read_state(keeper).get("pid") == os.getpid():
                    keeper.unlink()
        return
    path = keeper or state_path(getattr(args, "state", None))
    try:
        try:
            state = run_controller(running, args, path, detached=keeper is not None)
        except DetachError as exc:
            if keeper is not None:
                raise  # `run --detach` reports it with the log's tail
            log(f"warning: the controller did not start, the WAN runs without it: {exc}")
            state = None
        yield state
    finally:
        stop_controller(path)
        with contextlib.suppress(OSError, DetachError):
            if read_state(path).get("pid") == os.getpid():
                path.unlink()


def keeper_argv(args: argparse.Namespace, run_dir: Path) -> list[str]:
    """`tributary run` options that rebuild the same WAN in the keeper process."""
    out = ["run", "--batch", "--run-dir", str(run_dir)]
    for flag, value in (
        ("--sites", args.sites),
        ("--topology", args.topology),
        ("--workers-per-site", args.workers_per_site),
        ("--rate", args.rate),
        ("--loss", args.loss),
        ("--switch", args.switch_binary),
        ("--listen", getattr(args, "listen", None)),
        ("--db", getattr(args, "db", None)),
        ("--state", getattr(args, "state", None)),
    ):
        if value is not None:
            out += [flag, str(Path(value).resolve()) if isinstance(value, Path) else str(value)]
    out += ["--link-mode", args.link_mode]
    if args.pcap:
        out.append("--pcap")
    if getattr(args, "trace", False):
        out.append("--trace")
    if getattr(args, "no_controller", False):
        out.append("--no-controller")
    return out
