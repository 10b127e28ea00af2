"""What one run started: its processes (switches, Mininet host shells, the controller) and the interfaces
it created in the root namespace, written down as they come, so that `tributary clean` and `stop` can
remove exactly these and nothing else.

Why a record instead of names: a pattern like "simple_switch_grpc ... --device-id" or "S1-eth1" also
matches another user's BMv2, another run's switches or a lab's own veths. A record names each process by
pid *and* start time (a pid reused by a later program has another start time) and each interface by
name *and* ifindex, so nothing but what this installation started is ever touched.

One file per run, named after the process that owns the run (the WAN keeper or a foreground
`tributary run`), in /run/tributary/owned (or $TRIBUTARY_LEDGER). A record whose owner still lives is
left alone: that run is not crashed, `tributary stop` ends it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

LEDGER_ENV = "TRIBUTARY_LEDGER"
DEFAULT_DIR = Path("/run/tributary/owned")


def ledger_dir() -> Path:
    return Path(os.environ.get(LEDGER_ENV) or DEFAULT_DIR)


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22); None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":  # exited, not yet reaped: as good as gone
        return None
    return int(fields[19])


def ifindex(name: str) -> int | None:
    try:
        return int(Path(f"/sys/class/net/{name}/ifindex").read_text())
    except (OSError, ValueError):
        return None


@dataclass
class Record:
    owner: int
    owner_start: int
    run_dir: str = ""
    processes: list[tuple[int, int, str]] = field(default_factory=list)  # (pid, start time, what)
    interfaces: list[tuple[str, int]] = field(default_factory=list)  # (name, ifindex)

    @property
    def path(self) -> Path:
        return ledger_dir() / f"{self.owner}.json"

    def owner_alive(self) -> bool:
        return start_time(self.owner) == self.owner_start

    def save(self) -> None:
        """Write the record, keeping what another process added meanwhile (a controller restarted by
        `tributary controller restart` is recorded by that command, the switches by the keeper)."""
        path = self.path
        on_disk = Record.load(path)
        if on_disk is not None and on_disk.owner_start == self.owner_start:
            mine = {p[0] for p in self.processes}
            self.processes += [p for p in on_disk.processes if p[0] not in mine]
            names = {n for n, _ in self.interfaces}
            self.interfaces += [i for i in on_disk.interfaces if i[0] not in names]
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")  # two writers never share a temporary file
        tmp.write_text(json.dumps(asdict(self)))
        os.replace(tmp, path)

    def add_process(self, pid: int, what: str) -> None:
        started = start_time(pid)
        if started is not None:
            self.processes = [p for p in self.processes if p[0] != pid]
            self.processes.append((pid, started, what))
            self.save()

    def add_interfaces(self, names: list[str]) -> None:
        known = {n for n, _ in self.interfaces}
        for name in names:
            index = ifindex(name)
            if index is not None and name not in known:
                self.interfaces.append((name, index))
        self.save()

    def forget(self) -> None:
        self.path.unlink(missing_ok=True)

    @classmethod
    def load(cls, path: Path) -> Record | None:
        try:
            doc = json.loads(path.read_text())
            return cls(
                int(doc["owner"]),
                int(doc["owner_start"]),
                str(doc.get("run_dir", "")),
                [(int(p), int(s), str(w)) for p, s, w in doc.get("processes", [])],
                [(str(n), int(i)) for n, i in doc.get("interfaces", [])],
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None


def for_this_process(run_dir: Path | None = None) -> Record:
    """The record of the run this process owns (created, or taken up again)."""
    pid = os.getpid()
    existing = Record.load(ledger_dir() / f"{pid}.json")
    started = start_time(pid) or 0
    if existing is not None and existing.owner_start == started:
        return existing
    rec = Record(pid, started, str(run_dir or ""))
    rec.save()
    return rec


def for_owner(pid: int) -> Record | None:
    rec = Record.load(ledger_dir() / f"{pid}.json")
    return rec if rec is not None and rec.owner == pid else None


def records() -> list[Record]:
    out = []
    for path in sorted(ledger_dir().glob("*.json")):
        rec = Record.load(path)
        if rec is not None:
            out.append(rec)
    return out


@dataclass
class Cleaned:
    processes: list[str] = field(default_factory=list)
    interfaces: list[str] = field(default_factory=list)
    live_runs: list[int] = field(default_factory=list)  # owners still running: left alone


def clean_record(rec: Record, out: Cleaned, verbose: bool = False) -> None:
    """Kill the record's processes that are still the same processes, delete its interfaces that are
    still the same interfaces, then drop the record."""
    victims = [(pid, what) for pid, started, what in rec.processes if start_time(pid) == started]
    for pid, what in victims:
        if verbose:
            print(f"killing {what} (pid {pid})")
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        out.processes.append(f"{what} (pid {pid})")
    # a killed host shell takes its namespace, and the veths into it, along when it is gone
    deadline = time.monotonic() + 3.0
    while any(start_time(pid) is not None for pid, _ in victims) and time.monotonic() < deadline:
        time.sleep(0.05)
    for name, index in rec.interfaces:
        if ifindex(name) == index:
            if verbose:
                print(f"deleting interface {name}")
            subprocess.run(["ip", "link", "del", name], capture_output=True)
            out.interfaces.append(name)
    rec.forget()


def clean(verbose: bool = True, owner: int | None = None) -> Cleaned:
    """Remove what crashed runs left (every record whose owner is dead, or only `owner`'s)."""
    out = Cleaned()
    for rec in records():
        if owner is not None and rec.owner != owner:
            continue
        if rec.owner_alive():
            out.live_runs.append(rec.owner)
            continue
        clean_record(rec, out, verbose)
    return out
