"""Match tables: entries and the lookup structures the generated code reads.

Why this shape: the generated per-table lookup code (see codegen.py) reads these structures directly,
so each match kind gets the structure that makes its lookup cheapest in Python:

- ``exact`` (and ``valid``) keys: one dict; the key is the int itself for a one-field key, else a tuple;
- one ``lpm`` field (plus exact fields): one dict per prefix length, probed longest first (``lpm``);
- anything with ternary/range/optional: a list ``rows`` sorted best-first, each row a flat tuple
  ``(a0, b0, a1, b1, ..., entry)`` where (a, b) is (value, mask) or, for range fields, (lo, hi).

Priorities follow P4Runtime: a larger number wins; among equal priorities the older entry wins.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

from p4kit.switch.errors import BadKeyError, DuplicateEntryError, EntryNotFoundError
from p4kit.switch.program import KeyField, TableInfo


class Entry:
    """A table entry (or a table's default entry, ``handle`` None).

    ``fn``/``args``/``nxt`` are bound to the current compiled pipeline by the runtime; ``member`` or
    ``group`` replace the action on tables with an action profile. ``hit_ns`` is when the entry was
    last hit (or inserted), stamped by the generated code of tables with ``support_timeout`` only.
    """

    __slots__ = (
        "action",
        "args",
        "const",
        "counter",
        "fn",
        "group",
        "handle",
        "hit_ns",
        "match",
        "member",
        "meter",
        "nxt",
        "priority",
        "seq",
    )

    def __init__(self) -> None:
        self.handle: int | None = None
        self.match: tuple = ()
        self.priority: int | None = None
        self.action: str | None = None
        self.args: tuple[int, ...] = ()
        self.fn: Any = None
        self.nxt: Any = None
        self.member: Any = None
        self.group: Any = None
        self.counter: list[int] | None = None
        self.meter: Any = None
        self.const = False
        self.seq = 0
        self.hit_ns = 0  # last hit (Switch.now_ns), kept on tables with support_timeout only


@dataclass
class NormKey:
    """A user key normalised per field: exact/valid (v,), lpm (v, plen), ternary (v, m), range (lo, hi),
    optional (v, is_wildcard)."""

    fields: tuple


def _mask(width: int) -> int:
    return (1 << width) - 1


def normalize_key(info: TableInfo, keys: Any) -> tuple:
    """Check and normalise user-supplied key values (see runtime.Switch.table_add for the format)."""
    if keys is None:
        keys = ()
    if isinstance(keys, dict):
        keys = _keys_from_mapping(info, keys)
    keys = list(keys)
    if len(keys) != len(info.keys):
        raise BadKeyError(f"table '{info.name}' takes {len(info.keys)} key field(s), got {len(keys)}")
    out = []
    for kf, v in zip(info.keys, keys, strict=False):
        out.append(_norm_field(info.name, kf, v))
    return tuple(out)


def _keys_from_mapping(info: TableInfo, keys: dict) -> list:
    out = []
    names = {k.name for k in info.keys}
    for extra in keys:
        if extra not in names:
            raise BadKeyError(f"table '{info.name}' has no key field '{extra}'")
    for kf in info.keys:
        out.append(keys.get(kf.name))
    return out


def _check(table: str, kf: KeyField, v: Any, what: str = "value") -> int:
    if isinstance(v, bool):
        v = int(v)
    if not isinstance(v, int):
        raise BadKeyError(f"table '{table}': key field '{kf.name}' {what} must be an int, got {v!r}")
    if v < 0 or v >> kf.width:
        raise BadKeyError(
            f"table '{table}': key field '{kf.name}' {what} {v:#x} does not fit in {kf.width} bits"
        )
    return v


def _norm_field(table: str, kf: KeyField, v: Any) -> tuple:
    full = _mask(kf.width)
    mt = kf.match_type
    if v is None:  # don't care (P4Runtime omits such fields)
        if mt in ("exact", "valid"):
            raise BadKeyError(f"table '{table}': exact key field '{kf.name}' needs a value")
        return {"lpm": (0, 0), "ternary": (0, 0), "range": (0, full), "optional": (0, True)}[mt]
    if mt in ("exact", "valid"):
        if isinstance(v, tuple):
            if len(v) != 1:
                raise BadKeyError(f"table '{table}': exact key field '{kf.name}' takes one value, got {v!r}")
            v = v[0]
        return (_check(table, kf, v),)
    if not isinstance(v, tuple | list) or len(v) != 2:
        shape = {"lpm": "(value, prefix_len)", "ternary": "(value, mask)", "range": "(lo, hi)"}.get(
            mt, "(value, is_wildcard)"
        )
        raise BadKeyError(f"table '{table}': {mt} key field '{kf.name}' takes {shape}, got {v!r}")
    a, b = v
    if mt == "lpm":
        value = _check(table, kf, a)
        if not isinstance(b, int) or not 0 <= b <= kf.width:
            raise BadKeyError(
                f"table '{table}': prefix length {b!r} out of range 0..{kf.width} for '{kf.name}'"
            )
        pmask = full ^ _mask(kf.width - b)
        return (value & pmask, b)
    if mt == "ternary":
        value, m = _check(table, kf, a), _check(table, kf, b, "mask")
        return (value & m, m)
    if mt == "range":
        lo, hi = _check(table, kf, a, "low bound"), _check(table, kf, b, "high bound")
        if lo > hi:
            raise BadKeyError(f"table '{table}': range {lo}..{hi} for '{kf.name}' is empty")
        return (lo, hi)
    if mt == "optional":
        wildcard = bool(b)
        return (0 if wildcard else _check(table, kf, a), wildcard)
    raise BadKeyError(f"table '{table}': unsupported match kind '{mt}' for '{kf.name}'")


def denormalize_key(info: TableInfo, match: tuple) -> list:
    """The user-facing form of a stored key (ints for exact, pairs for the others)."""
    out: list = []
    for kf, m in zip(info.keys, match, strict=False):
        out.append(m[0] if kf.match_type in ("exact", "valid") else tuple(m))
    return out


class TableState:
    """Entries of one table plus the lookup structure for its match kind."""

    def __init__(self, info: TableInfo) -> None:
        self.info = info
        self.name = info.name
        self.entries: dict[int, Entry] = {}
        self.by_key: dict[tuple, int] = {}
        self.next_handle = 0
        self.seq = 0
        self.default = Entry()
        kinds = {k.match_type for k in info.keys}
        if not info.keys:
            self.kind = "none"
        elif kinds <= {"exact", "valid"}:
            self.kind = "exact"
        elif kinds <= {"exact", "valid", "lpm"} and sum(k.match_type == "lpm" for k in info.keys) == 1:
            self.kind = "lpm"
        else:
            self.kind = "list"
        self.lpm_pos = next((i for i, k in enumerate(info.keys) if k.match_type == "lpm"), -1)
        self.single = len(info.keys) == 1
        self.exact: dict = {}
        self.lpm_by_len: dict[int, dict] = {}
        self.lpm: list[tuple[int, dict]] = []
        self.rows: list[tuple] = []
        self._row_keys: list[tuple] = []

    # -- structure maintenance -------------------------------------------------------------------
    def _dict_key(self, match: tuple) -> Any:
        vals = tuple(m[0] for m in match)
        return vals[0] if self.single else vals

    def _row(self, e: Entry) -> tuple:
        flat: list = []
        for kf, m in zip(self.info.keys, e.match, strict=False):
            full = _mask(kf.width)
            mt = kf.match_type
            if mt in ("exact", "valid"):
                flat += [m[0], full]
            elif mt == "lpm":
                flat += [m[0], full ^ _mask(kf.width - m[1])]
            elif mt == "ternary":
                flat += [m[0], m[1]]
            elif mt == "optional":
                flat += [0, 0] if m[1] else [m[0], full]
            else:  # range
                flat += [m[0], m[1]]
        flat.append(e)
        return tuple(flat)

    def _identity(self, match: tuple, priority: int | None) -> tuple:
        return (match, priority) if self.kind == "list" else (match, None)

    def insert(self, e: Entry) -> int:
        ident = self._identity(e.match, e.priority)
        if ident in self.by_key:
            raise DuplicateEntryError(f"table '{self.name}': an entry with this key already exists")
        e.handle = self.next_handle
        self.next_handle += 1
        self.seq += 1
        e.seq = self.seq
        self.entries[e.handle] = e
        self.by_key[ident] = e.handle
        self._add_struct(e)
        return e.handle

    def _add_struct(self, e: Entry) -> None:
        if self.kind == "exact":
            self.exact[self._dict_key(e.match)] = e
        elif self.kind == "lpm":
            plen = e.match[self.lpm_pos][1]
            d = self.lpm_by_len.get(plen)
            if d is None:
                d = self.lpm_by_len[plen] = {}
                d[self._dict_key(e.match)] = e
                self._rebuild_lpm_list()
            else:
                d[self._dict_key(e.match)] = e
        elif self.kind == "list":
            sort_key = (-(e.priority or 0), e.seq)
            i = bisect.bisect_right(self._row_keys, sort_key)
            self._row_keys.insert(i, sort_key)
            self.rows.insert(i, self._row(e))

    def _rebuild_lpm_list(self) -> None:
        kf = self.info.keys[self.lpm_pos]
        full = _mask(kf.width)
        self.lpm = [
            (full ^ _mask(kf.width - plen), d)
            for plen, d in sorted(self.lpm_by_len.items(), key=lambda kv: -kv[0])
            if d
        ]

    def remove(self, handle: int) -> Entry:
        e = self.entries.get(handle)
        if e is None:
            raise EntryNotFoundError(f"table '{self.name}': no entry with handle {handle}")
        del self.entries[handle]
        del self.by_key[self._identity(e.match, e.priority)]
        if self.kind == "exact":
            del self.exact[self._dict_key(e.match)]
        elif self.kind == "lpm":
            plen = e.match[self.lpm_pos][1]
            d = self.lpm_by_len[plen]
            del d[self._dict_key(e.match)]
            if not d:
                del self.lpm_by_len[plen]
                self._rebuild_lpm_list()
        elif self.kind == "list":
            for i, row in enumerate(self.rows):
                if row[-1] is e:
                    del self.rows[i]
                    del self._row_keys[i]
                    break
        return e

    def find(self, match: tuple, priority: int | None) -> int | None:
        return self.by_key.get(self._identity(match, priority))

    def clear(self, keep_const: bool = True) -> None:
        for h in [h for h, e in self.entries.items() if not (keep_const and e.const)]:
            self.remove(h)
