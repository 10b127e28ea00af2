"""The native engine: the Python engine (engine.py) with its packet entry points replaced by the
compiled data plane of cgen.py.

Why a subclass: everything around the packets stays the Python engine's -- binding entries, the
general path, tracing, the traffic manager's egress -- and the native data plane takes over only
while nothing needs them (no trace, no rated port). The two share one state:
- registers and indirect counters are `Cells` (unsigned 64-bit arrays) that the C code writes in
  place through the buffer protocol, and that the control plane and the Python engine index like
  lists;
- direct counters stay each entry's [packets, bytes] list, which the C code updates on a hit;
- table entries and multicast groups live in tables.py and pre.py; every control-plane call that
  may change a result marks them stale (the hook the cache of results uses, flow_cache_clear), and
  the next packet hands them over whole (`_sync`).
"""

from __future__ import annotations

import array
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from p4kit.switch import hashes
from p4kit.switch.engine import Engine
from p4kit.switch.native import build, cgen
from p4kit.switch.program import Program
from p4kit.switch.state import SwitchState

_MODNAME = "P4KIT_NATIVE_MODULE"


class Cells(array.array):
    """Cells of a register or counter array, shared with the native data plane: a list of
    unsigned ints to Python (index, assign, len, iterate, slice-assign from any iterable)."""

    def __new__(cls, values: Iterable[int]) -> Cells:
        return super().__new__(cls, "Q", values)

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(key, slice):
            value = array.array("Q", value)
            if len(value) != len(range(*key.indices(len(self)))):
                raise ValueError("Cells cannot change size")
        super().__setitem__(key, value)

    def __repr__(self) -> str:
        return repr(list(self))


def plan(program: Program) -> tuple[cgen.NativeProgram | None, str | None]:
    """(the program's C module, None) or (None, why the native data plane cannot run it)."""
    if build.compiler() is None:
        return None, "no C compiler"
    if build.python_include() is None:
        return None, "no Python.h (python3-dev)"
    try:
        np = cgen.CGen(program).build(_MODNAME)
    except cgen.Unsupported as exc:
        return None, str(exc)
    name = build.module_name(np.source)
    np.source = np.source.replace(_MODNAME, name)
    np.name = name
    return np, None


class NativeEngine(Engine):
    fuse = False  # the registers' cells are shared with the C code as they are

    def __init__(self, switch: Any, program: Program, state: SwitchState, native: cgen.NativeProgram) -> None:
        super().__init__(switch, program, state)
        self.native = native
        self.module = build.load(native.source, native.name)
        self.dp: Any = None
        self._target: NativeTarget | None = None
        self.active = False
        self._stale = True
        self._share_cells()
        self._action_ids = {
            name: {n: i for n, i in reversed(list(zip(t.action_names, t.action_ids, strict=False)))}
            for name, t in program.tables.items()
        }
        # the clock is read once per batch, and only for a program that reads a timestamp anywhere
        self._uses_time = cgen.uses_time(program)

    def _share_cells(self) -> None:
        st = self.state
        for name in self.native.registers:
            if not isinstance(st.registers[name], Cells):
                st.registers[name] = Cells(st.registers[name])
        for name in self.native.counters:
            c = st.counters[name]
            if not isinstance(c.packets, Cells):
                c.packets = Cells(c.packets)
                c.bytes = Cells(c.bytes)

    def compile(self, tracing: bool) -> None:
        """The native data plane, or (tracing, a rated port) the Python engine. The Python engine is
        compiled only then: generating it costs INC's switches 3-5 CPU-s each at every load."""
        sw = self.sw
        self.retire()
        self.active = not tracing and not sw.traffic_manager.any_rate
        if not self.active:
            self.dp = None
            super().compile(tracing)  # Switch._recompile then binds every entry (_rebind_all)
            return
        self.comp = None
        self.__dict__.pop("process", None)
        self.__dict__.pop("process_batch", None)
        dp = self.module.Dataplane()
        st = self.state
        dp.bind_arrays(
            [st.registers[n] for n in self.native.registers],
            [st.counters[n].packets for n in self.native.counters],
            [st.counters[n].bytes for n in self.native.counters],
        )
        dp.configure(sw.drop_port, st.egress_spec_init)
        self.dp = dp
        self._stale = True
        self.flow_cache = None
        self._drop_words = {
            1: f"egress_spec is the drop port {sw.drop_port} at the end of ingress (mark_to_drop)",
            2: f"egress_spec is the drop port {sw.drop_port} at the end of egress (mark_to_drop)",
        }
        self.process = self._process  # type: ignore[method-assign]
        self.process_batch = self._process_batch  # type: ignore[method-assign]

    def bind_entry(self, ts: Any, e: Any, action_id: int | None) -> None:
        """Entries need the Python engine's functions only while it runs; until then the native
        data plane reads them from the tables (and _rebind_all binds them when it is compiled)."""
        if self.comp is not None:
            super().bind_entry(ts, e, action_id)

    def bind_member(self, profile: str, m: Any) -> None:
        if self.comp is not None:
            super().bind_member(profile, m)

    def flow_cache_clear(self) -> None:
        super().flow_cache_clear()
        self._stale = True
        if self.dp is not None:
            self.dp.mark_stale(1)  # a native port loop running this data plane returns for _sync

    def retire(self) -> None:
        """This data plane is being replaced (a new program, tracing on): a native port loop that
        runs it must come back for the new one."""
        if self.dp is not None:
            self.dp.mark_stale(2)

    # -------------------------------------------------------------- the native port loop
    def port_target(self) -> NativeTarget | None:
        """What the native port loop (ports.py) runs while this data plane is active, else None."""
        if not self.active or self.dp is None:
            return None
        target = self._target
        if target is None or target.dp is not self.dp:
            target = self._target = NativeTarget(self, self.dp)
        return target

    # -------------------------------------------------------------- state hand-over
    def _sync(self) -> None:
        dp = self.dp
        # up to date from here on: a control-plane write while the hand-over reads the tables marks
        # it stale again (clearing at the end would lose that write)
        self._stale = False
        dp.mark_stale(0)
        for tid, name in enumerate(self.native.tables):
            ts = self.state.tables[name]
            ids = self._action_ids[name]
            counters = ts.info.with_counters

            def ent(e: Any, ids: dict[str, int] = ids, counters: bool = counters) -> tuple:
                aid = ids.get(e.action, -1) if e.action is not None else -1
                return aid, tuple(e.args), e.counter if counters and e.counter is not None else None

            d = ts.default
            dflt = (ids.get(d.action, -1) if d.action is not None else -1, tuple(d.args))
            kind = self.native.table_kinds[name]
            items: list = []
            if kind == 1:
                single = ts.single
                for k, e in ts.exact.items():
                    items.append(((k,) if single else tuple(k), *ent(e)))
            elif kind == 2:
                single = ts.single
                for pm, dd in ts.lpm:
                    items.append((pm, [((k,) if single else tuple(k), *ent(e)) for k, e in dd.items()]))
            elif kind == 3:
                n = len(ts.info.keys)
                for row in ts.rows:
                    flat = row[:-1]
                    items.append((tuple(flat[0 : 2 * n : 2]), tuple(flat[1 : 2 * n : 2]), *ent(row[-1])))
            dp.set_table(tid, dflt, items)
        dp.set_groups(self.state.pre.replicas_cache)
        for slot, name in enumerate(self.native.hashes):
            dp.set_hash(slot, *_hash_params(self.state.hash_fns[name]))

    # -------------------------------------------------------------- packets
    def _process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        return self._process_batch(port, [data], None, None)

    def _process_batch(
        self,
        port: int,
        frames: Iterable[bytes],
        on_error: Callable[[int], object] | None,
        sinks: Mapping[int, Callable[[bytes], bool]] | None = None,
    ) -> list[tuple[int, bytes]]:
        sw = self.sw
        if self._stale:
            self._sync()
        if type(frames) is not list:
            frames = list(frames)
        now = int((sw.clock() - sw._t0) * 1_000_000) if self._uses_time else 0
        outs, drops = self.dp.process_batch(port, frames, now)
        log = sw.drop_log
        if log:
            log.clear()
        if drops:
            for code, value in drops:
                log.append(self._drop_reason(code, value))
        cpu, cb = sw.cpu_port, sw._packet_in_cb
        if not sinks and (cpu is None or cb is None):
            return outs
        rest: list[tuple[int, bytes]] = []
        get = sinks.get if sinks else None
        for out in outs:
            p = out[0]
            if p == cpu and cb is not None:
                from p4kit.switch.runtime import PacketIn

                cb(PacketIn(out[1], port))
                continue
            sink = get(p) if get is not None else None
            if sink is not None and sink(out[1]):
                continue
            rest.append(out)
        return rest

    def _drop_reason(self, code: int, value: int) -> str:
        if code in self._drop_words:
            return self._drop_words[code]
        if code == 3:
            return f"multicast group {value} has no replicas (or does not exist)"
        if code == 4:
            what = {2: "assert failed", 3: "assume failed", 4: "loop in an action did not terminate"}
            return f"{what.get(value, 'assert failed')} (simple_switch would stop)"
        return f"dropped by the native data plane (code {code})"


class NativeTarget:
    """One active native data plane as the native port loop sees it: the pipeline's entry (a
    capsule), the hand-over it may owe, and where its packet-in frames go."""

    def __init__(self, engine: NativeEngine, dp: Any) -> None:
        self.engine = engine
        self.dp = dp
        self.entry = dp.entry()
        self.t0_ns = int(engine.sw._t0 * 1e9)

    @property
    def retired(self) -> bool:
        return self.engine.dp is not self.dp or not self.engine.active

    def sync(self, force: bool = False) -> None:
        """Hand the tables over if a control-plane call changed them, or with `force` (the data
        plane said it is owed them); from the loop thread only."""
        if (force or self.engine._stale) and not self.retired:
            with self.engine.sw._lock:  # not halfway through a control-plane call
                self.engine._sync()

    def packet_in(self, frames: list[tuple[int, bytes]]) -> None:
        """Frames the pipeline sent to the CPU port, as PacketIns (dropped without a controller)."""
        sw = self.engine.sw
        cb = sw._packet_in_cb
        if cb is None:
            return
        from p4kit.switch.runtime import PacketIn

        for ingress, frame in frames:
            cb(PacketIn(frame, ingress))


def _hash_params(fn: Any) -> tuple:
    """(kind, width, refin, refout, init, xorout, table) of one of hashes.py's algorithms."""
    if isinstance(fn, hashes.Crc):
        p = fn.p
        return 1, p.width, int(p.reflect_in), int(p.reflect_out), p.init, p.xor_out, fn.table
    kind = {hashes.identity: 2, hashes.xor16: 3, hashes.csum16: 4}.get(fn)
    if kind is None:
        raise ValueError(f"the native data plane has no hash like {fn!r}")
    return kind, 16, 0, 0, 0, 0, ()
