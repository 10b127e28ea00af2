"""Property tests: table lookups agree with a brute-force reference for random entries and keys
(lpm longest prefix, ternary/range/optional by priority then age), and control operations made
from other threads while packets flow keep the switch consistent."""

from __future__ import annotations

import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from p4kit.switch import Switch
from p4kit.switch.errors import DuplicateEntryError
from p4kit.switch.jsonbuild import RD, F, JsonBuilder, assign


def make(keys: list[tuple[str, str]]) -> Switch:
    b = JsonBuilder()
    b.add_header("h", [("a", 8), ("b", 8), ("out", 16)])
    b.state("start", [b.extract("h")])
    b.deparse("h")
    b.action(
        "set",
        [("v", 16)],
        [assign(F("h", "out"), RD(0)), assign(F("standard_metadata", "egress_spec"), RD(0))],
    )
    b.action("miss", [], [])
    b.table("t", [(mt, ["h", f]) for mt, f in keys], ["set", "miss"], default=("miss", []))
    b.init("ingress", "t")
    sw = Switch()
    sw.raise_internal_errors = True
    sw.load_pipeline(b.build())
    return sw


def lookup(sw: Switch, a: int, b: int) -> int | None:
    out = sw.process_packet(0, bytes([a, b, 0, 0]))
    v = int.from_bytes(out[0][1][2:4], "big")
    return v or None


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 255), st.integers(0, 8), st.integers(0, 255)), max_size=20),
    st.lists(st.tuples(st.integers(0, 255), st.integers(0, 255)), min_size=1, max_size=20),
)
def test_lpm_matches_reference(entries, probes) -> None:
    sw = make([("exact", "b"), ("lpm", "a")])
    ref: dict[tuple[int, int, int], int] = {}
    for i, (a, plen, b) in enumerate(entries):
        mask = (0xFF << (8 - plen)) & 0xFF
        key = (b & 3, a & mask, plen)
        try:
            sw.table_add("t", [b & 3, (a, plen)], "set", [i + 1])
        except DuplicateEntryError:
            assert key in ref
            continue
        ref[key] = i + 1
    for a, b in probes:
        best = None
        for (kb, ka, plen), v in ref.items():
            mask = (0xFF << (8 - plen)) & 0xFF
            if kb == b & 3 and a & mask == ka and (best is None or plen > best[0]):
                best = (plen, v)
        assert lookup(sw, a, b & 3) == (best[1] if best else None)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 255),
            st.integers(0, 255),
            st.integers(0, 255),
            st.integers(0, 255),
            st.integers(0, 3),
        ),
        max_size=20,
    ),
    st.lists(st.tuples(st.integers(0, 255), st.integers(0, 255)), min_size=1, max_size=20),
)
def test_ternary_range_matches_reference(entries, probes) -> None:
    sw = make([("ternary", "a"), ("range", "b")])
    ref: list[tuple[int, int, int, int, int, int]] = []  # value, mask, lo, hi, prio, result
    seen = set()
    for i, (v, m, x, y, prio) in enumerate(entries):
        lo, hi = min(x, y), max(x, y)
        ident = (v & m, m, lo, hi, prio)
        if ident in seen:
            continue
        seen.add(ident)
        sw.table_add("t", [(v, m), (lo, hi)], "set", [i + 1], priority=prio)
        ref.append((v & m, m, lo, hi, prio, i + 1))
    for a, b in probes:
        want = None
        for v, m, lo, hi, prio, res in ref:  # larger priority wins, then the older entry
            if a & m == v and lo <= b <= hi and (want is None or prio > want[0]):
                want = (prio, res)
        assert lookup(sw, a, b) == (want[1] if want else None)


def test_control_calls_from_another_thread_while_packets_flow() -> None:
    sw = make([("exact", "a")])
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            while not stop.is_set():
                for k in range(50):
                    sw.table_add("t", [k], "set", [k + 1])
                for e in sw.table_get_entries("t"):
                    sw.table_delete("t", e.handle)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    t = threading.Thread(target=writer)
    t.start()
    try:
        for i in range(3000):
            r = lookup(sw, i % 50, 0)
            assert r in (None, i % 50 + 1)
    finally:
        stop.set()
        t.join()
    assert not errors
