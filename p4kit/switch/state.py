"""Run-time state of a loaded pipeline: table entries, action profiles, externs, PRE, value sets.

Why separate from the compiled code: tracing on/off recompiles the pipeline, and the P4Runtime server
reads state while packets flow; keeping state in plain objects that the generated code references lets
the code be swapped without losing a single counter.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from p4kit.switch import hashes
from p4kit.switch.meters import Meter
from p4kit.switch.pre import Pre
from p4kit.switch.program import Program
from p4kit.switch.tables import TableState


class Member:
    """An action profile member: an action with its parameters."""

    __slots__ = ("action", "action_id", "args", "fn", "member_id", "nxt")

    def __init__(self, member_id: int, action: str, action_id: int, args: tuple[int, ...]) -> None:
        self.member_id = member_id
        self.action = action
        self.action_id = action_id
        self.args = args
        self.fn: Callable | None = None
        self.nxt: dict | None = None


class Group:
    """An action selector group; ``members`` is kept in member-id order for deterministic hashing."""

    __slots__ = ("group_id", "member_ids", "members")

    def __init__(self, group_id: int) -> None:
        self.group_id = group_id
        self.member_ids: list[int] = []
        self.members: list[Member] = []


@dataclass
class ProfileState:
    name: str
    max_size: int
    has_selector: bool
    members: dict[int, Member] = field(default_factory=dict)
    groups: dict[int, Group] = field(default_factory=dict)

    def refresh_group(self, g: Group) -> None:
        g.member_ids.sort()
        g.members = [self.members[m] for m in g.member_ids]


class CounterArray:
    __slots__ = ("bytes", "name", "packets", "size")

    def __init__(self, name: str, size: int) -> None:
        self.name = name
        self.size = size
        self.packets = [0] * size
        self.bytes = [0] * size


@dataclass
class SwitchState:
    """Everything the generated code reads or updates besides the packet itself."""

    program: Program
    tables: dict[str, TableState] = field(default_factory=dict)
    profiles: dict[str, ProfileState] = field(default_factory=dict)
    counters: dict[str, CounterArray] = field(default_factory=dict)
    meters: dict[str, list[Meter]] = field(default_factory=dict)
    registers: dict[str, list[int]] = field(default_factory=dict)
    vsets: dict[str, set[int]] = field(default_factory=dict)  # byte-padded keys, for the parser
    vset_values: dict[str, set[int]] = field(default_factory=dict)  # as the control plane wrote them
    hash_fns: dict[str, Callable[[bytes], int]] = field(default_factory=dict)
    pre: Pre = field(default_factory=Pre)
    rng: random.Random = field(default_factory=random.Random)
    egress_spec_init: int = 0  # standard_metadata.egress_spec as ingress starts (--egress-spec-init-to-drop)

    @classmethod
    def fresh(cls, program: Program, seed: int | None = None) -> SwitchState:
        st = cls(program=program, rng=random.Random(seed))
        for name, t in program.tables.items():
            st.tables[name] = TableState(t)
        for name, ap in program.action_profiles.items():
            st.profiles[name] = ProfileState(name, ap.max_size, ap.selector is not None)
        for name, c in program.counters.items():
            if not c.is_direct:
                st.counters[name] = CounterArray(name, c.size)
        for name, m in program.meters.items():
            if not m.is_direct:
                st.meters[name] = [Meter() for _ in range(m.size)]
        for name, r in program.registers.items():
            st.registers[name] = [0] * r.size
        for name in program.parse_vsets:
            st.vsets[name] = set()
            st.vset_values[name] = set()
        for name, calc in program.calculations.items():
            st.hash_fns[name] = hashes.make_algorithm(calc.get("algo", "crc32"), st.rng)
        for name, ap in program.action_profiles.items():
            if ap.selector is not None:
                st.hash_fns["$selector$" + name] = hashes.make_algorithm(
                    ap.selector.get("algo", "crc16"), st.rng
                )
        return st
