"""The BMv2 JSON document under construction.

Why a class: every object kind has its own id space (ids unique per kind, parse states and tables unique
across the whole file) and p4c writes the top-level keys in a fixed order; keeping that bookkeeping in one
place lets every stage simply `add_*` what it produces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]

FORMAT_VERSION = [2, 23]
COMPILER_NAME = "p4kit-p4c"


@dataclass
class NameSpace:
    """Hands out unique names the way p4c does: the first use keeps the base name, later ones get
    `_0`, `_1`, ... appended."""

    used: set[str] = field(default_factory=set)
    counters: dict[str, int] = field(default_factory=dict)

    def fresh(self, base: str) -> str:
        if base not in self.used:
            self.used.add(base)
            return base
        while True:
            n = self.counters.get(base, 0)
            self.counters[base] = n + 1
            cand = f"{base}_{n}"
            if cand not in self.used:
                self.used.add(cand)
                return cand

    def reserve(self, name: str) -> None:
        self.used.add(name)


@dataclass
class Bmv2Json:
    """Accumulates the pieces of a BMv2 JSON file; `to_dict` returns them in p4c's key order."""

    program: str = ""
    header_types: list[JSON] = field(default_factory=list)
    headers: list[JSON] = field(default_factory=list)
    header_stacks: list[JSON] = field(default_factory=list)
    header_union_types: list[JSON] = field(default_factory=list)
    header_unions: list[JSON] = field(default_factory=list)
    header_union_stacks: list[JSON] = field(default_factory=list)
    field_lists: list[JSON] = field(default_factory=list)
    errors: list[list[Any]] = field(default_factory=list)
    enums: list[JSON] = field(default_factory=list)
    parsers: list[JSON] = field(default_factory=list)
    parse_vsets: list[JSON] = field(default_factory=list)
    deparsers: list[JSON] = field(default_factory=list)
    meter_arrays: list[JSON] = field(default_factory=list)
    counter_arrays: list[JSON] = field(default_factory=list)
    register_arrays: list[JSON] = field(default_factory=list)
    calculations: list[JSON] = field(default_factory=list)
    learn_lists: list[JSON] = field(default_factory=list)
    actions: list[JSON] = field(default_factory=list)
    pipelines: list[JSON] = field(default_factory=list)
    checksums: list[JSON] = field(default_factory=list)
    extern_instances: list[JSON] = field(default_factory=list)
    field_aliases: list[Any] = field(default_factory=list)
    # Names that must be unique across one kind of object.
    header_type_names: NameSpace = field(default_factory=NameSpace)
    header_names: NameSpace = field(default_factory=NameSpace)
    node_names: NameSpace = field(default_factory=NameSpace)  # tables, conditionals: one flat space
    calc_names: NameSpace = field(default_factory=NameSpace)
    action_names: NameSpace = field(default_factory=NameSpace)
    state_ids: int = 0
    node_ids: dict[str, int] = field(default_factory=dict)

    # --- headers -------------------------------------------------------------------------------------
    def add_header_type(self, name: str, fields: list[list[Any]], **extra: Any) -> str:
        name = self.header_type_names.fresh(name)
        self.header_types.append({"name": name, "id": len(self.header_types), "fields": fields, **extra})
        return name

    def header_type(self, name: str) -> JSON:
        for ht in self.header_types:
            if ht["name"] == name:
                return ht
        raise KeyError(name)

    def add_header(self, name: str, header_type: str, metadata: bool) -> tuple[str, int]:
        name = self.header_names.fresh(name)
        hid = len(self.headers)
        self.headers.append(
            {"name": name, "id": hid, "header_type": header_type, "metadata": metadata, "pi_omit": True}
        )
        return name, hid

    def header(self, name: str) -> JSON:
        for h in self.headers:
            if h["name"] == name:
                return h
        raise KeyError(name)

    def add_header_stack(self, name: str, header_type: str, header_ids: list[int]) -> None:
        self.header_stacks.append(
            {
                "name": name,
                "id": len(self.header_stacks),
                "header_type": header_type,
                "size": len(header_ids),
                "header_ids": header_ids,
            }
        )

    def add_union_type(self, name: str, members: list[list[str]]) -> str:
        for ut in self.header_union_types:
            if ut["name"] == name:
                return name
        self.header_union_types.append({"name": name, "id": len(self.header_union_types), "headers": members})
        return name

    def add_union(self, name: str, union_type: str, header_ids: list[int]) -> int:
        uid = len(self.header_unions)
        self.header_unions.append(
            {"name": name, "id": uid, "union_type": union_type, "header_ids": header_ids, "pi_omit": True}
        )
        return uid

    def add_union_stack(self, name: str, union_type: str, union_ids: list[int]) -> None:
        self.header_union_stacks.append(
            {
                "name": name,
                "id": len(self.header_union_stacks),
                "union_type": union_type,
                "size": len(union_ids),
                "header_union_ids": union_ids,
            }
        )

    # --- objects with their own id spaces ---------------------------------------------------------
    def next_state_id(self) -> int:
        self.state_ids += 1
        return self.state_ids - 1

    def next_id(self, kind: str) -> int:
        """Ids for tables, conditionals and action profiles: unique across all pipelines."""
        n = self.node_ids.get(kind, 0)
        self.node_ids[kind] = n + 1
        return n

    def add_action(self, name: str, runtime_data: list[JSON], primitives: list[JSON]) -> int:
        aid = len(self.actions)
        self.actions.append({"name": name, "id": aid, "runtime_data": runtime_data, "primitives": primitives})
        return aid

    def add_calculation(self, base: str, algo: str, inputs: list[JSON]) -> str:
        """A named calculation; identical (algo, inputs) pairs are shared, as p4c shares them."""
        for c in self.calculations:
            if c["algo"] == algo and c["input"] == inputs:
                return c["name"]
        name = self.calc_names.fresh(base)
        self.calculations.append({"name": name, "id": len(self.calculations), "algo": algo, "input": inputs})
        return name

    def to_dict(self) -> JSON:
        return {
            "header_types": self.header_types,
            "headers": self.headers,
            "header_stacks": self.header_stacks,
            "header_union_types": self.header_union_types,
            "header_unions": self.header_unions,
            "header_union_stacks": self.header_union_stacks,
            "field_lists": self.field_lists,
            "errors": self.errors,
            "enums": self.enums,
            "parsers": self.parsers,
            "parse_vsets": self.parse_vsets,
            "deparsers": self.deparsers,
            "meter_arrays": self.meter_arrays,
            "counter_arrays": self.counter_arrays,
            "register_arrays": self.register_arrays,
            "calculations": self.calculations,
            "learn_lists": self.learn_lists,
            "actions": self.actions,
            "pipelines": self.pipelines,
            "checksums": self.checksums,
            "force_arith": [],
            "extern_instances": self.extern_instances,
            "field_aliases": self.field_aliases,
            "program": self.program,
            "__meta__": {"version": FORMAT_VERSION, "compiler": COMPILER_NAME},
        }
