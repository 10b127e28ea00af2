"""Multicast replicas copy the header lists egress may write and share the rest (replicas.py):
which headers each program's replicas own, and the fast path's replicas against the general path's."""

from __future__ import annotations

import copy
import re
import struct
from pathlib import Path

import pytest

from p4kit.compiler.driver import compile_file
from p4kit.switch import Switch
from p4kit.switch.program import load_program
from p4kit.switch.replicas import replica_owned_headers


@pytest.fixture(autouse=True)
def _python_data_plane(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the Python data plane's own machinery: the native one stays off."""
    monkeypatch.setenv("P4KIT_NATIVE", "0")


HERE = Path(__file__).parent
PROGRAM = HERE / "programs" / "mcast_shared.p4"
INC = HERE.parents[2] / "p4src" / "inc.p4"


@pytest.fixture(scope="module")
def doc() -> dict:
    return compile_file(PROGRAM).bmv2


def owned_names(doc: dict) -> set[str] | None:
    prog = load_program(doc)
    owned = replica_owned_headers(prog)
    return None if owned is None else {h.name for h in prog.headers if h.id in owned}


def test_replicas_own_what_egress_and_the_checksum_write(doc: dict) -> None:
    assert owned_names(doc) == {"standard_metadata", "a", "b"}  # c is only read
    inc = compile_file(INC, include_dirs=[INC.parent]).bmv2
    # INC's delivery rewrites the addresses and ports; the checksums are computed again
    assert owned_names(inc) == {"standard_metadata", "ethernet", "ipv4", "udp"}


def test_what_cannot_be_followed_copies_every_header(doc: dict) -> None:
    egress_actions = {aid for t in doc["pipelines"][1]["tables"] for aid in t["action_ids"]}
    for op, params in (
        ("clone_egress_pkt_to_egress", [{"type": "hexstr", "value": "0x1"}]),
        ("push", [{"type": "header_stack", "value": "stk"}, {"type": "hexstr", "value": "0x1"}]),
        ("assign", [{"type": "stack_field", "value": ["stk", "f"]}, {"type": "hexstr", "value": "0x1"}]),
    ):
        changed = copy.deepcopy(doc)
        action = next(a for a in changed["actions"] if a["id"] in egress_actions and a["primitives"])
        action["primitives"].append({"op": op, "parameters": params})
        assert owned_names(changed) is None, op


def make(doc: dict, traced: bool) -> Switch:
    sw = Switch()
    sw.raise_internal_errors = True
    sw.load_pipeline(doc)
    sw.mc_group_create(1, [(1, 0), (2, 0), (3, 0)])
    if traced:
        sw.set_trace(lambda line: None)
    return sw


def test_replicas_that_share_headers_equal_the_general_path(doc: dict) -> None:
    fast, general = make(doc, False), make(doc, True)
    prog = load_program(doc)
    c = prog.header_by_name["c"].id
    src = fast._engine.fast_source
    assert re.search(rf"\bH0\[{c}\][,\]]", src)  # c is shared, not copied
    # ... so the replicas pack it once (DEPARSE_R) and sum it into the checksum once (CALC.._R)
    assert "DEPARSE_R(P, H, M)" in src and re.search(r"CALC\w+_R\(P, H, M\)", src)
    for flag, val in ((0, 5), (0, 6), (1, 5), (1, 0)):
        frame = struct.pack("!HHHBBI", 1, 0, 0, flag, 7, val) + b"tail"
        got, want = fast.process_packet(9, frame), general.process_packet(9, frame)
        assert got == want and len(got) == 3, (flag, val)
        assert fast.process_batch(9, [frame, frame]) == want + want
        ports = [struct.unpack_from("!HHHBB", out)[1] for _, out in got]
        if flag == 0:  # each replica set its own flag: none saw another's
            assert ports == [p + (100 if val == 5 else 0) for p in (1, 2, 3)]
        else:
            assert {struct.unpack_from("!HHHBB", out)[4] for _, out in got} == {8}
