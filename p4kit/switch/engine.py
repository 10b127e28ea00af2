"""The v1model packet flow of simple_switch around the generated code.

Why here and not generated: the order of decisions after ingress and after egress is fixed by the
architecture, not the program, and is easiest to audit as plain Python. simple_switch's order:

after ingress: (1) ingress clone -> the original packet, re-parsed, to egress as INGRESS_CLONE;
(2) a pending digest is sent; (3) resubmit -> the original packet re-enters ingress (RESUBMIT);
(4) mcast_grp != 0 -> one copy per (port, rid) replica (REPLICATION); (5) egress_spec == drop port ->
drop; (6) else unicast to egress_spec.
after egress: (1) egress clone -> a copy of the processed packet (metadata reset, not re-parsed) to
egress as EGRESS_CLONE; (2) egress_spec == drop port -> drop; (3) compute checksums and deparse;
(4) recirculate -> the deparsed packet re-enters ingress (RECIRC); (5) else it leaves on egress_port.
Preserved field lists (resubmit/recirculate/clone with a field list) carry their values across.
"""

from __future__ import annotations

import json
import logging
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from p4kit.switch import flowcache, hashes
from p4kit.switch.codegen import AssertionFailed, ParserError, compile_program, sign_extend
from p4kit.switch.errors import PipelineLoadError
from p4kit.switch.program import (
    PKT_EGRESS_CLONE,
    PKT_INGRESS_CLONE,
    PKT_NORMAL,
    PKT_RECIRC,
    PKT_REPLICATION,
    PKT_RESUBMIT,
    Program,
)
from p4kit.switch.replicas import replica_owned_headers
from p4kit.switch.state import Member, SwitchState
from p4kit.switch.tables import Entry, TableState

if TYPE_CHECKING:
    from p4kit.switch.runtime import Switch

log = logging.getLogger("p4kit.switch")


class _RarePacketState:
    """Per-packet state that most packets never set, as class-level defaults.

    Why: a packet object is made for every packet, and setting a dozen attributes costs more than
    the lookup in the parser. These live in the instance dict only once an action sets them (clone,
    resubmit, recirculate, truncate, digest); each such action also sets ``special``, so the fast
    path tests one attribute to know whether it must take the general path."""

    clone: tuple[int, int] | None = None
    resubmit: int | None = None
    recirc: int | None = None
    trunc = 0
    learn = 0
    special = 0
    nx: list[int] | tuple[()] = ()  # next index of each header stack (a list when there are stacks)


class Pkt(_RarePacketState):
    """Per-packet state besides the headers (see codegen's module docstring). Whoever makes one
    sets ``H`` and ``in_port`` right after."""

    __slots__ = ("H", "data", "dlen", "in_port", "off", "plen")

    def __init__(self, data: bytes, nstacks: int) -> None:
        self.data = data
        self.off = 0
        self.dlen = self.plen = len(data)
        if nstacks:
            self.nx = [0] * nstacks


def _reg_get(cells: list[int], i: int) -> int:
    return cells[i] if 0 <= i < len(cells) else 0


def _sat(v: int, lo: int, hi: int) -> int:
    return lo if v < lo else hi if v > hi else v


def _lookahead(P: Pkt, off: int, width: int) -> int:
    start = P.off * 8 + off
    end = start + width
    if end > P.dlen * 8:
        raise _PERR_TOO_SHORT[0]
    b0, b1 = start >> 3, (end + 7) >> 3
    v = int.from_bytes(P.data[b0:b1], "big")
    return (v >> (b1 * 8 - end)) & ((1 << width) - 1)


_PERR_TOO_SHORT: list[Any] = [None]
_PERR_INVALID_ARG: list[Any] = [None]


def _stack_push(P: Pkt, H: list, ids: tuple, sid: int, n: int) -> None:
    """push_front(n), in place (generated actions keep header lists in locals)."""
    size = len(ids)
    for i in range(size - 1, -1, -1):
        if i - n >= 0:
            H[ids[i]][:] = H[ids[i - n]]
        else:
            H[ids[i]][0] = 0
    P.nx[sid] = min(size, P.nx[sid] + n)


def _stack_pop(P: Pkt, H: list, ids: tuple, sid: int, n: int) -> None:
    """pop_front(n), in place."""
    size = len(ids)
    for i in range(size):
        if i + n < size:
            H[ids[i]][:] = H[ids[i + n]]
        else:
            H[ids[i]][0] = 0
    P.nx[sid] = max(0, P.nx[sid] - n)


def _extract_vl(
    P: Pkt, H: list, hid: int, varbits: int, layout: list[tuple[int, bool]], vmax: int, too_long: Exception
) -> None:
    """Extract a header with one varbit field of ``varbits`` bits; the varbit width is stored after
    the fields (slot len(layout) + 1). BMv2's checks, in its order: a length that is not a whole
    number of bytes is ParserInvalidArgument, a packet too short PacketTooShort, a length beyond the
    field's maximum HeaderTooShort."""
    if varbits % 8:
        raise _PERR_INVALID_ARG[0]
    widths = [w if w else varbits for w, _ in layout]
    total = sum(widths)
    if total % 8:
        raise _PERR_TOO_SHORT[0]
    n = total // 8
    if P.off + n > P.dlen:
        raise _PERR_TOO_SHORT[0]
    if vmax and varbits > vmax:
        raise too_long
    v = int.from_bytes(P.data[P.off : P.off + n], "big")
    vals = []
    shift = total
    for (_w, signed), width in zip(layout, widths, strict=False):
        shift -= width
        x = (v >> shift) & ((1 << width) - 1)
        vals.append(sign_extend(x, width) if signed and width else x)
    H[hid] = [1, *vals, varbits]
    P.off += n


def _deparse_vl(h: list, layout: list[tuple[int, bool]]) -> bytes:
    varbits = h[len(layout) + 1] if len(h) > len(layout) + 1 else 0
    v = 0
    total = 0
    for i, (w, _) in enumerate(layout):
        width = w if w else varbits
        v = (v << width) | (h[i + 1] & ((1 << width) - 1) if width else 0)
        total += width
    return v.to_bytes((total + 7) // 8, "big") if total else b""


def _fmt_fields(names: list[str], h: list) -> str:
    return "{" + ", ".join(f"{n}={h[i + 1]:#x}" for i, n in enumerate(names)) + "}"


def _fmt_key(names: list[str], vals: tuple) -> str:
    if not names:
        return ""
    return " key={" + ", ".join(f"{n}={v:#x}" for n, v in zip(names, vals, strict=False)) + "}"


class Engine:
    """Compiled pipeline + the v1model flow; owned by a runtime.Switch (which holds the lock)."""

    fuse = True  # fuse lane registers (fusion.py); the native engine keeps the cells it shares

    def __init__(self, switch: Switch, program: Program, state: SwitchState) -> None:
        self.sw = switch
        self.prog = program
        self.state = state
        self.comp: Any = None
        sm = program.header_by_name["standard_metadata"]
        self.SM = sm.id
        idx = {f.name: i + 1 for i, f in enumerate(sm.htype.fields)}
        self.F = idx
        ids = [s.id for s in program.stacks.values()] + [u.id for u in program.union_stacks.values()]
        self.nstacks = max(ids, default=-1) + 1  # union stacks count their next index there too
        self.metadata_ids = [h.id for h in program.headers if h.metadata]
        # Queue fields (see queues.py); 0 where the program's standard_metadata lacks one.
        self.Q_ENQ_TS, self.Q_ENQ_DEPTH, self.Q_DEQ_DELTA, self.Q_DEQ_DEPTH, self.Q_PRIO = (
            idx.get(n, 0) for n in ("enq_timestamp", "enq_qdepth", "deq_timedelta", "deq_qdepth", "priority")
        )
        # The cache of pipeline results (flowcache.py): None when the program is not stateless.
        self.flow_cache_plan, self.flow_cache_why = flowcache.plan(program.json)
        self.flow_cache: flowcache.FlowCache | None = None

    # -------------------------------------------------------------- compile & bind
    def compile(self, tracing: bool) -> None:
        sw = self.sw
        prog = self.prog
        err_names = {c: n for n, c in prog.errors.items()}

        def perr(code: int) -> ParserError:
            return ParserError(code, err_names.get(code, str(code)))

        _PERR_TOO_SHORT[0] = perr(prog.errors.get("PacketTooShort", 1))
        _PERR_INVALID_ARG[0] = perr(prog.errors.get("ParserInvalidArgument", 6))

        def log_msg(fmt: str, args: tuple) -> None:
            try:
                msg = fmt.format(*args)
            except (IndexError, KeyError, ValueError):
                msg = f"{fmt} {args}"
            if sw._log_cb is not None:
                sw._log_cb(msg)
            else:
                log.info("log_msg: %s", msg)
            if sw._trace is not None:
                sw._trace(f"log_msg: {msg}")

        def trace_line(msg: str) -> None:
            fn = sw._trace
            if fn is not None:
                fn(msg)

        def fmt_action(name: str | None, args: tuple) -> str:
            if name is None:
                return "no action"
            info = prog.actions.get(name)
            names = info.param_names if info is not None else [f"p{i}" for i in range(len(args))]
            return f"{name}(" + ", ".join(f"{n}={v:#x}" for n, v in zip(names, args, strict=False)) + ")"

        order = [
            program_hid
            for program_hid in (prog.header_by_name[n].id for n in (prog.deparser or {}).get("order", []))
        ]
        metadata = {h.id for h in prog.headers if h.metadata}
        hash_fns = self.state.hash_fns

        def calc_slow(P: Pkt, H: list, spec: tuple) -> int:
            """A calculation over valid headers only, optionally followed by the payload."""
            items, payload, after, is_csum, key = spec
            v = 0
            n = 0
            for hid, pos, w, const in items:
                if hid is None:
                    x = const
                else:
                    h = H[hid]
                    if not h[0] and hid not in metadata:
                        continue
                    if w < 0:  # a varbit field: the extract stored its width after the fields
                        w = h[-w] if len(h) > -w else 0
                    x = h[pos] & ((1 << w) - 1)
                v = (v << w) | x
                n += w
            if not payload:
                if is_csum:
                    return hashes.csum16_int(v, n)
                pad = (-n) % 8
                return hash_fns[key]((v << pad).to_bytes((n + pad) // 8, "big"))
            pad = (-n) % 8
            parts = [(v << pad).to_bytes((n + pad) // 8, "big")]
            ser = self.comp.ns["SER"]
            for hid in order[after + 1 :]:
                if H[hid][0] and hid in ser:
                    parts.append(ser[hid](H[hid]))
            parts.append(P.data[P.off :])
            data = b"".join(parts)
            return hashes.csum16(data) if is_csum else hash_fns[key](data)

        helpers = {
            "_calc_slow": calc_slow,
            "_fmt_action": fmt_action,
            "_sx": sign_extend,
            "_sat": _sat,
            "_reg_get": _reg_get,
            "_fb": int.from_bytes,
            "_perr": perr,
            "_lookahead": _lookahead,
            "_stack_push": _stack_push,
            "_stack_pop": _stack_pop,
            "_extract_vl": _extract_vl,
            "_deparse_vl": _deparse_vl,
            "_fmt_fields": _fmt_fields,
            "_fmt_key": _fmt_key,
            "_csum16_int": hashes.csum16_int,
            "_rand": self.state.rng.randint,
            "LOG": log_msg,
            "TR": trace_line,
            "NOW_US": sw.now_us,
            "NOW_NS": sw.now_ns,
            "DROP_PORT": sw.drop_port,
        }
        self.comp = compile_program(prog, self.state, tracing, helpers, fuse=self.fuse)
        ns = self.comp.ns
        self.NEW_HEADERS = ns["NEW_HEADERS"]
        self.PARSE = ns["PARSE"]
        self.VERIFY = ns["VERIFY_CHECKSUMS"]
        self.UPDATE = ns["UPDATE_CHECKSUMS"]
        self.DEPARSE = ns["DEPARSE"]
        self.INGRESS = ns.get("PIPE_ingress", lambda P, H: None)
        self.EGRESS = ns.get("PIPE_egress", lambda P, H: None)
        self.LEARN = ns["LEARN"]
        self.FIELD_LISTS = ns["FIELD_LISTS"]
        self.tracing = tracing
        # Link rates pace the egress queues only when the program can see the queues (queues.py).
        # field_aliases name the queue fields in every p4c-built JSON (queueing_metadata.*): they are
        # not a use, and counting them put every program's WAN ports behind 64-packet queues.
        src = json.dumps(
            {k: v for k, v in prog.json.items() if k not in ("header_types", "headers", "field_aliases")}
        )
        sw.traffic_manager.use_link_rates = any(
            f'"{name}"]' in src for name in ("enq_qdepth", "deq_qdepth", "deq_timedelta", "enq_timestamp")
        )
        self.flow_cache = None  # the fast path makes its own (none exists while tracing)
        self.fast = None if tracing else self._make_fast_path()
        if self.fast is not None:
            self.process = self.fast  # type: ignore[method-assign]
            self.process_batch = self.fast_env["fast_batch"]  # type: ignore[method-assign]
        else:
            self.__dict__.pop("process", None)
            self.__dict__.pop("process_batch", None)

    def bind_entry(self, ts: TableState, e: Entry, action_id: int | None) -> None:
        nxt = self.comp.table_next.get(ts.name, {})
        if action_id is None:
            e.fn = None if ts.info.action_profile else _noop
            e.nxt = nxt.get("", None)
            return
        e.fn = self.comp.action_fns[action_id]
        name = self.prog.actions_by_id[action_id].name
        e.nxt = nxt[name] if name in nxt else nxt.get("", None)

    def bind_member(self, profile: str, m: Member) -> None:
        m.fn = self.comp.action_fns[m.action_id]
        m.nxt = {}
        for ts in self.state.tables.values():
            if ts.info.action_profile == profile:
                nxt = self.comp.table_next.get(ts.name, {})
                m.nxt[ts.name] = nxt[m.action] if m.action in nxt else nxt.get("", None)

    # -------------------------------------------------------------- packet flow
    def process_batch(
        self,
        port: int,
        frames: Iterable[bytes],
        on_error: Callable[[int], object] | None,
        sinks: Mapping[int, Callable[[bytes], bool]] | None = None,
    ) -> list[tuple[int, bytes]]:
        """Packets from one port in order, all outputs in order; a packet that raises goes to
        ``on_error(port)`` (re-raised without it). The fast path replaces this with a generated
        loop that has the packet code inline, and hands unicast outputs to ``sinks`` (this general
        version returns every output, which the sinks' contract allows)."""
        out: list[tuple[int, bytes]] = []
        for data in frames:
            try:
                out.extend(self.process(port, data))
            except Exception:
                if on_error is None:
                    raise
                on_error(port)
        return out

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        """The general path (used when tracing; the fast path replaces this attribute otherwise)."""
        if self.sw.drop_log:
            self.sw.drop_log.clear()
        ingress_q: deque = deque([(data, port, PKT_NORMAL, None)])
        return self._run(ingress_q, deque(), [])

    def _run(self, ingress_q: deque, egress_q: deque, out: list) -> list[tuple[int, bytes]]:
        """The general flow: a queue of packets entering ingress and one of copies entering egress."""
        budget = self.sw.max_recirculations + 1
        while ingress_q or egress_q:
            if egress_q:
                P, eport = egress_q.popleft()
                self._guard(self._egress, P, eport, ingress_q, egress_q, out)
                continue
            item = ingress_q.popleft()
            budget -= 1
            if budget < 0:
                self._drop("too many resubmits/recirculations for one packet")
                continue
            self._guard(self._ingress, *item, ingress_q, egress_q)
        return out

    def _make_fast_path(self) -> Any:
        """A closure for the common case -- one packet in, at most one out, no clone, digest,
        resubmit, multicast or recirculation -- with every constant bound as a closure variable.
        As soon as the packet needs anything else it continues on the general path."""
        sw = self.sw
        F = self.F
        SM = self.SM
        IP, _IT, PL, IGTS = (
            F["ingress_port"],
            F["instance_type"],
            F["packet_length"],
            F["ingress_global_timestamp"],
        )
        ES, EP, EGTS, MG, PE = (
            F["egress_spec"],
            F["egress_port"],
            F["egress_global_timestamp"],
            F["mcast_grp"],
            F["parser_error"],
        )
        NEW, PARSE, VERIFY, INGRESS = self.NEW_HEADERS, self.PARSE, self.VERIFY, self.INGRESS
        EGRESS, UPDATE, DEPARSE = self.EGRESS, self.UPDATE, self.DEPARSE
        DROP = sw.drop_port
        clock, t0 = sw.clock, sw._t0
        nstacks = self.nstacks
        cpu_port = sw.cpu_port
        # The fast path exists only while nothing is traced (tracing regenerates the module without
        # it), so a drop is just its reason appended to the switch's drop log.
        drop = sw.drop_log.append
        slow_ingress, slow_egress = self._continue_after_ingress, self._continue_after_egress

        # The closure is generated as source so that stages the program does not have (no checksum,
        # an empty egress, timestamps nobody reads) cost nothing at all.
        src_json = json.dumps(
            {k: v for k, v in self.prog.json.items() if k not in ("header_types", "headers", "field_aliases")}
        )
        uses_ts = "global_timestamp" in src_json
        ns = self.comp.ns
        # The cache of results serves this code only while nothing paces the queues: a rated port
        # sends packets through the general path's traffic manager.
        fc = self._flow_cache_for(tm_any_rate=sw.traffic_manager.any_rate)
        lines = ["def body(port, data):"]
        if fc is not None:  # key, lookup and a hit's output (flowcache.py writes them)
            lines += fc.lookup_source()
        lines += [
            "    P = Pkt(data, nstacks)",
            f"    H = P.H = {ns['NEW_HEADERS_EXPR']}",
            "    P.in_port = port",
            "    sm = H[SM]",
            "    sm[IP] = port & 0x1FF",
            "    sm[PL] = P.plen",
        ]
        if uses_ts:
            lines.append("    sm[IGTS] = now = int((clock() - t0) * 1000000) & 0xFFFFFFFFFFFF")
        lines += [
            "    try:",
            # An acyclic parser (most) starts at its first state's function directly.
            *(
                ["        s = PARSE_START(P, H)", "        while s is not None:", "            s = s(P, H)"]
                if ns.get("PARSE_START")
                else ["        PARSE(P, H)"]
            ),
            "    except ParserError as exc:",
            "        sm[PE] = exc.code",
        ]
        if ns.get("HAS_VERIFY"):  # the checksum verification inline (its body has no return)
            lines += ns["VERIFY_BODY"].split("\n") if "VERIFY_BODY" in ns else ["    VERIFY(P, H)"]
        # The ingress control inline (its function body has no return statement).
        lines += ns["PIPE_BODY_ingress"].split("\n") if "PIPE_BODY_ingress" in ns else ["    INGRESS(P, H)"]
        lines += [
            "    if P.special:",
            "        return slow_ingress(P, data, port)",
            "    if sm[MG]:",
            "        return mcast(P, port)",
            "    es = sm[ES]",
            "    if es == DROP:",
            *(fc.store_source("FC_DROP(_k, DROP_IN)", "        ") if fc is not None else []),
            "        drop(DROP_IN)",
            "        return []",
        ]
        # The traffic manager (queues.py) costs nothing here unless a port has a rate or the program
        # reads the queue fields or sets a priority; a rate change regenerates this code.
        tm = sw.traffic_manager
        if tm.any_rate:
            lines += ["    if tm_rated(es):", "        return slow_ingress(P, data, port)"]
        if self.Q_PRIO and '"priority"]' in src_json:
            lines += ["    if sm[QPRIO] >= tm.priorities:", "        return slow_ingress(P, data, port)"]
        if self.Q_ENQ_TS and '"enq_timestamp"]' in src_json:
            lines.append("    sm[QENQTS] = int((clock() - t0) * 1000000) & 0xFFFFFFFF")
        lines += [
            "    sm[EP] = es",
            "    sm[ES] = 0",
        ]
        if uses_ts:
            lines.append("    sm[EGTS] = now")
        if ns.get("HAS_EGRESS"):
            lines += [
                "    EGRESS(P, H)",
                "    if P.special:",
                "        return slow_egress(P, es)",
                "    if sm[ES] == DROP:",
                *(fc.store_source("FC_DROP(_k, DROP_OUT)", "        ") if fc is not None else []),
                "        drop(DROP_OUT)",
                "        return []",
            ]
        if ns.get("HAS_UPDATE"):
            lines.append("    UPDATE(P, H)")
        lines += [
            "    out = DEPARSE(P, H)",
            "    if es == cpu_port and sw._packet_in_cb is not None:",
            "        return packet_in(out, port)",
            *(fc.store_source("FC_PUT(_k, es, out, data, P.off, H, _x)", "    ") if fc is not None else []),
            "    return [(es, out)]",
        ]

        # Multicast without the general path's queues: each replica gets a copy of the headers
        # (the last one takes the original's), runs egress and is deparsed; anything rarer (clones,
        # recirculation, a rated queue) still goes to the general path.
        # A replica copies the header lists egress and the checksum update may write, and shares
        # the others with its siblings (replicas.py).
        owned = replica_owned_headers(self.prog)
        nh = len(self.prog.headers)
        if owned is None or [h.id for h in self.prog.headers] != list(range(nh)):
            replica_headers = "[h[:] for h in H0]"
        else:
            replica_headers = (
                "[" + ", ".join(f"H0[{i}][:]" if i in owned else f"H0[{i}]" for i in range(nh)) + "]"
            )
        # The replica's egress and checksum update are written into the loop (their bodies have no
        # return statement); the replica is P, H there, as in the bodies, and the original P0, H0.
        egress_body = ns["PIPE_BODY_egress"].split("\n") if "PIPE_BODY_egress" in ns else ["    EGRESS(P, H)"]
        # the headers after the last one a replica owns, and the payload, are packed once, and the
        # checksums' terms over them summed once (the memo M)
        replica_deparse = "DEPARSE_R" in ns and owned is not None
        update_key = "UPDATE_BODY_R" if replica_deparse and "UPDATE_BODY_R" in ns else "UPDATE_BODY"
        update_body = ns[update_key].split("\n") if update_key in ns else ["    UPDATE(P, H)"]
        mc = [
            "def mcast(P0, port):",
            "    H0 = P0.H",
            "    mg = H0[SM][MG]",
            "    reps = replicas(mg)",
            "    if not reps:",
            "        drop(f'multicast group {mg} has no replicas (or does not exist)')",
            "        return []",
        ]
        if tm.any_rate:
            mc += [
                "    for rp, _ in reps:",
                "        if tm_rated(rp):",
                "            return slow_ingress(P0, P0.data, port)",
            ]
        if uses_ts:
            mc.append("    now = int((clock() - t0) * 1000000) & 0xFFFFFFFFFFFF")
        mc += [
            "    outs = []",
            *(
                [
                    f"    M = [None] * {ns.get('REPLICA_MEMO_SLOTS', 8)}  # what the replicas share (DEPARSE_R, *_R)"
                ]
                if replica_deparse
                else []
            ),
            "    last = len(reps) - 1",
            "    for k, (rp, rid) in enumerate(reps):",
            "        if k < last:",
            "            P = Pkt.__new__(Pkt)",
            "            P.data, P.off, P.dlen, P.plen, P.in_port = P0.data, P0.off, P0.dlen, P0.plen, P0.in_port",
            *(["            P.nx = P0.nx[:]"] if nstacks else []),
            f"            P.H = H = {replica_headers}",
            "        else:",
            "            P, H = P0, H0",
            "        qs = H[SM]",
            "        qs[RID] = rid",
            "        qs[IT] = 5  # REPLICATION",
            "        qs[EP] = rp",
            "        qs[ES] = 0",
        ]
        if uses_ts:
            mc.append("        qs[EGTS] = now")
        if self.Q_ENQ_TS and '"enq_timestamp"]' in src_json:
            mc.append("        qs[QENQTS] = int((clock() - t0) * 1000000) & 0xFFFFFFFF")
        if ns.get("HAS_EGRESS"):
            mc += [
                *["    " + ln for ln in egress_body],
                "        if P.special:",
                "            outs.extend(slow_egress(P, rp))",
                "            continue",
                "        if qs[ES] == DROP:",
                "            drop(DROP_OUT)",
                "            continue",
            ]
        if ns.get("HAS_UPDATE"):
            mc += ["    " + ln for ln in update_body]
        mc += [
            "        out = DEPARSE_R(P, H, M)" if replica_deparse else "        out = DEPARSE(P, H)",
            "        if rp == cpu_port and sw._packet_in_cb is not None:",
            "            packet_in(out, port)",
            "        else:",
            "            outs.append((rp, out))",
            "    return outs",
        ]

        def packet_in(out: bytes, port: int) -> list:
            from p4kit.switch.runtime import PacketIn

            sw._packet_in_cb(PacketIn(out, port))
            return []

        env = {
            "AssertionFailed": AssertionFailed,
            "drop_log": sw.drop_log,
            "Pkt": Pkt,
            "NEW_PKT": object.__new__,
            "ParserError": ParserError,
            "nstacks": nstacks,
            "NEW": NEW,
            "PARSE": PARSE,
            "PARSE_START": ns.get("PARSE_START"),
            "VERIFY": VERIFY,
            "INGRESS": INGRESS,
            "EGRESS": EGRESS,
            "UPDATE": UPDATE,
            "DEPARSE": DEPARSE,
            "SM": SM,
            "IP": IP,
            "PL": PL,
            "IGTS": IGTS,
            "ES": ES,
            "EP": EP,
            "EGTS": EGTS,
            "MG": MG,
            "PE": PE,
            "DROP": DROP,
            "DROP_IN": f"egress_spec is the drop port {DROP} at the end of ingress (mark_to_drop)",
            "DROP_OUT": f"egress_spec is the drop port {DROP} at the end of egress (mark_to_drop)",
            "clock": clock,
            "t0": t0,
            "cpu_port": cpu_port,
            "sw": sw,
            "drop": drop,
            "slow_ingress": slow_ingress,
            "slow_egress": slow_egress,
            "packet_in": packet_in,
            "tm": tm,
            "tm_rated": tm.rated,
            "replicas": self.state.pre.replicas,
            "RID": F["egress_rid"],
            "IT": F["instance_type"],
            "QPRIO": self.Q_PRIO,
            "QENQTS": self.Q_ENQ_TS,
            **(fc.env() if fc is not None else {}),
        }
        overlap = {k for k in env if k in ns and ns[k] is not env[k]}
        if overlap:  # a generated name would shadow one of the fast path's: a codegen bug
            raise PipelineLoadError(f"fast path names clash with generated ones: {sorted(overlap)}")
        env = {**ns, **env}  # the inlined control refers to the generated module's names
        # Wrap the body in the guard without an extra call: header, then the body indented in `try`.
        wrapped = [
            "def fast(port, data):",
            "    if drop_log:",
            "        drop_log.clear()",
            *(fc.single_prologue if fc is not None else ()),
            "    try:",
            *["    " + _new_packet_inline(ln, nstacks) for ln in lines[1:]],
            "    except AssertionFailed as exc:",
            "        drop(f'{exc} (simple_switch would stop)')",
            "        return []",
            "    except Exception as exc:  # a malformed packet must never escape",
            "        if sw.raise_internal_errors:",
            "            raise",
            "        drop(f'internal error while processing the packet: {type(exc).__name__}: {exc}')",
            "        return []",
        ]
        # The same code once more as a loop over a receive batch: no call per packet, and each
        # `return X` of the body becomes "collect X, next packet".
        # A packet object is reused for the next packet while nothing else can hold it: not after
        # the general path took it, nor once an action set a rare field (it lives in the instance
        # dict, see _RarePacketState), nor after an error.
        fresh = [
            "if P is None or P.special:",
            "    P = Pkt(data, nstacks)",
            "else:",
            "    P.data = data",
            "    P.off = 0",
            "    P.dlen = P.plen = len(data)",
            *(["    P.nx = [0] * nstacks"] if nstacks else []),
        ]
        body: list[str] = []
        for ln in _returns_to_collect(lines[1:]):
            body += ["    " + f for f in fresh] if ln.strip() == "P = Pkt(data, nstacks)" else [ln]
        batch = [
            "def fast_batch(port, frames, on_error, sinks=None):",
            "    _outs = []",
            "    _append = _outs.append",
            "    _extend = _outs.extend",
            "    _sink = (sinks or {}).get",
            "    P = None",
            "    if drop_log:",
            "        drop_log.clear()  # after a batch it holds the drop reasons of the whole batch",
            *(fc.batch_prologue if fc is not None else ()),
            "    for data in frames:",
            "        try:",
            *["        " + ln for ln in body],
            "        except AssertionFailed as exc:",
            "            P = None",
            "            drop(f'{exc} (simple_switch would stop)')",
            "        except Exception as exc:  # a malformed packet must never escape",
            "            P = None",
            "            if sw.raise_internal_errors:",
            "                if on_error is None:",
            "                    raise",
            "                on_error(port)",
            "                continue",
            "            drop(f'internal error while processing the packet: {type(exc).__name__}: {exc}')",
            *(fc.batch_epilogue if fc is not None else ()),
            "    return _outs",
        ]
        self.fast_source = "\n".join([*mc, "", *wrapped, "", *batch]) + "\n"  # kept for reading and debugging
        exec(compile(self.fast_source, "<p4kit fast path>", "exec"), env)
        self.fast_env = env
        return env["fast"]

    def _flow_cache_for(self, tm_any_rate: bool) -> flowcache.FlowCache | None:
        """The (emptied) cache the fast path about to be generated uses, or None: the program is
        not stateless, the switch runs without it (--no-flow-cache), or a port is rated. Emptied
        because whatever the regeneration changed (drop port, CPU port, rates) changes results."""
        plan = self.flow_cache_plan
        size = self.sw.flow_cache_size
        if plan is None or size <= 0 or tm_any_rate:
            self.flow_cache = None
            return None
        ids = {h.name: h.id for h in self.prog.headers}
        inv = getattr(self.sw, "flow_cache_insert_inv_prob", flowcache.DEFAULT_INSERT_INV_PROB)
        self.flow_cache = flowcache.FlowCache(plan, size, inv, self.sw.seed, ids)
        return self.flow_cache

    def flow_cache_clear(self) -> None:
        """Forget every cached result (a control-plane write may change any of them)."""
        if self.flow_cache is not None:
            self.flow_cache.clear()

    def retire(self) -> None:
        """The switch replaces this engine (a new program); the Python engine holds nothing to end."""

    def port_target(self) -> Any:
        """What the native port loop would run (native/engine.py): the Python engine has nothing."""
        return None

    def _continue_after_ingress(self, P: Pkt, data: bytes, port: int) -> list[tuple[int, bytes]]:
        ingress_q: deque = deque()
        egress_q: deque = deque()
        out: list = []
        self._guard(self._after_ingress, P, data, port, ingress_q, egress_q)
        return self._run(ingress_q, egress_q, out)

    def _continue_after_egress(self, P: Pkt, port: int) -> list[tuple[int, bytes]]:
        ingress_q: deque = deque()
        egress_q: deque = deque()
        out: list = []
        self._guard(self._after_egress, P, port, ingress_q, egress_q, out)
        return self._run(ingress_q, egress_q, out)

    def _guard(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except AssertionFailed as exc:
            self._drop(f"{exc} (simple_switch would stop)")
        except Exception as exc:  # a malformed packet must never escape process()
            if self.sw.raise_internal_errors:
                raise
            self._drop(f"internal error while processing the packet: {type(exc).__name__}: {exc}")

    def _drop(self, reason: str) -> None:
        self.sw.drop_log.append(reason)
        if self.sw._trace is not None:
            self.sw._trace(f"drop: {reason}")

    def _new_packet(self, data: bytes, port: int, itype: int) -> Pkt:
        P = Pkt(data, self.nstacks)
        H = self.NEW_HEADERS()
        P.H = H
        P.in_port = port
        sm = H[self.SM]
        F = self.F
        sm[F["ingress_port"]] = port & 0x1FF
        sm[F["instance_type"]] = itype
        sm[F["packet_length"]] = len(data)
        sm[F["ingress_global_timestamp"]] = self.sw.now_us() & 0xFFFFFFFFFFFF
        return P

    def _parse(self, P: Pkt) -> None:
        try:
            self.PARSE(P, P.H)
        except ParserError as exc:
            P.H[self.SM][self.F["parser_error"]] = exc.code
            if self.tracing:
                self.sw._trace(f"parser: error {exc.name} at byte {P.off}")

    def _preserve(self, H: list, fl_id: int | None) -> list[tuple[int, int, int]]:
        if not fl_id:
            return []
        return [(hid, pos, H[hid][pos]) for hid, pos in self.FIELD_LISTS.get(fl_id, [])]

    @staticmethod
    def _restore(H: list, saved: list[tuple[int, int, int]] | None) -> None:
        for hid, pos, v in saved or ():
            H[hid][pos] = v

    def _ingress(
        self,
        data: bytes,
        port: int,
        itype: int,
        saved: list | None,
        ingress_q: deque,
        egress_q: deque,
    ) -> None:
        sw = self.sw
        tracing = self.tracing
        P = self._new_packet(data, port, itype)
        H = P.H
        if saved:
            # preserved fields first, then the instance type (simple_switch's
            # copy_field_list_and_set_type): resubmit(standard_metadata) keeps RESUBMIT
            self._restore(H, saved)
            H[self.SM][self.F["instance_type"]] = itype
        if tracing:
            sw._trace(f"ingress: packet of {len(data)} bytes on port {port} (instance_type {itype})")
        self._parse(P)
        self.VERIFY(P, H)
        self.INGRESS(P, H)
        self._after_ingress(P, data, port, ingress_q, egress_q)

    def _after_ingress(self, P: Pkt, data: bytes, port: int, ingress_q: deque, egress_q: deque) -> None:
        sw = self.sw
        F = self.F
        tracing = self.tracing
        H = P.H
        sm = H[self.SM]
        # (1) ingress clone
        if P.clone is not None:
            sess, fl = P.clone
            self._clone(sess, fl, P, PKT_INGRESS_CLONE, egress_q, reparse=True)
        # (2) digest
        if P.learn:
            self._learn(P)
        # (3) resubmit
        if P.resubmit is not None:
            if tracing:
                sw._trace("ingress: resubmit")
            ingress_q.appendleft((data, port, PKT_RESUBMIT, self._preserve(H, P.resubmit)))
            return
        # (4) multicast
        mg = sm[F["mcast_grp"]]
        if mg:
            reps = self.state.pre.replicas(mg)
            if tracing:
                sw._trace(f"ingress: multicast group {mg} -> {list(reps)}")
            if not reps:
                self._drop(f"multicast group {mg} has no replicas (or does not exist)")
            for rport, rid in reps:
                Q = self._copy(P)
                qs = Q.H[self.SM]
                qs[F["egress_rid"]] = rid
                qs[F["instance_type"]] = PKT_REPLICATION
                self._to_egress(Q, rport, egress_q)
            return
        # (5) drop / (6) unicast
        es = sm[F["egress_spec"]]
        if es == sw.drop_port:
            self._drop(f"egress_spec is the drop port {sw.drop_port} at the end of ingress (mark_to_drop)")
            return
        if tracing:
            sw._trace(f"ingress: unicast to port {es}")
        sm[F["instance_type"]] = PKT_NORMAL  # simple_switch resets it for unicast
        self._to_egress(P, es, egress_q)

    def _to_egress(self, P: Pkt, port: int, egress_q: deque) -> None:
        """Between ingress and egress: the packet joins its port's queue (see queues.py). A port
        with no rate never holds packets, so the packet goes on to egress at once."""
        sw = self.sw
        tm = sw.traffic_manager
        sm = P.H[self.SM]
        prio = sm[self.Q_PRIO] if self.Q_PRIO else 0
        if not tm.rated(port):
            if prio >= tm.priorities:
                tm.priority_drops += 1
                self._drop(f"priority {prio} out of range ({tm.priorities} queue(s) per port)")
                return
            if self.Q_ENQ_TS:
                sm[self.Q_ENQ_TS] = sw.now_us() & 0xFFFFFFFF
            egress_q.append((P, port))
            return
        now = sw.clock()
        now_us = int((now - sw._t0) * 1_000_000)
        depth = tm.enqueue(port, prio, (P, now_us), P.plen, now)
        if depth is None:
            if prio >= tm.priorities:
                self._drop(f"priority {prio} out of range ({tm.priorities} queue(s) per port)")
            else:
                self._drop(f"egress queue of port {port} (priority {prio}) is full")
            return
        if self.Q_ENQ_TS:
            sm[self.Q_ENQ_TS] = now_us & 0xFFFFFFFF
        if self.Q_ENQ_DEPTH:
            sm[self.Q_ENQ_DEPTH] = min(depth, 0x7FFFF)
        if self.tracing:
            sw._trace(f"queue: port {port} priority {prio}, {depth} packet(s) ahead")
        sw._queued()

    def dequeued(self, items: list[tuple[int, int, Any, int]], now: float) -> list[tuple[int, bytes]]:
        """Egress for packets that left their queues at `now` (from TrafficManager.pop_ready); their
        outputs in order. Called with the switch's lock held."""
        out: list[tuple[int, bytes]] = []
        now_us = int((now - self.sw._t0) * 1_000_000)
        for port, _prio, (P, enq_us), depth in items:
            sm = P.H[self.SM]
            if self.Q_DEQ_DELTA:
                sm[self.Q_DEQ_DELTA] = max(0, now_us - enq_us) & 0xFFFFFFFF
            if self.Q_DEQ_DEPTH:
                sm[self.Q_DEQ_DEPTH] = min(depth, 0x7FFFF)
            ingress_q: deque = deque()
            egress_q: deque = deque()
            self._guard(self._egress, P, port, ingress_q, egress_q, out)
            self._run(ingress_q, egress_q, out)
        return out

    def _copy(self, P: Pkt) -> Pkt:
        Q = Pkt.__new__(Pkt)
        Q.data, Q.off, Q.dlen, Q.plen = P.data, P.off, P.dlen, P.plen
        if P.nx:
            Q.nx = P.nx[:]
        Q.in_port = P.in_port
        if P.trunc:
            Q.trunc = P.trunc
            Q.special = 1
        Q.H = [h[:] for h in P.H]
        return Q

    def _clone(self, sess: int, fl: int, P: Pkt, itype: int, egress_q: deque, reparse: bool) -> None:
        s = self.state.pre.sessions.get(sess)
        if s is None:
            if self.tracing:
                self.sw._trace(f"clone: session {sess} does not exist, no clone made")
            return
        saved = self._preserve(P.H, fl)
        if s.port is not None:
            targets = [(s.port, 0)]
        elif s.mcast_grp is not None:
            targets = list(self.state.pre.replicas(s.mcast_grp))
        else:
            targets = list(s.replicas or [])
        for port, rid in targets:
            if reparse:
                Q = self._new_packet(P.data, P.in_port, itype)
                self._parse(Q)
            else:
                Q = self._copy(P)
                for hid in self.metadata_ids:  # metadata reset, headers kept
                    h = Q.H[hid]
                    Q.H[hid] = [1] + [0] * (len(h) - 1)
                Q.H[self.SM][self.F["ingress_port"]] = P.in_port
                Q.H[self.SM][self.F["packet_length"]] = P.plen
            self._restore(Q.H, saved)
            qs = Q.H[self.SM]
            qs[self.F["instance_type"]] = itype
            qs[self.F["egress_rid"]] = rid
            if s.truncate_length:
                Q.trunc = s.truncate_length
            if self.tracing:
                kind = "ingress" if itype == PKT_INGRESS_CLONE else "egress"
                self.sw._trace(f"clone: {kind} clone via session {sess} to port {port}")
            self._to_egress(Q, port, egress_q)

    def _learn(self, P: Pkt) -> None:
        sw = self.sw
        lid = P.learn
        fn = self.LEARN.get(lid)
        ll = self.prog.learn_lists.get(lid)
        if fn is None or ll is None:
            return
        values = fn(P, P.H)
        if self.tracing:
            sw._trace(f"digest: {ll['name']} {values}")
        if sw._digest_cb is not None:
            from p4kit.switch.runtime import DigestMessage

            sw._digest_cb(DigestMessage(ll["name"], lid, tuple(values)))

    def _egress(self, P: Pkt, port: int, ingress_q: deque, egress_q: deque, out: list) -> None:
        sw = self.sw
        F = self.F
        H = P.H
        sm = H[self.SM]
        sm[F["egress_port"]] = port
        sm[F["egress_spec"]] = 0
        sm[F["egress_global_timestamp"]] = sw.now_us() & 0xFFFFFFFFFFFF
        P.clone = None
        if self.tracing:
            sw._trace(
                f"egress: port {port} (instance_type {sm[F['instance_type']]}, rid {sm[F['egress_rid']]})"
            )
        self.EGRESS(P, H)
        self._after_egress(P, port, ingress_q, egress_q, out)

    def _after_egress(self, P: Pkt, port: int, ingress_q: deque, egress_q: deque, out: list) -> None:
        sw = self.sw
        F = self.F
        H = P.H
        sm = H[self.SM]
        # (1) egress clone
        if P.clone is not None:
            sess, fl = P.clone
            self._clone(sess, fl, P, PKT_EGRESS_CLONE, egress_q, reparse=False)
        # (2) drop
        if sm[F["egress_spec"]] == sw.drop_port:
            self._drop(f"egress_spec is the drop port {sw.drop_port} at the end of egress (mark_to_drop)")
            return
        # (3) deparse
        self.UPDATE(P, H)
        data = self.DEPARSE(P, H)
        # (4) recirculate
        if P.recirc is not None:
            if self.tracing:
                sw._trace(f"egress: recirculate ({len(data)} bytes)")
            ingress_q.append((data, P.in_port, PKT_RECIRC, self._preserve(H, P.recirc)))
            return
        if P.trunc and len(data) > P.trunc:
            data = data[: P.trunc]
        # (5) out
        if sw.cpu_port is not None and port == sw.cpu_port and sw._packet_in_cb is not None:
            if self.tracing:
                sw._trace(f"egress: packet-in to the controller ({len(data)} bytes)")
            from p4kit.switch.runtime import PacketIn

            sw._packet_in_cb(PacketIn(data, P.in_port))
            return
        if self.tracing:
            sw._trace(f"egress: emit {len(data)} bytes on port {port}")
        out.append((port, data))


_RETURN = re.compile(r"^(\s*)return (.+)$")


def _returns_to_collect(body: list[str]) -> list[str]:
    """The fast body's `return <outputs>` lines as statements that hand the outputs on and go on
    with the next packet (the body has no nested functions, so every return is its own). The one
    unicast output goes to the egress port's sink when there is one that takes it (the port loop's
    transmit ring); a packet that went to the general path is never reused (P = None)."""
    out = []
    for line in body:
        m = _RETURN.match(line)
        if m is None:
            out.append(line)
            continue
        ind, value = m.groups()
        if value == "[(es, out)]":
            out.append(f"{ind}_put = _sink(es)")
            out.append(f"{ind}if _put is None or not _put(out):")
            out.append(f"{ind}    _append((es, out))")
        elif value.startswith("[(") and value.endswith(")]"):
            out.append(f"{ind}_append({value[1:-1]})")
        elif value != "[]":
            out.append(f"{ind}_extend({value})")
            out.append(f"{ind}P = None")
        out.append(f"{ind}continue")
    return out


def _new_packet_inline(line: str, nstacks: int) -> str:
    """The body's `P = Pkt(data, nstacks)` with Pkt.__init__ written out (a call less per packet);
    other lines as they are."""
    if line.strip() != "P = Pkt(data, nstacks)":
        return line
    lead = line[: len(line) - len(line.lstrip())]
    nx = "; P.nx = [0] * nstacks" if nstacks else ""
    return f"{lead}P = NEW_PKT(Pkt); P.data = data; P.off = 0; P.dlen = P.plen = len(data){nx}"


def _noop(P: Pkt, H: list, A: tuple) -> None:
    return None


__all__ = ["PKT_NORMAL", "Engine", "Pkt"]
