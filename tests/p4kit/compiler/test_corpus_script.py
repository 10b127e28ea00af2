"""scripts/corpus.py finds the programs of a folder the way p4c's test suite names them: a file that
declares `main` itself or through a file it includes is a program, a file others include is not."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "corpus.py"

SKELETON = """
#ifdef _CORE_P4_
struct Headers { hdr h; }
struct Meta {}
parser p(packet_in b, out Headers h, inout Meta m, inout standard_metadata_t sm) {
    state start { b.extract(h.h); transition accept; }
}
control vrfy(inout Headers h, inout Meta m) { apply {} }
control update(inout Headers h, inout Meta m) { apply {} }
control egress(inout Headers h, inout Meta m, inout standard_metadata_t sm) { apply {} }
control deparser(packet_out b, in Headers h) { apply { b.emit(h.h); } }
control ingress(inout Headers h, inout Meta m, inout standard_metadata_t sm) {
    apply { h.h.b = h.h.a + 1; sm.egress_spec = 0; }
}
V1Switch(p(), vrfy(), ingress(), egress(), update(), deparser()) main;
#endif
"""

PROGRAM = """#include <core.p4>
#include <v1model.p4>
header hdr { bit<8> a; bit<8> b; }
#include "skeleton.p4"
"""


def _load():
    spec = importlib.util.spec_from_file_location("corpus_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_main_in_an_include_makes_a_program(tmp_path: Path) -> None:
    corpus = _load()
    (tmp_path / "skeleton.p4").write_text(SKELETON)
    (tmp_path / "prog-bmv2.p4").write_text(PROGRAM)
    (tmp_path / "header_only.p4").write_text("header x_t { bit<8> f; }\n")
    assert corpus.is_program(tmp_path / "prog-bmv2.p4")
    assert corpus.is_program(tmp_path / "skeleton.p4")  # but it is included, so not run alone
    assert not corpus.is_program(tmp_path / "header_only.p4")
    included = corpus.included_files(sorted(tmp_path.glob("*.p4")))
    assert (tmp_path / "skeleton.p4").resolve() in included


def test_program_with_included_main_is_compiled_and_its_stf_run(tmp_path: Path) -> None:
    (tmp_path / "skeleton.p4").write_text(SKELETON)
    (tmp_path / "prog-bmv2.p4").write_text(PROGRAM)
    (tmp_path / "prog-bmv2.stf").write_text("packet 0 05 00\nexpect 0 05 06 $\n")
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path), "--stf", "--json", "--jobs", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["programs"] == 1 and summary["passed"] == 1
    assert summary["includes_skipped"] == 1
    assert summary["stf"]["ran"] == 1 and summary["stf"]["passed"] == 1
