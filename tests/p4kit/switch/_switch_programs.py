"""A small hand-built program (BMv2 JSON + P4Info) for the switch's tests before the compiler exists.

It is tutorials' basic.p4 plus what the P4Runtime tests need, written as p4c-bm2-ss would emit it:

    header packet_out_t { bit<9> egress_port; bit<7> _pad; }   // @controller_header("packet_out")
    header packet_in_t  { bit<9> ingress_port; bit<7> _pad; }  // @controller_header("packet_in")
    parser: ingress_port == CPU_PORT ? packet_out : ethernet -> (0x800) ipv4
    ingress:
      if (hdr.packet_out.isValid()) { egress_spec = packet_out.egress_port; packet_out.setInvalid(); }
      else if (hdr.ipv4.isValid()) ipv4_lpm.apply();     // lpm dstAddr, direct counter
      acl.apply();                                        // ternary etherType, priority
    actions: ipv4_forward(bit<48> dstAddr, bit<9> port) (counts port_counter[port], stores the port in
             reg[0]), drop(), to_cpu(), set_mcast(bit<16> grp), NoAction
    deparser: packet_in, ethernet, ipv4 (IPv4 checksum recomputed)
"""

from __future__ import annotations

import json
import os

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

CPU_PORT = 255

STD_META = [
    ["ingress_port", 9, False],
    ["egress_spec", 9, False],
    ["egress_port", 9, False],
    ["instance_type", 32, False],
    ["packet_length", 32, False],
    ["enq_timestamp", 32, False],
    ["enq_qdepth", 19, False],
    ["deq_timedelta", 32, False],
    ["deq_qdepth", 19, False],
    ["ingress_global_timestamp", 48, False],
    ["egress_global_timestamp", 48, False],
    ["mcast_grp", 16, False],
    ["egress_rid", 16, False],
    ["checksum_error", 1, False],
    ["parser_error", 32, False],
    ["priority", 3, False],
    ["_padding", 3, False],
]
IPV4 = [
    ["version", 4, False],
    ["ihl", 4, False],
    ["diffserv", 8, False],
    ["totalLen", 16, False],
    ["identification", 16, False],
    ["flags", 3, False],
    ["fragOffset", 13, False],
    ["ttl", 8, False],
    ["protocol", 8, False],
    ["hdrChecksum", 16, False],
    ["srcAddr", 32, False],
    ["dstAddr", 32, False],
]


def _f(h: str, f: str) -> dict:
    return {"type": "field", "value": [h, f]}


def _rd(i: int) -> dict:
    return {"type": "runtime_data", "value": i}


def _valid(h: str) -> dict:
    return {"type": "expression", "value": {"op": "d2b", "left": None, "right": _f(h, "$valid$")}}


def _assign(dst: tuple[str, str], src: dict) -> dict:
    return {"op": "assign", "parameters": [_f(*dst), src]}


def _table(
    name: str,
    tid: int,
    key: list,
    match_type: str,
    actions: list[tuple[int, str]],
    default: int,
    nxt: str | None,
    with_counters: bool = False,
    const_default: bool = False,
) -> dict:
    return {
        "name": name,
        "id": tid,
        "key": key,
        "match_type": match_type,
        "type": "simple",
        "max_size": 1024,
        "with_counters": with_counters,
        "support_timeout": False,
        "direct_meters": None,
        "action_ids": [a for a, _ in actions],
        "actions": [n for _, n in actions],
        "base_default_next": nxt,
        "next_tables": {n: nxt for _, n in actions},
        "default_entry": {
            "action_id": default,
            "action_const": const_default,
            "action_data": [],
            "action_entry_const": const_default,
        },
    }


def bmv2_json() -> dict:
    actions = [
        {"name": "NoAction", "id": 0, "runtime_data": [], "primitives": []},
        {
            "name": "MyIngress.drop",
            "id": 1,
            "runtime_data": [],
            "primitives": [
                {"op": "mark_to_drop", "parameters": [{"type": "header", "value": "standard_metadata"}]}
            ],
        },
        {
            "name": "MyIngress.ipv4_forward",
            "id": 2,
            "runtime_data": [{"name": "dstAddr", "bitwidth": 48}, {"name": "port", "bitwidth": 9}],
            "primitives": [
                _assign(("standard_metadata", "egress_spec"), _rd(1)),
                _assign(("ethernet", "srcAddr"), _f("ethernet", "dstAddr")),
                _assign(("ethernet", "dstAddr"), _rd(0)),
                _assign(
                    ("ipv4", "ttl"),
                    {
                        "type": "expression",
                        "value": {
                            "op": "&",
                            "left": {
                                "type": "expression",
                                "value": {
                                    "op": "+",
                                    "left": _f("ipv4", "ttl"),
                                    "right": {"type": "hexstr", "value": "0xff"},
                                },
                            },
                            "right": {"type": "hexstr", "value": "0xff"},
                        },
                    },
                ),
                {
                    "op": "count",
                    "parameters": [{"type": "counter_array", "value": "MyIngress.port_counter"}, _rd(1)],
                },
                {
                    "op": "register_write",
                    "parameters": [
                        {"type": "register_array", "value": "MyIngress.reg"},
                        {"type": "hexstr", "value": "0x0"},
                        _rd(1),
                    ],
                },
            ],
        },
        {
            "name": "MyIngress.to_cpu",
            "id": 3,
            "runtime_data": [],
            "primitives": [
                _assign(("standard_metadata", "egress_spec"), {"type": "hexstr", "value": hex(CPU_PORT)}),
                {"op": "add_header", "parameters": [{"type": "header", "value": "packet_in"}]},
                _assign(("packet_in", "ingress_port"), _f("standard_metadata", "ingress_port")),
            ],
        },
        {
            "name": "MyIngress.set_mcast",
            "id": 4,
            "runtime_data": [{"name": "grp", "bitwidth": 16}],
            "primitives": [_assign(("standard_metadata", "mcast_grp"), _rd(0))],
        },
        {
            "name": "MyIngress.from_cpu",
            "id": 5,
            "runtime_data": [],
            "primitives": [
                _assign(("standard_metadata", "egress_spec"), _f("packet_out", "egress_port")),
                {"op": "remove_header", "parameters": [{"type": "header", "value": "packet_out"}]},
            ],
        },
    ]
    lpm = _table(
        "MyIngress.ipv4_lpm",
        0,
        [{"match_type": "lpm", "name": "hdr.ipv4.dstAddr", "target": ["ipv4", "dstAddr"], "mask": None}],
        "lpm",
        [
            (2, "MyIngress.ipv4_forward"),
            (1, "MyIngress.drop"),
            (3, "MyIngress.to_cpu"),
            (4, "MyIngress.set_mcast"),
            (0, "NoAction"),
        ],
        1,
        "MyIngress.acl",
        with_counters=True,
    )
    acl = _table(
        "MyIngress.acl",
        1,
        [
            {
                "match_type": "ternary",
                "name": "hdr.ethernet.etherType",
                "target": ["ethernet", "etherType"],
                "mask": None,
            }
        ],
        "ternary",
        [(1, "MyIngress.drop"), (3, "MyIngress.to_cpu"), (0, "NoAction")],
        0,
        None,
    )
    from_cpu = _table(
        "tbl_from_cpu", 2, [], "exact", [(5, "MyIngress.from_cpu")], 5, None, const_default=True
    )
    csum_fields = [_f("ipv4", n) for n, _, _ in IPV4 if n != "hdrChecksum"]
    return {
        "header_types": [
            {"name": "scalars_0", "id": 0, "fields": []},
            {"name": "standard_metadata", "id": 1, "fields": STD_META},
            {"name": "packet_out_t", "id": 2, "fields": [["egress_port", 9, False], ["_pad", 7, False]]},
            {"name": "packet_in_t", "id": 3, "fields": [["ingress_port", 9, False], ["_pad", 7, False]]},
            {
                "name": "ethernet_t",
                "id": 4,
                "fields": [["dstAddr", 48, False], ["srcAddr", 48, False], ["etherType", 16, False]],
            },
            {"name": "ipv4_t", "id": 5, "fields": IPV4},
        ],
        "headers": [
            {"name": "scalars", "id": 0, "header_type": "scalars_0", "metadata": True, "pi_omit": True},
            {
                "name": "standard_metadata",
                "id": 1,
                "header_type": "standard_metadata",
                "metadata": True,
                "pi_omit": True,
            },
            {
                "name": "packet_out",
                "id": 2,
                "header_type": "packet_out_t",
                "metadata": False,
                "pi_omit": True,
            },
            {"name": "packet_in", "id": 3, "header_type": "packet_in_t", "metadata": False, "pi_omit": True},
            {"name": "ethernet", "id": 4, "header_type": "ethernet_t", "metadata": False, "pi_omit": True},
            {"name": "ipv4", "id": 5, "header_type": "ipv4_t", "metadata": False, "pi_omit": True},
        ],
        "header_stacks": [],
        "header_union_types": [],
        "header_unions": [],
        "header_union_stacks": [],
        "field_lists": [],
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
                "init_state": "start",
                "parse_states": [
                    {
                        "name": "start",
                        "id": 0,
                        "parser_ops": [],
                        "transitions": [
                            {
                                "type": "hexstr",
                                "value": hex(CPU_PORT),
                                "mask": None,
                                "next_state": "parse_packet_out",
                            },
                            {"type": "default", "value": None, "mask": None, "next_state": "parse_ethernet"},
                        ],
                        "transition_key": [_f("standard_metadata", "ingress_port")],
                    },
                    {
                        "name": "parse_packet_out",
                        "id": 1,
                        "parser_ops": [
                            {"op": "extract", "parameters": [{"type": "regular", "value": "packet_out"}]}
                        ],
                        "transitions": [{"type": "default", "value": None, "mask": None, "next_state": None}],
                        "transition_key": [],
                    },
                    {
                        "name": "parse_ethernet",
                        "id": 2,
                        "parser_ops": [
                            {"op": "extract", "parameters": [{"type": "regular", "value": "ethernet"}]}
                        ],
                        "transitions": [
                            {"type": "hexstr", "value": "0x0800", "mask": None, "next_state": "parse_ipv4"},
                            {"type": "default", "value": None, "mask": None, "next_state": None},
                        ],
                        "transition_key": [_f("ethernet", "etherType")],
                    },
                    {
                        "name": "parse_ipv4",
                        "id": 3,
                        "parser_ops": [
                            {"op": "extract", "parameters": [{"type": "regular", "value": "ipv4"}]}
                        ],
                        "transitions": [{"type": "default", "value": None, "mask": None, "next_state": None}],
                        "transition_key": [],
                    },
                ],
            }
        ],
        "parse_vsets": [],
        "deparsers": [
            {
                "name": "deparser",
                "id": 0,
                "order": ["packet_in", "packet_out", "ethernet", "ipv4"],
                "primitives": [],
            }
        ],
        "meter_arrays": [],
        "counter_arrays": [
            {"name": "MyIngress.port_counter", "id": 0, "is_direct": False, "size": 512},
            {"name": "MyIngress.lpm_counter", "id": 1, "is_direct": True, "binding": "MyIngress.ipv4_lpm"},
        ],
        "register_arrays": [{"name": "MyIngress.reg", "id": 0, "bitwidth": 32, "size": 16}],
        "calculations": [{"name": "calc", "id": 0, "algo": "csum16", "input": csum_fields}],
        "learn_lists": [],
        "actions": actions,
        "pipelines": [
            {
                "name": "ingress",
                "id": 0,
                "init_table": "node_po",
                "tables": [lpm, acl, from_cpu],
                "action_profiles": [],
                "conditionals": [
                    {
                        "name": "node_po",
                        "id": 0,
                        "expression": _valid("packet_out"),
                        "true_next": "tbl_from_cpu",
                        "false_next": "node_ip",
                    },
                    {
                        "name": "node_ip",
                        "id": 1,
                        "expression": _valid("ipv4"),
                        "true_next": "MyIngress.ipv4_lpm",
                        "false_next": "MyIngress.acl",
                    },
                ],
            },
            {
                "name": "egress",
                "id": 1,
                "init_table": None,
                "tables": [],
                "action_profiles": [],
                "conditionals": [],
            },
        ],
        "checksums": [
            {
                "name": "cksum",
                "id": 0,
                "target": ["ipv4", "hdrChecksum"],
                "type": "generic",
                "calculation": "calc",
                "verify": False,
                "update": True,
                "if_cond": _valid("ipv4"),
            }
        ],
        "force_arith": [],
        "extern_instances": [],
        "field_aliases": [
            ["queueing_metadata.enq_timestamp", ["standard_metadata", "enq_timestamp"]],
            ["queueing_metadata.enq_qdepth", ["standard_metadata", "enq_qdepth"]],
            ["queueing_metadata.deq_timedelta", ["standard_metadata", "deq_timedelta"]],
            ["queueing_metadata.deq_qdepth", ["standard_metadata", "deq_qdepth"]],
            [
                "intrinsic_metadata.ingress_global_timestamp",
                ["standard_metadata", "ingress_global_timestamp"],
            ],
            ["intrinsic_metadata.egress_global_timestamp", ["standard_metadata", "egress_global_timestamp"]],
            ["intrinsic_metadata.mcast_grp", ["standard_metadata", "mcast_grp"]],
            ["intrinsic_metadata.egress_rid", ["standard_metadata", "egress_rid"]],
            ["intrinsic_metadata.priority", ["standard_metadata", "priority"]],
        ],
        "program": "basic_rt.p4",
        "__meta__": {"version": [2, 23], "compiler": "hand-written for p4kit tests"},
    }


P4INFO_TEXT = """
pkg_info { arch: "v1model" }
tables {
  preamble { id: 37375156 name: "MyIngress.ipv4_lpm" alias: "ipv4_lpm" }
  match_fields { id: 1 name: "hdr.ipv4.dstAddr" bitwidth: 32 match_type: LPM }
  action_refs { id: 28792405 }
  action_refs { id: 25652968 }
  action_refs { id: 23118640 }
  action_refs { id: 18426021 }
  action_refs { id: 21257015 }
  direct_resource_ids: 325583051
  size: 1024
}
tables {
  preamble { id: 44506256 name: "MyIngress.acl" alias: "acl" }
  match_fields { id: 1 name: "hdr.ethernet.etherType" bitwidth: 16 match_type: TERNARY }
  action_refs { id: 25652968 }
  action_refs { id: 23118640 }
  action_refs { id: 21257015 }
  size: 1024
}
actions { preamble { id: 21257015 name: "NoAction" alias: "NoAction" annotations: "@noWarn(\\"unused\\")" } }
actions { preamble { id: 25652968 name: "MyIngress.drop" alias: "drop" } }
actions {
  preamble { id: 28792405 name: "MyIngress.ipv4_forward" alias: "ipv4_forward" }
  params { id: 1 name: "dstAddr" bitwidth: 48 }
  params { id: 2 name: "port" bitwidth: 9 }
}
actions { preamble { id: 23118640 name: "MyIngress.to_cpu" alias: "to_cpu" } }
actions {
  preamble { id: 18426021 name: "MyIngress.set_mcast" alias: "set_mcast" }
  params { id: 1 name: "grp" bitwidth: 16 }
}
counters {
  preamble { id: 309010261 name: "MyIngress.port_counter" alias: "port_counter" }
  spec { unit: BOTH }
  size: 512
}
direct_counters {
  preamble { id: 325583051 name: "MyIngress.lpm_counter" alias: "lpm_counter" }
  spec { unit: BOTH }
  direct_table_id: 37375156
}
controller_packet_metadata {
  preamble { id: 67146229 name: "packet_in" alias: "packet_in" annotations: "@controller_header(\\"packet_in\\")" }
  metadata { id: 1 name: "ingress_port" bitwidth: 9 }
  metadata { id: 2 name: "_pad" bitwidth: 7 }
}
controller_packet_metadata {
  preamble { id: 67121543 name: "packet_out" alias: "packet_out" annotations: "@controller_header(\\"packet_out\\")" }
  metadata { id: 1 name: "egress_port" bitwidth: 9 }
  metadata { id: 2 name: "_pad" bitwidth: 7 }
}
registers {
  preamble { id: 371444078 name: "MyIngress.reg" alias: "reg" }
  type_spec { bitstring { bit { bitwidth: 32 } } }
  size: 16
}
"""


def p4info() -> p4info_pb2.P4Info:
    msg = p4info_pb2.P4Info()
    text_format.Parse(P4INFO_TEXT, msg)
    return msg


def write_program(directory: str) -> tuple[str, str]:
    """Write basic_rt.p4info.txtpb and basic_rt.json into `directory`; return (p4info, json) paths."""
    info_path = os.path.join(directory, "basic_rt.p4info.txtpb")
    json_path = os.path.join(directory, "basic_rt.json")
    with open(info_path, "w") as f:
        f.write(text_format.MessageToString(p4info()))
    with open(json_path, "w") as f:
        json.dump(bmv2_json(), f, indent=1)
    return info_path, json_path
