"""A control's branches nested up to their join (p4kit/switch/regions.py): the joins found, and the
generated code against the node-by-node (traced) pipeline on a control full of early returns."""

from __future__ import annotations

import itertools
import re
import struct
from pathlib import Path

import pytest

from p4kit.compiler.driver import compile_file
from p4kit.switch import Switch
from p4kit.switch.regions import ControlGraph


@pytest.fixture(autouse=True)
def _python_data_plane(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the Python data plane's own machinery: the native one stays off."""
    monkeypatch.setenv("P4KIT_NATIVE", "0")


PROGRAM = Path(__file__).parent / "programs" / "control_joins.p4"
INC = Path(__file__).resolve().parents[3] / "p4src" / "inc.p4"


def test_a_diamond_joins_where_its_branches_meet() -> None:
    g = ControlGraph({"c": ("t", "f"), "t": ("j",), "f": ("j",), "j": ("k",), "k": (None,)}, "c")
    assert g.merge(["t", "f"], None) == "j"


def test_a_branch_that_leaves_early_needs_no_join() -> None:
    # c: t returns or goes on to j; f goes to j: j is still the join (the return is a break)
    g = ControlGraph({"c": ("t", "f"), "t": (None, "x"), "x": ("j",), "f": ("j",), "j": (None,)}, "c")
    assert g.merge(["t", "f"], None) == "j"
    assert g.merge(["t", None], None) is None  # one branch goes on: nothing to join


def test_a_join_skipped_by_some_path_is_not_taken() -> None:
    # t reaches k (after j) without passing j: j would run k twice; k itself is the valid join
    g = ControlGraph(
        {"c": ("t", "f"), "t": ("j", "k"), "f": ("j",), "j": ("k",), "k": ("z",), "z": (None,)}, "c"
    )
    assert g.merge(["t", "f"], None) == "k"
    # inside a region that ends at k the branches end there; in one that ends at j, where t may
    # not go, no join is valid: the branches are written out in full
    assert g.merge(["t", "f"], "k") == "k"
    assert g.merge(["t", "f"], "j") is None


def test_a_cycle_gives_no_joins() -> None:
    g = ControlGraph({"a": ("b", "c"), "b": ("c",), "c": ("a",)}, "a")
    assert not g.acyclic and g.merge(["b", "c"], None) is None


@pytest.fixture(scope="module")
def doc() -> dict:
    return compile_file(PROGRAM).bmv2


def make(doc: dict, traced: bool) -> Switch:
    sw = Switch()
    sw.raise_internal_errors = True
    sw.load_pipeline(doc)
    sw.table_add("JI.t_hitmiss", [6], "JI.mark", [9])
    sw.table_add("JI.t_hitmiss", [9], "JI.mark", [4])
    sw.table_add("JI.t_run", [2], "JI.set_x", [1])
    sw.table_add("JI.t_run", [3], "JI.set_y", [])
    if traced:
        sw.set_trace(lambda line: None)
    return sw


def test_nested_code_equals_the_node_by_node_pipeline(doc: dict) -> None:
    fast, general = make(doc, False), make(doc, True)
    body = fast._engine.comp.ns["PIPE_BODY_ingress"]
    assert "n = _nxt" not in body and "_nxt is " in body  # the switch on action_run is nested too
    outputs = set()
    for a, b, c, d in itertools.product(range(4), range(4), (0, 5, 6, 9), (0, 7, 9)):
        frame = struct.pack("!8B", a, b, c, d, 0, 1, 0, 0)
        got, want = fast.process_packet(1, frame), general.process_packet(1, frame)
        assert got == want, (a, b, c, d)
        assert fast.drop_log == general.drop_log
        outputs.add(tuple(got))
    assert len(outputs) > 10  # the packets took many different paths
    for i in range(5):
        assert fast.counter_read("JI.seen", i) == general.counter_read("JI.seen", i) != (0, 0)


def test_inc_ingress_runs_as_one_nested_block() -> None:
    """INC's checks each drop and return; written path by path its ingress outgrew the inlining
    budget and ran its last nodes one call at a time."""
    sw = Switch()
    sw.load_pipeline(compile_file(INC, include_dirs=[INC.parent]).bmv2)
    body = sw._engine.comp.ns["PIPE_BODY_ingress"]
    assert "while True:" in body
    assert re.search(r"\bn = [TCK]\d+_", body) is None  # no node is left to the loop after the code
