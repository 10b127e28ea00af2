"""Two switches that must agree: one program's STF directives and packets on both, compared.

Why shared: the cache of results (test_flow_cache.py) and the native data plane (test_native.py)
are each checked against the plain Python pipeline the same way; only the packets' variants and
what counts as "the same" for one packet differ.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from p4kit.compiler.diagnostics import CompileError
from p4kit.compiler.driver import compile_file
from p4kit.stf.parser import PacketDirective, parse_stf
from p4kit.stf.runner import StfRunner
from p4kit.switch.runtime import Switch

ROOT = Path(__file__).resolve().parents[3]
PROGRAMS = ROOT / "tests" / "p4kit" / "programs"
CASES = sorted(p for p in PROGRAMS.glob("*.p4") if p.with_suffix(".stf").exists())  # programs with an STF
LPM = PROGRAMS / "table_lpm_forward.p4"


def compile_or_skip(src: Path) -> dict:
    """The program's BMv2 JSON; a program that tests a compile error has no packets to run."""
    try:
        return compile_file(src, include_dirs=[str(src.parent)]).bmv2
    except CompileError as exc:
        pytest.skip(f"does not compile: {exc}")


Variants = Callable[[int, bytes], list[tuple[int, bytes]]]
Same = Callable[[Switch, Switch, int, bytes], None]


def state(sw: Switch, bmv2: dict) -> dict:
    """Every counter, register and table entry (with its direct counter) of the program."""
    seen: dict = {}
    for c in bmv2.get("counter_arrays", []):
        if not c.get("is_direct"):
            seen[c["name"]] = [sw.counter_read(c["name"], i) for i in range(c["size"])]
    for r in bmv2.get("register_arrays", []):
        seen[r["name"]] = sw.register_read_all(r["name"])
    for t in sw.tables():
        seen[t] = [
            (e.handle, e.keys, e.action, e.params, e.priority, e.packets, e.bytes)
            for e in sw.table_get_entries(t)
        ]
    return seen


def run_on_both(
    a: Switch, b: Switch, src: Path, bmv2: dict, rng: random.Random, variants: Variants, same: Same
) -> None:
    """The STF file beside `src`: its directives on both switches in order (both must fail the same
    way), each packet and its variants through `same`, then all of them again in shuffled batches
    per port (as the port loop hands them over), and at the end the whole state."""
    ra, rb = StfRunner(a), StfRunner(b)
    batch: list[tuple[int, bytes]] = []
    for d in parse_stf(src.with_suffix(".stf").read_text()):
        if isinstance(d, PacketDirective):
            if d.cmd != "packet" or len(d.data) % 2:
                continue  # an odd number of digits is never sent (p4kit-stf's runner, as p4c's)
            for port, data in variants(d.port, bytes.fromhex(d.data)):
                same(a, b, port, data)
                batch.append((port, data))
            continue
        errors = []
        for r in (ra, rb):
            try:
                r.execute(d)
                errors.append(None)
            except Exception as exc:  # both must fail the same way
                errors.append(repr(exc))
        assert errors[0] == errors[1]
    rng.shuffle(batch)
    by_port: dict[int, list[bytes]] = {}
    for port, data in batch:
        by_port.setdefault(port, []).append(data)
    for port, frames in sorted(by_port.items()):
        for i in range(0, len(frames), 32):
            chunk = frames[i : i + 32]
            assert a.process_batch(port, chunk, on_error=lambda p: None) == b.process_batch(
                port, chunk, on_error=lambda p: None
            )
            assert a.drop_log == b.drop_log
    assert state(a, bmv2) == state(b, bmv2)
