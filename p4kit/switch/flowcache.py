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

The key. When flowkey.py can prove which bits the result depends on (the fields the program reads
or writes; select keys, table keys, conditions, action operands, hash inputs), the key is (ingress
port, min(length, reach), the first `reach` bytes as an integer masked to those bits), and the
output is rebuilt from the packet's own unread bits, the entry's constant bits and each Internet
checksum over unread bits updated by their difference. Otherwise it is (ingress port, the first
`reach` bytes), with the packet length too when the program reads `packet_length`: the execution
read no byte beyond `reach`, and the deparser writes its headers followed by the packet from the
parser's last offset (at most `reach`), so the output is a fixed prefix (for this key) followed by
`data[reach:]`. Every control-plane write clears the cache (runtime.Switch wraps its mutating
methods), and so does every regeneration of the fast path. When the cache holds `size` entries it
is cleared.

What a miss costs. One miss in `insert_inv_prob` (default 100) is stored, as Open vSwitch's
exact-match cache does (other_config:emc-insert-inv-prob): a store costs about as much as the
pipeline. The port loop's batches stop looking packets up for BYPASS packets when fewer than one
in COLD_RATIO of the last SAMPLE looked-up ones hit, so traffic that never repeats pays almost
nothing for the cache; `process_packet` (one packet at a time) always looks up.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from p4kit.switch import flowkey

DEFAULT_SIZE = 65536
# One miss in this many is stored (Open vSwitch's emc-insert-inv-prob, whose default is 100 too).
DEFAULT_INSERT_INV_PROB = 100
# The batch loop's bypass: judged over SAMPLE looked-up packets, cold below one hit in COLD_RATIO,
# then BYPASS packets go straight to the pipeline.
SAMPLE = 64
COLD_RATIO = 8
BYPASS = 1024

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
    """How the fast path keys the cache for one program: `reach` bytes, the length or not, and
    the bits the program reads when it is known (flowkey.py; None: every reachable byte)."""

    reach: int
    keys_length: bool
    key: flowkey.KeyPlan | None = None


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
    key, _ = flowkey.analyse(bmv2)
    return CachePlan(reach, '"packet_length"]' in src, key), ""


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
    """The store, and the code the fast path runs around it (engine.py splices it in).

    Entries: key -> (None, drop reason) for a drop; (egress port, prefix, offset) when the output
    is `prefix + data[offset:]`; or (egress port, None, offset, flip, shift, checksums, keep,
    const, one) when the key leaves bits out (flowkey.py): the output's first `offset` bytes are
    the key integer with the pipeline's changes flipped, each checksum updated by its inputs'
    difference (`one` spells the usual single checksum out for the fast path).

    Why a dict cleared when full rather than an LRU: a hit must cost one lookup and nothing else
    (an LRU moves the entry on every hit); a working set larger than the bound misses either way.
    Why one miss in `insert_inv_prob` stored (Open vSwitch's exact-match cache does the same,
    `other_config:emc-insert-inv-prob`, default 100): storing costs about as much as the pipeline,
    and traffic that never repeats would pay it on every packet for nothing; a flow that does
    repeat is stored after about N packets all the same.
    Why the batch loop stops looking up for BYPASS packets when fewer than one in COLD_RATIO of
    the last SAMPLE looked-up packets hit: a lookup (key, dict) costs about a tenth of the
    pipeline, which traffic that never repeats would also pay on every packet for nothing."""

    def __init__(
        self,
        plan: CachePlan,
        size: int = DEFAULT_SIZE,
        insert_inv_prob: int = DEFAULT_INSERT_INV_PROB,
        seed: int | None = None,
        header_ids: dict[str, int] | None = None,
    ) -> None:
        self.plan = plan
        self.key = plan.key
        self.reach = plan.key.reach if plan.key is not None else plan.reach
        self.size = size
        self.insert_inv_prob = max(1, int(insert_inv_prob))
        self.entries: dict[Any, tuple] = {}
        self.get = self.entries.get
        self.random = random.Random(seed).random
        self.skip = self.seen = self.hits = 0
        self.errors = 0  # stores that failed (see put)
        ids = header_ids or {}
        order: list[tuple[int, str]] = []
        if self.key is not None:
            names = {h for lay in self.key.layouts for h in lay}
            order = sorted((ids[h], h) for h in names if h in ids)
        self.order = order
        self.all = (1 << (8 * self.reach)) - 1

    def clear(self) -> None:
        self.entries.clear()
        self.skip = self.seen = self.hits = 0

    # ------------------------------------------------------------------ the store
    def put(self, key: Any, es: int, out: bytes, data: bytes, off: int, H: list, x: int | None) -> None:
        """Store a unicast output of a packet whose parser stopped at `off` (x: its key integer).
        Storing must never cost the packet its output: a failure here only leaves it uncached
        (and is counted in `errors`)."""
        try:
            self._put(key, es, out, data, off, H, x)
        except Exception:
            self.errors += 1
            self.entries.pop(key, None)

    def _put(self, key: Any, es: int, out: bytes, data: bytes, off: int, H: list, x: int | None) -> None:
        if len(self.entries) >= self.size:
            self.entries.clear()
        kp = self.key
        reach = self.reach
        if kp is None or x is None:
            if off > reach:  # cannot happen when `reach` bounds the parser; never store a wrong entry
                return
            extra = len(data) - reach
            if extra > 0:
                if not out.endswith(data[reach:]):
                    return
                out = out[: len(out) - extra]
            self.entries[key] = (es, out, reach)
            return
        lay = kp.layouts.get(tuple(name for hid, name in self.order if H[hid][0]))
        # The layout's promise (flowkey.py): the output is the input with fields changed in place.
        if lay is None or lay.off != off or len(out) != len(data) or out[off:] != data[off:]:
            return
        shift = 8 * (reach - off)
        o = int.from_bytes(out[:off], "big") << shift
        keep = lay.keep
        if (o ^ x) & keep:  # a bit the program does not touch changed: never store a wrong entry
            return
        if not keep and not lay.checksums:
            self.entries[key] = (es, out[:off], off)
            return
        targets = 0
        sums = []
        for c in lay.checksums:
            targets |= 0xFFFF << c.target
            s = 0xFFFF - ((o >> c.target) & 0xFFFF)  # the ones'-complement sum, mod 0xFFFF
            for m, g in c.groups:
                s -= (x & m) << g
            sums.append((s % 0xFFFF, c.target, c.groups))
        fixed = self.all ^ keep ^ targets
        # Every bit of the layout outside `keep` and the targets is in the key, so a packet of this
        # key has x's bits there: flipping the ones the pipeline changed gives the output.
        flip = (x ^ o) & fixed & ~((1 << shift) - 1)
        one = None  # the usual case written out in the fast path: one checksum, one shift
        if len(sums) == 1 and len(sums[0][2]) <= 1:
            base, t, groups = sums[0]
            m, g = groups[0] if groups else (0, 0)
            one = (base, t, m, g, self.all ^ (0xFFFF << t))
        self.entries[key] = (es, None, off, flip, shift, tuple(sums), keep, o & fixed, one)

    def put_drop(self, key: Any, reason: str) -> None:
        if len(self.entries) >= self.size:
            self.entries.clear()
        self.entries[key] = (None, reason)

    @staticmethod
    def output(c: tuple, x: int, data: bytes) -> bytes | None:
        """A masked entry's output for a packet of key integer x; None when a checksum's sum is
        0 mod 0xFFFF (a sum of 0xFFFF and one of 0 differ there: the pipeline decides)."""
        v = (x & c[6]) | c[7]
        for base, t, groups in c[5]:
            s = base
            for m, g in groups:
                s += (x & m) << g
            s %= 0xFFFF
            if not s:
                return None
            v |= (0xFFFF - s) << t
        return (v >> c[4]).to_bytes(c[2]) + data[c[2] :]

    # ------------------------------------------------------------------ the batch loop's sampler
    def begin(self, frames: Any) -> bool:
        """Whether this batch looks packets up (False while bypassing after a cold sample)."""
        if self.skip > 0:
            self.skip -= len(frames) if hasattr(frames, "__len__") else 1
            return False
        return True

    def end(self, frames: Any, hits: int) -> None:
        self.seen += len(frames) if hasattr(frames, "__len__") else 1
        self.hits += hits
        if self.seen >= SAMPLE:
            if self.hits * COLD_RATIO < self.seen:
                self.skip = BYPASS
            self.seen = self.hits = 0

    # ------------------------------------------------------------------ the fast path's code
    def lookup_source(self) -> list[str]:
        """Lines (in the packet body, 4 spaces in) that key the packet and return a hit's output."""
        kp = self.key
        r = self.reach
        length = "len(data)" if self.plan.keys_length else None
        if kp is None:
            key = f"(port, {length}, data[:{r}])" if length else f"(port, data[:{r}])"
            return [
                "    if _fc_on:",
                f"        _k = {key}",
                "        _x = None",
                "        _c = FC_GET(_k)",
                "        if _c is not None:",
                "            _fc_hits += 1",
                "            es = _c[0]",
                "            if es is None:",
                "                drop(_c[1])",
                "                return []",
                "            out = _c[1] + data[_c[2]:]",
                "            return [(es, out)]",
            ]
        # A packet shorter than `reach` is padded with zeros, and its key has its length too.
        return [
            "    if _fc_on:",
            f"        if len(data) >= {r}:",
            f"            _x = FC_INT(data[:{r}])",
            f"            _k = (port, {length + ', ' if length else ''}_x & FC_READ)",
            "        else:",
            "            _x = FC_INT(data + FC_PAD[len(data):])",
            "            _k = (port, len(data), -1, _x & FC_READ)",
            "        _c = FC_GET(_k)",
            "        if _c is not None:",
            "            _fc_hits += 1",
            "            es = _c[0]",
            "            if es is None:",
            "                drop(_c[1])",
            "                return []",
            "            if _c[1] is not None:",
            "                out = _c[1] + data[_c[2]:]",
            "                return [(es, out)]",
            "            if not _c[5]:",
            "                out = ((_x ^ _c[3]) >> _c[4]).to_bytes(_c[2]) + data[_c[2]:]",
            "                return [(es, out)]",
            "            _cs = _c[8]",
            "            if _cs is not None:",
            "                _s = (_cs[0] + ((_x & _cs[2]) << _cs[3])) % 65535",
            "                if _s:",
            "                    _v = ((_x ^ _c[3]) & _cs[4]) | ((65535 - _s) << _cs[1])",
            "                    out = (_v >> _c[4]).to_bytes(_c[2]) + data[_c[2]:]",
            "                    return [(es, out)]",
            "            else:",
            "                out = FC_OUTPUT(_c, _x, data)",
            "                if out is not None:",
            "                    return [(es, out)]",
        ]

    def store_source(self, call: str, indent: str) -> list[str]:
        """Lines that store a result (`call`) for one miss in `insert_inv_prob`."""
        sample = " and FC_RANDOM() < FC_P" if self.insert_inv_prob > 1 else ""
        return [f"{indent}if _fc_on and not sm[PE]{sample}:", f"{indent}    {call}"]

    single_prologue = ("    _fc_on = True", "    _fc_hits = 0")
    batch_prologue = ("    _fc_on = FC_BEGIN(frames)", "    _fc_hits = 0")
    batch_epilogue = ("    if _fc_on:", "        FC_END(frames, _fc_hits)")

    def env(self) -> dict[str, Any]:
        return {
            "FC_GET": self.get,
            "FC_PUT": self.put,
            "FC_DROP": self.put_drop,
            "FC_OUTPUT": self.output,
            "FC_READ": self.key.read if self.key is not None else 0,
            "FC_PAD": bytes(self.reach),
            "FC_INT": int.from_bytes,  # big-endian by default (Python 3.11), a little faster without it
            "FC_RANDOM": self.random,
            "FC_P": 1.0 / self.insert_inv_prob,
            "FC_BEGIN": self.begin,
            "FC_END": self.end,
        }


__all__ = ["DEFAULT_INSERT_INV_PROB", "DEFAULT_SIZE", "CachePlan", "FlowCache", "plan"]
