"""Diagnostics point at the original file and line, through the preprocessor's linemarkers."""

from pathlib import Path

import pytest

from p4kit.compiler.diagnostics import CompileError, SourceLoc, SourceMap
from p4kit.compiler.preprocess import preprocess


def test_linemarkers_map_back_to_original_lines(tmp_path: Path) -> None:
    inc = tmp_path / "defs.p4"
    inc.write_text("// header\nconst bit<8> A = 1;\n")
    main = tmp_path / "main.p4"
    main.write_text('#include "defs.p4"\n#define W 8\n\nconst bit<W> B = 2;\n')
    smap = preprocess(main)
    lines = smap.clean_text.split("\n")
    a_line = next(i for i, t in enumerate(lines, 1) if "A = 1" in t)
    b_line = next(i for i, t in enumerate(lines, 1) if "B = 2" in t)
    assert "const bit<8> B = 2;" in lines[b_line - 1]
    assert smap.locate(a_line, 1).file.endswith("defs.p4") and smap.locate(a_line, 1).line == 2
    assert smap.locate(b_line, 7).file.endswith("main.p4") and smap.locate(b_line, 7).line == 4


def test_error_format_has_location_line_and_caret(tmp_path: Path) -> None:
    src = tmp_path / "p.p4"
    src.write_text("control C() {\n    apply { x = 1; }\n}\n")
    smap = SourceMap.from_preprocessed(f'# 1 "{src}"\n' + src.read_text())
    err = CompileError("unknown name 'x'", smap.locate(3, 13))
    assert err.format().splitlines() == [
        f"{src}:2:13: error: unknown name 'x'",
        "    apply { x = 1; }",
        "            ^",
    ]


def test_preprocessor_errors_are_compile_errors(tmp_path: Path) -> None:
    src = tmp_path / "p.p4"
    src.write_text('#include "missing.p4"\n')
    with pytest.raises(CompileError, match="preprocessing failed"):
        preprocess(src)


def test_notes_follow_the_error_with_their_own_line_and_caret(tmp_path: Path) -> None:
    """An error p4c reports at a declaration names the use that caused it in a note."""
    src = tmp_path / "p.p4"
    src.write_text("header h_t { bit<8> a; }\ncontrol C() {\n    apply { digest(1, h); }\n}\n")
    err = CompileError(
        "h_t: expected a struct type",
        SourceLoc(str(src), 1, 8),
        notes=[("digest of h_t here", SourceLoc(str(src), 3, 13)), ("nowhere", None)],
    )
    assert err.format().splitlines() == [
        f"{src}:1:8: error: h_t: expected a struct type",
        "header h_t { bit<8> a; }",
        "       ^",
        f"{src}:3:13: note: digest of h_t here",
        "    apply { digest(1, h); }",
        "            ^",
    ]
