"""A cache of pipeline results for stateless programs: which programs it may serve, and its store.

Why: for most forwarding programs the pipeline's outcome is a pure function of the ingress port,
the bytes the parser can reach and the tables' contents. Running it costs more than 1 us a packet
in Python (parse, controls, deparse); looking the outcome up costs a slice and a dict access. The
cache is what lets a software switch forward at a relay's speed (Open vSwitch's exact-match cache
is the model), designed here for P4's semantics.

When it applies (decided once per program, conservatively, from the BMv2 JSON):
- no register, counter or meter arrays, no digests (learn lists), no extern instances, no action
  selector, no table with idle timeouts (a hit stamps the entry) or a direct counter or meter, and
  no primitive outside a list of pure ones (so no clone, resubmit, recirculate, truncate, random,
  log_msg or register access);
- no hash calculation with the `random` algorithm, and none over the payload (a checksum with
  payload reads every byte of the packet);
- no read of the nondeterministic standard_metadata fields (timestamps, queue fields, priority);
- an acyclic parser of fixed-width extracts and constant advances, with no lookahead: then the
  bytes it can reach are bounded by `reach`, the sum of every state's extracts and advances.
Per packet (in the generated fast path, engine.py): only a unicast output or a drop is stored, and
only when the parser raised no error; a packet that went to the general path (clone, digest, ...),
a multicast packet and a packet to the CPU port are never stored.

The key is (ingress port, the first `reach` bytes) plus the packet length when the program reads
`packet_length`. The execution read no byte beyond `reach`, and the deparser writes its headers
followed by the packet from the parser's last offset (at most `reach`), so the output is a fixed
prefix (for this key) followed by `data[reach:]`: the entry keeps that prefix. Every control-plane
write clears the cache (runtime.Switch wraps its mutating methods), and so does every regeneration
of the fast path. When the cache holds `size` entries it is cleared.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

DEFAULT_SIZE = 65536

# Primitives whose effect is a function of the packet's fields and the action's arguments only.
PURE_PRIMITIVES = frozenset(
    {
        "assign",
        "assign_VL",
        "assign_header",
        "assign_union",
        "assign_header_stack",
        "add_header",
        "remove_header",
        "mark_to_drop",
        "drop",
        "exit",
        "assume",
        "assert",
        "push",
        "pop",
        "modify_field_with_hash_based_offset",
    }
)
# standard_metadata fields whose value a packet's bytes and port do not determine.
NONDETERMINISTIC_FIELDS = (
    "ingress_global_timestamp",
    "egress_global_timestamp",
    "enq_timestamp",
    "enq_qdepth",
    "deq_timedelta",
    "deq_qdepth",
    "priority",
    "qid",
)


@dataclass(frozen=True)
class CachePlan:
    """How the fast path keys the cache for one program: `reach` bytes, and the length or not."""

    reach: int
    keys_length: bool


def plan(bmv2: dict) -> tuple[CachePlan | None, str]:
    """(the plan, "") when the program's results may be cached, else (None, the reason why not)."""
    for key in ("register_arrays", "counter_arrays", "meter_arrays", "learn_lists", "extern_instances"):
        if bmv2.get(key):
            return None, f"the program has {key}"
    for pipe in bmv2.get("pipelines", []):
        for t in pipe.get("tables", []):
            if t.get("support_timeout"):
                return None, f"table {t.get('name')} supports idle timeouts"
            if t.get("with_counters") or t.get("direct_meters"):
                return None, f"table {t.get('name')} has a direct counter or meter"
        for prof in pipe.get("action_profiles", []):
            if prof.get("selector"):
                return None, f"action profile {prof.get('name')} has a selector"
    for calc in bmv2.get("calculations", []):
        if calc.get("algo") == "random":
            return None, f"calculation {calc.get('name')} is random"
    for a in bmv2.get("actions", []):
        for p in a.get("primitives", []):
            if p.get("op") not in PURE_PRIMITIVES:
                return None, f"action {a.get('name')} uses {p.get('op')}"
    src = json.dumps({k: v for k, v in bmv2.items() if k not in ("header_types", "headers", "field_aliases")})
    for name in NONDETERMINISTIC_FIELDS:
        if f'"{name}"]' in src:
            return None, f"the program reads standard_metadata.{name}"
    if '"lookahead"' in src:
        return None, "the parser looks ahead"
    if '{"type": "payload"' in src:  # update_checksum_with_payload: the result depends on it all
        return None, "a calculation reads the payload"
    reach, why = _parser_reach(bmv2)
    if reach is None:
        return None, why
    return CachePlan(reach, '"packet_length"]' in src), ""


def _parser_reach(bmv2: dict) -> tuple[int | None, str]:
    """An upper bound of the bytes any parse can consume (None with a reason when there is none)."""
    from p4kit.switch.codegen import _has_cycle

    widths = {  # a varbit field's width is not a number: such a header has none here
        t["name"]: sum(f[1] for f in t["fields"])
        for t in bmv2.get("header_types", [])
        if all(isinstance(f[1], int) for f in t["fields"])
    }
    htype = {h["name"]: h["header_type"] for h in bmv2.get("headers", [])}
    parsers = bmv2.get("parsers", [])
    if len(parsers) != 1:
        return None, "the program does not have exactly one parser"
    states = parsers[0].get("parse_states", [])
    if _has_cycle(states):
        return None, "the parser has a loop"
    bits = 0
    for st in states:
        for op in st.get("parser_ops", []):
            kind = op.get("op")
            ps = op.get("parameters", [])
            if kind == "extract":
                ref = ps[0]
                if ref.get("type") != "regular" or htype.get(ref.get("value")) not in widths:
                    return None, "the parser extracts into a stack, a union or a varbit header"
                bits += widths[htype[ref["value"]]]
            elif kind in ("advance", "shift"):
                n = _const(ps[0])
                if n is None:
                    return None, "the parser advances by a computed amount"
                bits += n * 8 if kind == "shift" else n
            elif kind == "primitive":
                for p in ps:
                    if p.get("op") not in PURE_PRIMITIVES:
                        return None, f"the parser uses {p.get('op')}"
            elif kind not in ("set", "verify"):
                return None, f"the parser uses {kind}"
    return (bits + 7) // 8, ""


def _const(v: Any) -> int | None:
    if isinstance(v, dict) and v.get("type") == "hexstr":
        return int(v["value"], 16)
    return None


class FlowCache:
    """The store: key -> (egress port, output prefix), or (None, drop reason) for a drop.

    Why a dict cleared when full rather than an LRU: a hit must cost one lookup and nothing else
    (an LRU moves the entry on every hit); a working set larger than the bound misses either way."""

    def __init__(self, reach: int, size: int = DEFAULT_SIZE) -> None:
        self.reach = reach
        self.size = size
        self.entries: dict[Any, tuple[int | None, Any]] = {}
        self.get = self.entries.get
        self.clear = self.entries.clear

    def put(self, key: Any, es: int, out: bytes, data: bytes, off: int) -> None:
        """Store a unicast output of a packet whose parser stopped at `off`."""
        reach = self.reach
        if off > reach:  # cannot happen when `reach` bounds the parser; never store a wrong entry
            return
        extra = len(data) - reach
        if extra > 0:
            if not out.endswith(data[reach:]):
                return
            out = out[: len(out) - extra]
        if len(self.entries) >= self.size:
            self.entries.clear()
        self.entries[key] = (es, out)

    def put_drop(self, key: Any, reason: str) -> None:
        if len(self.entries) >= self.size:
            self.entries.clear()
        self.entries[key] = (None, reason)


__all__ = ["DEFAULT_SIZE", "CachePlan", "FlowCache", "plan"]
