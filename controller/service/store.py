"""Persistent state of the controller in SQLite: tenants, jobs (spec, plan, state) and allocations.

Why SQLite: embedded, transactional and one file, so a restarted controller finds exactly what it had
promised, and a crash in the middle of a change leaves either the old or the new row. The switches'
tables are not stored: they are derived from the jobs and re-read from the switches on reconcile.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS tenants (
    id TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY,           -- also the INC tenant id carried in packets (1..16384)
    tenant TEXT NOT NULL REFERENCES tenants(id),
    name TEXT NOT NULL,
    state TEXT NOT NULL,              -- installing | active | replacing | removing
    spec TEXT NOT NULL,               -- the request, as JSON
    plan TEXT NOT NULL,               -- the installed plan (trees, switch rounds), as JSON
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS allocations (
    job INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
    switch TEXT NOT NULL,
    round INTEGER NOT NULL,
    clique INTEGER NOT NULL,
    base INTEGER NOT NULL,
    cells INTEGER NOT NULL,
    mcast_group INTEGER NOT NULL,
    PRIMARY KEY (job, switch, round)
);
"""


@dataclass
class TenantRow:
    id: str
    token_hash: str
    created: float


@dataclass
class JobRow:
    id: int
    tenant: str
    name: str
    state: str
    spec: dict
    plan: dict
    created: float
    updated: float


@dataclass(frozen=True)
class AllocationRow:
    job: int
    switch: str
    round: int
    clique: int
    base: int
    cells: int
    group: int


class Store:
    """Thread-safe: one connection, one lock; every method is one transaction."""

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            # tenants' token hashes and everyone's jobs: readable by the controller's user only (SQLite
            # gives its -wal and -shm files the database file's mode)
            Path(self.path).touch(mode=0o600, exist_ok=True)
            os.chmod(self.path, 0o600)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA foreign_keys = ON")
        if self.path != ":memory:":
            self._db.execute("PRAGMA journal_mode = WAL")
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # --- tenants --------------------------------------------------------------------------------------

    def add_tenant(self, tenant_id: str, token_hash: str) -> TenantRow:
        row = TenantRow(tenant_id, token_hash, time.time())
        with self._tx() as db:
            db.execute("INSERT INTO tenants VALUES (?, ?, ?)", (row.id, row.token_hash, row.created))
        return row

    def tenant(self, tenant_id: str) -> TenantRow | None:
        with self._lock:
            r = self._db.execute("SELECT * FROM tenants WHERE id = ?", (tenant_id,)).fetchone()
        return TenantRow(r["id"], r["token_hash"], r["created"]) if r else None

    def tenant_by_token_hash(self, token_hash: str) -> TenantRow | None:
        with self._lock:
            r = self._db.execute("SELECT * FROM tenants WHERE token_hash = ?", (token_hash,)).fetchone()
        return TenantRow(r["id"], r["token_hash"], r["created"]) if r else None

    def tenants(self) -> list[TenantRow]:
        with self._lock:
            rows = self._db.execute("SELECT * FROM tenants ORDER BY created").fetchall()
        return [TenantRow(r["id"], r["token_hash"], r["created"]) for r in rows]

    def delete_tenant(self, tenant_id: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM tenants WHERE id = ?", (tenant_id,))

    # --- jobs -----------------------------------------------------------------------------------------

    def next_job_id(self, limit: int) -> int | None:
        """The lowest id in 1..limit no job holds (ids are the INC tenant numbers, so they are reused)."""
        with self._lock:
            taken = {r[0] for r in self._db.execute("SELECT id FROM jobs")}
        return next((i for i in range(1, limit + 1) if i not in taken), None)

    def add_job(self, job: JobRow, allocations: list[AllocationRow]) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO jobs VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    job.id,
                    job.tenant,
                    job.name,
                    job.state,
                    json.dumps(job.spec),
                    json.dumps(job.plan),
                    job.created,
                    job.updated,
                ),
            )
            _insert_allocations(db, allocations)

    def update_job(
        self,
        job_id: int,
        *,
        state: str | None = None,
        spec: dict | None = None,
        plan: dict | None = None,
        allocations: list[AllocationRow] | None = None,
    ) -> None:
        """Change a job's state, spec and plan, and replace its allocations, in one transaction."""
        with self._tx() as db:
            sets, args = ["updated = ?"], [time.time()]
            for col, value in (("state", state), ("spec", spec), ("plan", plan)):
                if value is not None:
                    sets.append(f"{col} = ?")
                    args.append(value if isinstance(value, str) else json.dumps(value))
            db.execute(f"UPDATE jobs SET {', '.join(sets)} WHERE id = ?", (*args, job_id))
            if allocations is not None:
                db.execute("DELETE FROM allocations WHERE job = ?", (job_id,))
                _insert_allocations(db, allocations)

    def job(self, job_id: int) -> JobRow | None:
        with self._lock:
            r = self._db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return _job(r) if r else None

    def jobs(self, tenant: str | None = None) -> list[JobRow]:
        with self._lock:
            if tenant is None:
                rows = self._db.execute("SELECT * FROM jobs ORDER BY id").fetchall()
            else:
                rows = self._db.execute(
                    "SELECT * FROM jobs WHERE tenant = ? ORDER BY id", (tenant,)
                ).fetchall()
        return [_job(r) for r in rows]

    def delete_job(self, job_id: int) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM allocations WHERE job = ?", (job_id,))
            db.execute("DELETE FROM jobs WHERE id = ?", (job_id,))

    def allocations(self, job_id: int | None = None) -> list[AllocationRow]:
        with self._lock:
            if job_id is None:
                rows = self._db.execute("SELECT * FROM allocations").fetchall()
            else:
                rows = self._db.execute("SELECT * FROM allocations WHERE job = ?", (job_id,)).fetchall()
        return [
            AllocationRow(
                r["job"], r["switch"], r["round"], r["clique"], r["base"], r["cells"], r["mcast_group"]
            )
            for r in rows
        ]


def _insert_allocations(db: sqlite3.Connection, allocations: list[AllocationRow]) -> None:
    db.executemany(
        "INSERT INTO allocations VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(a.job, a.switch, a.round, a.clique, a.base, a.cells, a.group) for a in allocations],
    )


def _job(r: sqlite3.Row) -> JobRow:
    return JobRow(
        r["id"],
        r["tenant"],
        r["name"],
        r["state"],
        json.loads(r["spec"]),
        json.loads(r["plan"]),
        r["created"],
        r["updated"],
    )
