"""Front end: compile-time arithmetic (consteval) and constant folding through the checker."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p4kit.compiler import ast
from p4kit.compiler import types as T  # noqa: N812
from p4kit.compiler.consteval import ConstEvalError, fold_binary, fold_cast, fold_concat, fold_slice, wrap
from p4kit.compiler.diagnostics import CompileError
from p4kit.compiler.frontend import frontend

B8 = T.BitsType(8)
S8 = T.BitsType(8, True)


def test_wrap_unsigned_and_signed():
    assert wrap(256, B8) == 0
    assert wrap(-1, B8) == 255
    assert wrap(128, S8) == -128
    assert wrap(-129, S8) == 127
    assert wrap(10**30, T.IntType()) == 10**30


@pytest.mark.parametrize(
    ("op", "a", "b", "t", "want"),
    [
        ("+", 250, 10, B8, 4),
        ("-", 3, 5, B8, 254),
        ("*", 16, 17, B8, 16),
        ("|+|", 250, 10, B8, 255),
        ("|-|", 3, 5, B8, 0),
        ("|+|", 120, 10, S8, 127),
        ("|-|", -120, 10, S8, -128),
        ("<<", 1, 8, B8, 0),
        ("<<", 1, 7, B8, 128),
        (">>", -128, 1, S8, -64),
        (">>", 128, 1, B8, 64),
        ("/", 7, 2, T.IntType(), 3),
        ("%", 7, 2, B8, 1),
        ("&", 0xF0, 0x3C, B8, 0x30),
        ("|", 0xF0, 0x0F, B8, 0xFF),
        ("^", 0xFF, 0x0F, B8, 0xF0),
        ("==", 3, 3, B8, True),
        ("<", -1, 0, S8, True),
    ],
)
def test_fold_binary(op, a, b, t, want):
    assert fold_binary(op, a, b, t) == want


def test_division_by_zero_is_an_error():
    with pytest.raises(ConstEvalError):
        fold_binary("/", 1, 0, B8)


def test_concat_slice_and_cast():
    assert fold_concat(0xA, 4, 0x5, 4, False) == 0xA5
    assert fold_concat(-1, 4, 0, 4, True) == -16  # int<8> 0xF0
    assert fold_slice(0xABCD, 11, 4) == 0xBC
    assert fold_cast(300, T.IntType(), B8) == 44
    assert fold_cast(-1, S8, B8) == 255
    assert fold_cast(1, T.BitsType(1), T.BoolType()) is True


@given(st.integers(min_value=-(2**40), max_value=2**40), st.integers(min_value=1, max_value=64))
def test_wrap_is_modular(v, w):
    t = T.BitsType(w)
    assert 0 <= wrap(v, t) < 2**w and (wrap(v, t) - v) % 2**w == 0
    s = T.BitsType(w, True)
    assert -(2 ** (w - 1)) <= wrap(v, s) < 2 ** (w - 1) and (wrap(v, s) - v) % 2**w == 0


@given(st.integers(0, 255), st.integers(0, 255))
def test_addition_matches_modular_arithmetic(a, b):
    assert fold_binary("+", a, b, B8) == (a + b) % 256


def consts(tmp_path: Path, decls: str) -> dict[str, object]:
    path = tmp_path / "c.p4"
    path.write_text("#include <core.p4>\n" + decls)
    prog = frontend(path)
    return {
        d.name: d.const_value for d in prog.decls if isinstance(d, ast.ConstDecl) and d.loc.file == str(path)
    }


def test_const_declarations_fold(tmp_path):
    got = consts(
        tmp_path,
        """
        const bit<8> A = 8w1 << 3;
        const int B = (1 << 40) + 2;
        const bit<16> C = A ++ 8w0 == 16w0x0800 ? 16w1 : 16w2;
        const int<8> D = -8s128 - 1;
        const bit<4> E = 0xABCD[7:4];
        const bool F = !(A > 8) || false;
        const bit<8> G = 8w250 |+| 10;
        const bit<32> H = (bit<32>)(A * 2);
        enum bit<8> En { X = 1 << 2, Y = 7 }
        const En I = En.X;
        """,
    )
    assert got == {
        "A": 8,
        "B": 2**40 + 2,
        "C": 1,
        "D": 127,
        "E": 0xC,
        "F": True,
        "G": 255,
        "H": 16,
        "I": 4,
    }


def test_widths_use_constants(tmp_path):
    path = tmp_path / "w.p4"
    path.write_text("const int W = 12;\nheader h { bit<W> a; bit<(W * 2)> b; int<W> c; }\n")
    prog = frontend(path)
    h = prog.decls[-1]
    assert [f.type for f in h.type.fields] == [T.BitsType(12), T.BitsType(24), T.BitsType(12, True)]


def test_non_constant_initializer_is_an_error(tmp_path):
    path = tmp_path / "e.p4"
    path.write_text("extern bit<8> f();\nconst bit<8> X = f();\n")
    with pytest.raises(CompileError, match="compile-time constant"):
        frontend(path)


def test_fields_of_constant_structs_and_tuples_fold(tmp_path):
    got = consts(
        tmp_path,
        """
        struct T { int<32> t1; int<32> t2; }
        struct S<X> { X s1; X s2; }
        const T t = { 32s10, 32s20 };
        const S<T> s = { { 32s15, 32s25 }, t };
        const int<32> x = s.s1.t1;
        const int<32> w = .t.t2;
        const tuple<bit<8>, bool> tp = { 1, true };
        const bool b = tp[1];
        """,
    )
    assert (got["x"], got["w"], got["b"]) == (15, 20, True)
