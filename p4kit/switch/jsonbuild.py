"""A small builder of BMv2 JSON documents, shaped the way p4c emits them.

Why: tests of the switch (and of the P4Runtime server) need small, precise programs without going
through the compiler; writing BMv2 JSON dicts by hand is verbose and error-prone. The builder writes
exactly the keys simple_switch reads (scalars and standard_metadata instances, `$valid$` fields,
next_tables keyed by action name or __HIT__/__MISS__, keyless tables for direct action calls).
"""

from __future__ import annotations

from typing import Any

from p4kit.switch.program import STANDARD_METADATA

Json = dict[str, Any]


def F(hdr: str, fld: str) -> Json:
    """A field reference."""
    return {"type": "field", "value": [hdr, fld]}


def V(hdr: str) -> Json:
    """A header's validity bit as a field."""
    return {"type": "field", "value": [hdr, "$valid$"]}


def HX(v: int, bitwidth: int | None = None) -> Json:
    """A constant."""
    d: Json = {"type": "hexstr", "value": hex(v) if v >= 0 else "-" + hex(-v)}
    if bitwidth is not None:
        d["bitwidth"] = bitwidth
    return d


def RD(i: int) -> Json:
    """Action parameter i."""
    return {"type": "runtime_data", "value": i}


def HDR(name: str) -> Json:
    return {"type": "header", "value": name}


def X(op: str, left: Json | None, right: Json | None, cond: Json | None = None) -> Json:
    """An expression."""
    e: Json = {"op": op, "left": left, "right": right}
    if cond is not None:
        e["cond"] = cond
    return {"type": "expression", "value": e}


def B(x: Json) -> Json:
    """Data -> bool (p4c's d2b), for conditions."""
    return X("d2b", None, x)


def P(op: str, *params: Json) -> Json:
    """A primitive call."""
    return {"op": op, "parameters": list(params)}


def assign(dst: Json, src: Json) -> Json:
    return P("assign", dst, src)


def NAMED(kind: str, name: str) -> Json:
    """A reference to a named object: register_array, counter_array, meter_array, calculation."""
    return {"type": kind, "value": name}


class JsonBuilder:
    """Accumulates a BMv2 JSON program; ``build()`` returns the dict."""

    def __init__(self) -> None:
        self.header_types: list[Json] = [
            {"name": "scalars_0", "id": 0, "fields": []},
            {"name": "standard_metadata", "id": 1, "fields": [[n, w, False] for n, w in STANDARD_METADATA]},
        ]
        self.headers: list[Json] = [
            {"name": "scalars", "id": 0, "header_type": "scalars_0", "metadata": True},
            {"name": "standard_metadata", "id": 1, "header_type": "standard_metadata", "metadata": True},
        ]
        self.header_stacks: list[Json] = []
        self.states: list[Json] = []
        self.actions: list[Json] = []
        self.pipes: dict[str, Json] = {
            "ingress": {
                "name": "ingress",
                "id": 0,
                "init_table": None,
                "tables": [],
                "action_profiles": [],
                "conditionals": [],
            },
            "egress": {
                "name": "egress",
                "id": 1,
                "init_table": None,
                "tables": [],
                "action_profiles": [],
                "conditionals": [],
            },
        }
        self.deparser_order: list[str] = []
        self.calculations: list[Json] = []
        self.checksums: list[Json] = []
        self.counters: list[Json] = []
        self.meters: list[Json] = []
        self.registers: list[Json] = []
        self.field_lists: list[Json] = []
        self.learn_lists: list[Json] = []
        self.parse_vsets: list[Json] = []
        self._tid = 0
        self._cid = 0

    # -- data ---------------------------------------------------------------------------------
    def header_type(self, name: str, fields: list[tuple]) -> None:
        fs = [[f[0], f[1], f[2] if len(f) > 2 else False] for f in fields]
        self.header_types.append({"name": name, "id": len(self.header_types), "fields": fs})

    def header(self, name: str, htype: str, metadata: bool = False) -> None:
        self.headers.append(
            {"name": name, "id": len(self.headers), "header_type": htype, "metadata": metadata}
        )

    def add_header(self, name: str, fields: list[tuple], metadata: bool = False) -> None:
        """Type and instance in one go (type named ``name_t``)."""
        self.header_type(name + "_t", fields)
        self.header(name, name + "_t", metadata)

    def scalar(self, name: str, width: int, signed: bool = False) -> None:
        """A local variable / metadata field in the `scalars` header."""
        self.header_types[0]["fields"].append([name, width, signed])

    def header_stack(self, name: str, htype: str, size: int) -> None:
        ids = []
        for i in range(size):
            self.header(f"{name}[{i}]", htype)
            ids.append(len(self.headers) - 1)
        self.header_stacks.append(
            {
                "name": name,
                "id": len(self.header_stacks),
                "header_type": htype,
                "size": size,
                "header_ids": ids,
            }
        )

    # -- parser / deparser ----------------------------------------------------------------------
    def state(
        self,
        name: str,
        ops: list[Json],
        key: list[Json] | None = None,
        transitions: list[tuple[Any, Any, str | None]] | None = None,
    ) -> None:
        """transitions: [(value or "default", mask or None, next state or None)]."""
        trs = []
        for value, mask, nxt in transitions or [("default", None, None)]:
            if value == "default":
                trs.append({"type": "default", "value": None, "mask": None, "next_state": nxt})
            elif isinstance(value, str) and not value.startswith("0x"):
                trs.append({"type": "parse_vset", "value": value, "mask": mask, "next_state": nxt})
            else:
                v = value if isinstance(value, str) else hex(value)
                m = None if mask is None else (mask if isinstance(mask, str) else hex(mask))
                trs.append({"type": "hexstr", "value": v, "mask": m, "next_state": nxt})
        self.states.append(
            {
                "name": name,
                "id": len(self.states),
                "parser_ops": ops,
                "transitions": trs,
                "transition_key": key or [],
            }
        )

    @staticmethod
    def extract(hdr: str) -> Json:
        return {"op": "extract", "parameters": [{"type": "regular", "value": hdr}]}

    @staticmethod
    def extract_next(stack: str) -> Json:
        return {"op": "extract", "parameters": [{"type": "stack", "value": stack}]}

    def deparse(self, *order: str) -> None:
        self.deparser_order = list(order)

    # -- actions, tables, control flow ------------------------------------------------------------
    def action(
        self, name: str, params: list[tuple[str, int]] | None = None, prims: list[Json] | None = None
    ) -> int:
        aid = len(self.actions)
        self.actions.append(
            {
                "name": name,
                "id": aid,
                "runtime_data": [{"name": n, "bitwidth": w} for n, w in params or []],
                "primitives": prims or [],
            }
        )
        return aid

    def action_id(self, name: str) -> int:
        return next(a["id"] for a in self.actions if a["name"] == name)

    def table(
        self,
        name: str,
        keys: list[tuple[str, Any]],
        actions: list[str],
        *,
        pipeline: str = "ingress",
        default: tuple[str, list[int]] | None = None,
        default_const: bool = False,
        next_tables: dict[str, str | None] | None = None,
        base_default_next: str | None = None,
        size: int = 1024,
        with_counters: bool = False,
        direct_meters: str | None = None,
        action_profile: str | None = None,
        selector: bool = False,
        entries: list[Json] | None = None,
        key_names: list[str] | None = None,
        support_timeout: bool = False,
    ) -> None:
        """keys: [(match_type, [header, field] | header name for "valid")]."""
        key_json = []
        for i, (mt, target) in enumerate(keys):
            kname = key_names[i] if key_names else (".".join(target) if isinstance(target, list) else target)
            key_json.append({"match_type": mt, "name": kname, "target": target, "mask": None})
        kinds = {mt for mt, _ in keys}
        mt = (
            "range"
            if "range" in kinds
            else "ternary"
            if kinds & {"ternary", "optional"}
            else "lpm"
            if "lpm" in kinds
            else "exact"
        )
        dname, ddata = default or (actions[-1], [])
        t: Json = {
            "name": name,
            "id": self._tid,
            "key": key_json,
            "match_type": mt,
            "type": ("indirect_ws" if selector else "indirect") if action_profile else "simple",
            "max_size": size,
            "with_counters": with_counters,
            "support_timeout": support_timeout,
            "direct_meters": direct_meters,
            "action_ids": [self.action_id(a) for a in actions],
            "actions": list(actions),
            "base_default_next": base_default_next,
            "next_tables": next_tables
            if next_tables is not None
            else {a: base_default_next for a in actions},
            "default_entry": {
                "action_id": self.action_id(dname),
                "action_const": default_const,
                "action_data": [hex(x) for x in ddata],
                "action_entry_const": default_const,
            },
        }
        if action_profile:
            t["action_profile"] = action_profile
        if entries:
            t["entries"] = entries
        self._tid += 1
        self.pipes[pipeline]["tables"].append(t)

    def action_profile(
        self,
        name: str,
        selector_algo: str | None = None,
        inputs: list[Json] | None = None,
        pipeline: str = "ingress",
    ) -> None:
        ap: Json = {"name": name, "id": len(self.pipes[pipeline]["action_profiles"]), "max_size": 128}
        if selector_algo:
            ap["selector"] = {"algo": selector_algo, "input": inputs or []}
        self.pipes[pipeline]["action_profiles"].append(ap)

    def call(
        self, action: str, *, pipeline: str = "ingress", next_node: str | None = None, name: str | None = None
    ) -> str:
        """A direct action call as p4c lowers it: a keyless table with a const default action."""
        tname = name or f"tbl_{action.split('.')[-1]}_{self._tid}"
        self.table(
            tname,
            [],
            [action],
            pipeline=pipeline,
            default=(action, []),
            default_const=True,
            base_default_next=next_node,
        )
        return tname

    def conditional(
        self, name: str, expr: Json, true_next: str | None, false_next: str | None, pipeline: str = "ingress"
    ) -> None:
        self.pipes[pipeline]["conditionals"].append(
            {
                "name": name,
                "id": self._cid,
                "expression": expr,
                "true_next": true_next,
                "false_next": false_next,
            }
        )
        self._cid += 1

    def init(self, pipeline: str, node: str | None) -> None:
        self.pipes[pipeline]["init_table"] = node

    # -- externs ------------------------------------------------------------------------------------
    def counter(self, name: str, size: int, direct_table: str | None = None) -> None:
        c: Json = {
            "name": name,
            "id": len(self.counters),
            "is_direct": direct_table is not None,
            "size": size,
        }
        if direct_table:
            c["binding"] = direct_table
        self.counters.append(c)

    def meter(
        self,
        name: str,
        size: int,
        mtype: str = "packets",
        direct_table: str | None = None,
        result: list[str] | None = None,
    ) -> None:
        m: Json = {
            "name": name,
            "id": len(self.meters),
            "is_direct": direct_table is not None,
            "size": size,
            "rate_count": 2,
            "type": mtype,
        }
        if direct_table:
            m["binding"] = direct_table
            m["result_target"] = result
        self.meters.append(m)

    def register(self, name: str, size: int, bitwidth: int) -> None:
        self.registers.append({"name": name, "id": len(self.registers), "size": size, "bitwidth": bitwidth})

    def calculation(self, name: str, algo: str, inputs: list[Json]) -> None:
        self.calculations.append({"name": name, "id": len(self.calculations), "algo": algo, "input": inputs})

    def checksum(
        self, name: str, target: list[str], calc: str, verify: bool, update: bool, cond: Json | None = None
    ) -> None:
        self.checksums.append(
            {
                "name": name,
                "id": len(self.checksums),
                "target": target,
                "type": "generic",
                "calculation": calc,
                "verify": verify,
                "update": update,
                "if_cond": cond,
            }
        )

    def field_list(self, fid: int, name: str, fields: list[Json]) -> None:
        self.field_lists.append({"id": fid, "name": name, "elements": fields})

    def learn_list(self, lid: int, name: str, fields: list[Json]) -> None:
        self.learn_lists.append({"id": lid, "name": name, "elements": fields})

    def parse_vset(self, name: str, bitwidth: int) -> None:
        self.parse_vsets.append(
            {"name": name, "id": len(self.parse_vsets), "compressed_bitwidth": bitwidth, "max_size": 64}
        )

    # -- result --------------------------------------------------------------------------------------
    def build(self) -> Json:
        return {
            "header_types": self.header_types,
            "headers": self.headers,
            "header_stacks": self.header_stacks,
            "header_union_types": [],
            "header_unions": [],
            "header_union_stacks": [],
            "field_lists": self.field_lists,
            "errors": [
                ["NoError", 0],
                ["PacketTooShort", 1],
                ["NoMatch", 2],
                ["StackOutOfBounds", 3],
                ["HeaderTooShort", 4],
                ["ParserTimeout", 5],
                ["ParserInvalidArgument", 6],
            ],
            "enums": [],
            "parsers": [
                {
                    "name": "parser",
                    "id": 0,
                    "init_state": self.states[0]["name"] if self.states else None,
                    "parse_states": self.states,
                }
            ],
            "parse_vsets": self.parse_vsets,
            "deparsers": [{"name": "deparser", "id": 0, "order": self.deparser_order, "primitives": []}],
            "meter_arrays": self.meters,
            "counter_arrays": self.counters,
            "register_arrays": self.registers,
            "calculations": self.calculations,
            "learn_lists": self.learn_lists,
            "actions": self.actions,
            "pipelines": [self.pipes["ingress"], self.pipes["egress"]],
            "checksums": self.checksums,
            "force_arith": [],
            "extern_instances": [],
            "field_aliases": [],
            "program": "built.p4",
            "__meta__": {"version": [2, 23], "compiler": "p4kit.switch.jsonbuild"},
        }
