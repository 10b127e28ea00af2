"""P4Runtime's error model against a real p4kit-switch process: a config that is JSON but not a BMv2
program, a P4Info that does not describe its JSON, a field of absurd width, and Write's per-update
statuses. Each bad request must answer INVALID_ARGUMENT with a message (never UNKNOWN, never a hang)
and leave the committed pipeline serving."""

from __future__ import annotations

import copy
import json
import time

import grpc
import pytest
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2 as pb

from ._p4rt_client import Client, switch_process, update, write_errors
from ._switch_programs import bmv2_json, p4info

DEV = 5
LPM = 37375156
FWD = 28792405
A = pb.SetForwardingPipelineConfigRequest


@pytest.fixture(scope="module")
def switch_addr():
    with switch_process("--no-p4", device_id=DEV) as (addr, _):
        yield addr


@pytest.fixture
def client(switch_addr):
    c = Client(switch_addr, DEV)
    s = c.stream(election=1)
    assert s.next("arbitration").arbitration.status.code == 0
    c.set_pipeline(p4info(), json.dumps(bmv2_json()).encode())
    yield c
    c.close()


def lpm_entry(first_octet: int, port: bytes = b"\x02") -> pb.Entity:
    te = pb.TableEntry(table_id=LPM)
    m = te.match.add(field_id=1)
    m.lpm.value, m.lpm.prefix_len = bytes([first_octet, 0, 0, 0]), 8
    te.action.action.action_id = FWD
    te.action.action.params.add(param_id=1, value=b"\x02\0\0\0\0\x02")
    te.action.action.params.add(param_id=2, value=port)
    return pb.Entity(table_entry=te)


def lpm_count(client: Client) -> int:
    return len(client.read(pb.Entity(table_entry=pb.TableEntry(table_id=LPM))))


def rejected(client: Client, doc_or_bytes, info=None, action=A.VERIFY_AND_COMMIT) -> grpc.RpcError:
    data = doc_or_bytes if isinstance(doc_or_bytes, bytes) else json.dumps(doc_or_bytes).encode()
    with pytest.raises(grpc.RpcError) as e:
        client.set_pipeline(info or p4info(), data, action=action)
    return e.value


def _with(**changes) -> dict:
    doc = bmv2_json()
    doc.update(changes)
    return doc


def _wide_field(width) -> dict:
    doc = bmv2_json()
    doc["header_types"].append({"name": "wide_t", "id": 90, "fields": [["f", width, False]]})
    doc["headers"].append(
        {"name": "wide", "id": len(doc["headers"]), "header_type": "wide_t", "metadata": True}
    )
    return doc


WRONG_SHAPES = {
    "pipelines is a number": _with(pipelines=5),
    "pipelines holds strings": _with(pipelines=["ingress"]),
    "actions is a string": _with(actions="drop"),
    "header_types is null": _with(header_types=None),
    "headers holds numbers": _with(headers=[1, 2]),
    "a field width is a string": _with(header_types=[{"name": "x", "id": 0, "fields": [["a", "b"]]}]),
    "a field width is negative": _wide_field(-8),
    "a field of width 2^70": _wide_field(2**70),
    "a field of width 2^31": _wide_field(2**31),
    "a register of 2^40 cells": _with(
        register_arrays=[{"name": "MyIngress.reg", "id": 0, "size": 2**40, "bitwidth": 32}]
    ),
}


@pytest.mark.parametrize("name", list(WRONG_SHAPES))
@pytest.mark.parametrize("action", [A.VERIFY, A.VERIFY_AND_COMMIT], ids=["verify", "commit"])
def test_json_of_the_wrong_shape_is_invalid_argument(client, name, action) -> None:
    client.write(update("INSERT", lpm_entry(10)))
    start = time.process_time()
    err = rejected(client, WRONG_SHAPES[name], action=action)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, (name, err.details())
    assert "BMv2 JSON" in err.details()
    assert time.process_time() - start < 5  # client CPU only: the answer came without spinning here
    assert lpm_count(client) == 1  # the old pipeline and its entry are still there
    client.write(update("INSERT", lpm_entry(11)))  # and it still takes writes


def test_absurd_width_is_refused_promptly_and_names_the_field(client) -> None:
    start = time.monotonic()
    err = rejected(client, _wide_field(2**70))
    assert time.monotonic() - start < 10
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "wide_t" in err.details() and "2048" in err.details()


def test_a_p4info_key_width_that_differs_from_the_json_is_refused(client) -> None:
    info = p4info()
    table = next(t for t in info.tables if t.preamble.id == LPM)
    table.match_fields[0].bitwidth = 16  # the JSON's key is hdr.ipv4.dstAddr, 32 bits
    err = rejected(client, bmv2_json(), info)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "16 bits wide in P4Info, 32 in the JSON" in err.details()


def test_a_p4info_match_kind_or_key_name_that_differs_is_refused(client) -> None:
    info = p4info()
    table = next(t for t in info.tables if t.preamble.id == LPM)
    table.match_fields[0].match_type = table.match_fields[0].EXACT
    assert rejected(client, bmv2_json(), info).code() == grpc.StatusCode.INVALID_ARGUMENT
    info = p4info()
    table = next(t for t in info.tables if t.preamble.id == LPM)
    table.match_fields[0].name = "hdr.ipv4.srcAddr"
    err = rejected(client, bmv2_json(), info)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and "srcAddr" in err.details()


def test_a_p4info_action_parameter_width_that_differs_is_refused(client) -> None:
    info = p4info()
    action = next(a for a in info.actions if a.preamble.id == FWD)
    action.params[1].bitwidth = 16  # port is bit<9> in the JSON
    err = rejected(client, bmv2_json(), info)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "parameter" in err.details() and "16 bits wide" in err.details()


def test_a_json_key_narrower_than_p4info_is_refused_too(client) -> None:
    doc = copy.deepcopy(bmv2_json())
    for ht in doc["header_types"]:
        if ht["name"] == "ipv4_t":
            ht["fields"] = [[n, 16 if n == "dstAddr" else w, *rest] for n, w, *rest in ht["fields"]]
    err = rejected(client, doc)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_write_reports_one_status_per_update_in_the_details(client) -> None:
    updates = [
        update("INSERT", lpm_entry(10)),
        update("INSERT", lpm_entry(10)),  # duplicate
        update("INSERT", lpm_entry(12, port=b"\x02\x00")),  # 512 does not fit bit<9>
        update("DELETE", lpm_entry(13)),  # not there
        update("INSERT", lpm_entry(14)),
    ]
    with pytest.raises(grpc.RpcError) as e:
        client.write(*updates)
    assert [c for c, _ in write_errors(e.value)] == [
        "OK",
        "ALREADY_EXISTS",
        "INVALID_ARGUMENT",
        "NOT_FOUND",
        "OK",
    ]
    msgs = [m for _, m in write_errors(e.value)]
    assert msgs[0] == "" and all(msgs[1:4]) and msgs[4] == ""
    status = next(
        status_pb2.Status.FromString(v)
        for k, v in e.value.trailing_metadata()
        if k == "grpc-status-details-bin"
    )
    assert status.code == code_pb2.UNKNOWN and len(status.details) == len(updates)
    assert status.details[0].type_url.endswith("p4.v1.Error")
    assert lpm_count(client) == 2  # the good ones are kept


def _table(info, table_id=LPM):
    return next(t for t in info.tables if t.preamble.id == table_id)


def _bad_p4infos():
    i = p4info()
    _table(i).action_refs.add(id=0x01999999)
    yield "action id", i
    i = p4info()
    _table(i).const_default_action_id = 0x01999999
    yield "const default action", i
    i = p4info()
    _table(i).implementation_id = 0x11999999
    yield "not an action profile", i
    i = p4info()
    _table(i).direct_resource_ids.append(0x13999999)
    yield "direct resource", i
    i = p4info()
    i.actions.add().CopyFrom(i.actions[0])
    yield "also", i
    i = p4info()
    _table(i).match_fields[0].match_type = 0
    yield "no match type", i
    i = p4info()
    i.controller_packet_metadata[0].metadata[0].bitwidth = 2**31 - 1
    yield "out of range", i
    i = p4info()
    i.registers[0].size = 1 << 20
    yield "cells", i


@pytest.mark.parametrize(
    ("needle", "info"), list(_bad_p4infos()), ids=lambda x: x if isinstance(x, str) else ""
)
def test_a_p4info_that_contradicts_itself_or_the_json_is_refused(client, needle, info) -> None:
    err = rejected(client, bmv2_json(), info)
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert needle in err.details()
    assert lpm_count(client) == 0  # the committed pipeline is still there (and still empty)
