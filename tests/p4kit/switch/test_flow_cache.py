"""The cache of pipeline results (p4kit/switch/flowcache.py) changes no output, drop or state.

Two switches run the same program, one with the cache and one without. Every test program of
tests/p4kit/programs gets its STF control-plane directives on both, in their order, and every STF
packet is sent several times (the repeats are cache hits) and in random variants: bytes changed in
its headers and payload, a longer and shorter payload, another ingress port. Each packet's outputs
and drop reasons must be equal, one at a time and in batches; at the end, every counter and
register too. Writes between packets (table adds, defaults, deletes, multicast) must empty the
cache: the directed tests below change an entry after its result was cached.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from p4kit.compiler.diagnostics import CompileError
from p4kit.compiler.driver import compile_file
from p4kit.switch import flowcache
from p4kit.switch.cli_args import UsageError, parse_args
from p4kit.switch.errors import SwitchError
from p4kit.switch.runtime import Switch
from tests.p4kit.switch._differential import CASES, LPM, ROOT, run_on_both
from tests.p4kit.switch._differential import compile_or_skip as _compile


@pytest.fixture(autouse=True)
def _python_data_plane(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the Python data plane's own machinery: the native one stays off."""
    monkeypatch.setenv("P4KIT_NATIVE", "0")


def _pair(bmv2: dict, insert_inv_prob: int = 1) -> tuple[Switch, Switch]:
    """Cache on (every miss stored unless told otherwise, so that repeats are hits) and off."""
    on, off = Switch(flow_cache=True, seed=1), Switch(flow_cache=False, seed=1)
    on.load_pipeline(bmv2)
    on.set_flow_cache(True, insert_inv_prob=insert_inv_prob)
    off.load_pipeline(bmv2)
    return on, off


def _variants(
    rng: random.Random, port: int, data: bytes, read: int = -1, reach: int = 0
) -> list[tuple[int, bytes]]:
    """The packet three times, then random variants; with the key's `read` mask (flowkey.py),
    also variants that differ only in bits the key leaves out (they must hit and still be right)."""
    out = [(port, data)] * 3
    unread = [i for i in range(min(len(data), reach) * 8) if not (read >> (reach * 8 - 1 - i)) & 1]
    for _ in range(8 if unread else 0):
        b = bytearray(data)
        for i in rng.sample(unread, min(len(unread), rng.randrange(1, 6))):
            b[i // 8] ^= 0x80 >> (i % 8)
        out += [(port, bytes(b))]
    for _ in range(12):
        b = bytearray(data)
        if b:
            i = rng.randrange(min(len(b), 80))
            b[i] ^= 1 << rng.randrange(8)
        out += [(port, bytes(b))] * 2
    out += [(port, data + bytes(rng.randrange(256) for _ in range(20)))] * 2
    out += [(port, data[: len(data) // 2]), (port, data[:-1] if data else data)]
    tail = bytearray(data)
    if len(tail) > 40:
        tail[-1] ^= 0xFF
    out += [(port, bytes(tail)), ((port + 1) & 0x1FF, data), ((port + 1) & 0x1FF, data)]
    return out


def _same(on: Switch, off: Switch, port: int, data: bytes) -> None:
    try:
        a = on.process_packet(port, data)
    except SwitchError as exc:
        a = repr(exc)
    try:
        b = off.process_packet(port, data)
    except SwitchError as exc:
        b = repr(exc)
    assert a == b, f"port {port} packet {data.hex()}"
    assert on.drop_log == off.drop_log, f"port {port} packet {data.hex()}"
    assert on.take_outputs() == off.take_outputs()


@pytest.mark.parametrize("src", CASES, ids=[p.stem for p in CASES])
def test_cache_on_and_off_give_the_same_packets(src: Path) -> None:
    bmv2 = _compile(src)
    on, off = _pair(bmv2)
    rng = random.Random(src.stem)
    p, _ = flowcache.plan(bmv2)
    key = p.key if p is not None else None
    read, reach = (key.read, key.reach) if key is not None else (-1, 0)
    run_on_both(on, off, src, bmv2, rng, lambda port, data: _variants(rng, port, data, read, reach), _same)
    # A stateless program's packets were served from the cache (so the comparison above compared
    # hits), and any other program's never were.
    p, why = flowcache.plan(bmv2)
    assert (p is not None) == (on.flow_cache_entries() > 0), why


def test_enough_programs_are_served_by_the_cache() -> None:
    """The differential test means something only if the cache serves many of the programs."""
    served = 0
    for src in CASES:
        try:
            bmv2 = compile_file(src, include_dirs=[str(src.parent)]).bmv2
        except CompileError:
            continue
        served += flowcache.plan(bmv2)[0] is not None
    assert served >= 15, served


def _lpm_switches() -> tuple[Switch, Switch, bytes]:
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    from bench_switch import build_frame

    bmv2 = _compile(LPM)
    on, off = _pair(bmv2)
    for sw in (on, off):
        sw.table_add(
            "MyIngress.ipv4_lpm", [((10 << 24) | (2 << 8), 24)], "MyIngress.ipv4_forward", [0x020000000202, 2]
        )
    return on, off, build_frame()


def test_a_write_after_a_cached_result_changes_the_next_packet() -> None:
    on, off, frame = _lpm_switches()
    for _ in range(3):
        _same(on, off, 1, frame)
    assert on.flow_cache_entries() == 1
    assert on.process_packet(1, frame)[0][0] == 2
    for sw in (on, off):
        h = sw.table_find("MyIngress.ipv4_lpm", [((10 << 24) | (2 << 8), 24)])
        sw.table_modify("MyIngress.ipv4_lpm", h, "MyIngress.ipv4_forward", [0x020000000303, 3])
    assert on.flow_cache_entries() == 0
    _same(on, off, 1, frame)
    assert on.process_packet(1, frame)[0][0] == 3
    for sw in (on, off):
        sw.table_delete(
            "MyIngress.ipv4_lpm", sw.table_find("MyIngress.ipv4_lpm", [((10 << 24) | (2 << 8), 24)])
        )
    _same(on, off, 1, frame)
    assert on.process_packet(1, frame) == []
    for sw in (on, off):
        sw.table_add(
            "MyIngress.ipv4_lpm", [((10 << 24) | (2 << 8), 16)], "MyIngress.ipv4_forward", [0x020000000404, 4]
        )
    _same(on, off, 1, frame)
    assert on.process_packet(1, frame)[0][0] == 4


def test_the_payload_beyond_the_parsed_headers_is_the_packets_own() -> None:
    on, off, frame = _lpm_switches()
    _same(on, off, 1, frame)
    other = frame[:34] + bytes(range(100))  # same headers, another payload: a hit
    _same(on, off, 1, other)
    assert on.flow_cache_entries() == 1
    assert on.process_packet(1, other)[0][1].endswith(bytes(range(100)))


def test_the_cache_can_be_turned_off_and_the_cli_says_so() -> None:
    on, _, frame = _lpm_switches()
    on.set_flow_cache(False)
    on.process_packet(1, frame)
    assert on.flow_cache_entries() == 0
    assert parse_args(["--no-flow-cache", "x.json"]).flow_cache is False
    assert parse_args(["x.json"]).flow_cache is True
    assert parse_args(["x.json"]).flow_cache_insert_inv_prob == flowcache.DEFAULT_INSERT_INV_PROB
    assert parse_args(["--flow-cache-insert-inv-prob", "7", "x.json"]).flow_cache_insert_inv_prob == 7
    with pytest.raises(UsageError, match="insert-inv-prob"):
        parse_args(["--flow-cache-insert-inv-prob", "0", "x.json"])


def test_inc_is_never_cached() -> None:
    """INC aggregates into registers: every contribution must run the pipeline."""
    inc = ROOT / "p4src" / "inc.p4"
    plan, why = flowcache.plan(compile_file(inc, include_dirs=[str(inc.parent)]).bmv2)
    assert plan is None and "register" in why
