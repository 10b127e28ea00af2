"""Which header lists a multicast replica must own.

Each replica of a multicast runs egress, the checksum update and the deparser on its own copy of
the packet. Copying every header list costs a slice per header (INC: twelve, of which egress changes
four), yet a list that nothing after ingress writes can be shared by every replica as it is. This
finds, from the JSON, the headers that egress's actions and the checksum update may touch: a
replica copies those and shares the rest. Anything it cannot follow (a stack or union operation, a
clone or recirculation, a primitive it does not know) makes every header a copy, as before.
"""

from __future__ import annotations

from typing import Any

from p4kit.switch.program import Program

# primitives whose header references are all in their parameters (reads and writes alike count)
_KNOWN_OPS = frozenset(
    {
        "assign",
        "modify_field",
        "add_to_field",
        "subtract_from_field",
        "assign_header",
        "add_header",
        "remove_header",
        "mark_to_drop",
        "count",
        "register_read",
        "register_write",
        "execute_meter",
        "modify_field_with_hash_based_offset",
        "modify_field_rng_uniform",
        "log_msg",
        "assume",
        "assert",
        "exit",
        "no_op",
        "_jump",
        "_jump_if_zero",
    }
)
# value types that name no header
_NO_HEADER = frozenset(
    {
        "hexstr",
        "bool",
        "runtime_data",
        "local",
        "register_array",
        "counter_array",
        "meter_array",
        "calculation",
        "string",
        "parameters_vector",
    }
)


class _Unknown(Exception):
    pass


def _headers_in(v: Any, out: set[str]) -> None:
    """Add every header a JSON value refers to; _Unknown for references it cannot resolve."""
    if isinstance(v, list):
        for x in v:
            _headers_in(x, out)
        return
    if not isinstance(v, dict):
        return
    kind = v.get("type")
    if kind == "field":
        ref = v.get("value")
        if not (isinstance(ref, list) and len(ref) == 2 and isinstance(ref[0], str)):
            raise _Unknown
        out.add(ref[0])
    elif kind == "header":
        if not isinstance(v.get("value"), str):
            raise _Unknown
        out.add(v["value"])
    elif kind == "expression":
        e = v.get("value")
        if isinstance(e, dict) and "op" in e:
            for part in ("left", "right", "cond"):
                _headers_in(e.get(part), out)
        else:
            _headers_in(e, out)
    elif kind == "parameters_vector":
        _headers_in(v.get("value"), out)
    elif kind not in _NO_HEADER:
        raise _Unknown  # stacks, unions, lookahead, anything new


def replica_owned_headers(prog: Program) -> frozenset[int] | None:
    """Ids of the headers each replica needs its own list of (standard_metadata always), or None
    when every header must be copied."""
    sm = prog.header_by_name.get("standard_metadata")
    names: set[str] = set()
    pipe = prog.pipelines.get("egress") or {}
    aids: set[int] = set()
    for t in pipe.get("tables", []) or []:
        info = prog.tables.get(t.get("name"))
        if info is None:
            return None
        aids.update(info.action_ids)
    for ac in pipe.get("action_calls", []) or []:
        aids.add(int(ac["action_id"]))
    try:
        for aid in aids:
            action = prog.actions_by_id.get(aid)
            if action is None:
                return None
            for p in action.primitives:
                if p.get("op") not in _KNOWN_OPS:
                    return None
                _headers_in(p.get("parameters", []), names)
        for c in prog.checksums:
            if c.get("update", True):
                _headers_in({"type": "field", "value": c.get("target")}, names)
    except _Unknown:
        return None
    ids = {sm.id} if sm is not None else set()
    for n in names:
        h = prog.header_by_name.get(n)
        if h is None or any(h.id in members for members in prog.unions.values()):
            return None
        ids.add(h.id)
    return frozenset(ids)
