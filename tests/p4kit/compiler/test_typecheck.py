"""Front end: name resolution, type inference and checking, and the annotations the back end relies on."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4kit.compiler import ast
from p4kit.compiler import types as T  # noqa: N812
from p4kit.compiler.diagnostics import CompileError
from p4kit.compiler.frontend import frontend

PROGRAMS = sorted((Path(__file__).resolve().parents[1] / "programs").glob("*.p4"))

PRELUDE = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; bit<32> c; }
struct H { h_t h; h_t[3] hs; }
struct M { bit<8> x; bit<16> y; int<8> s; bool f; }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
"""

MAIN = "V1Switch(P(), V(), I(), E(), V(), D()) main;\n"


def check_src(tmp_path: Path, ingress: str, top: str = "", egress: str = "apply { }") -> ast.Program:
    """Check a v1model program whose ingress control has the body `ingress`."""
    src = (
        PRELUDE
        + top
        + "\ncontrol I(inout H hdr, inout M m, inout standard_metadata_t sm) {\n"
        + ingress
        + "\n}\ncontrol E(inout H hdr, inout M m, inout standard_metadata_t sm) {\n"
        + egress
        + "\n}\n"
        + MAIN
    )
    path = tmp_path / "prog.p4"
    path.write_text(src)
    return frontend(path)


def ingress_apply(prog: ast.Program) -> list:
    ctl = prog.find("I")
    assert isinstance(ctl, ast.ControlDecl)
    return ctl.body.stmts


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_sample_programs_check(path):
    prog = frontend(path)
    assert isinstance(prog.main, ast.Instantiation)


def test_literals_take_the_width_of_the_other_operand(tmp_path):
    prog = check_src(tmp_path, "apply { m.y = m.y + 1; m.x = 2 + 3; hdr.h.a = hdr.h.a << 1; }")
    s1, s2, s3 = ingress_apply(prog)
    assert s1.rhs.type == T.BitsType(16) and s1.rhs.right.type == T.BitsType(16)
    assert s2.rhs.type == T.BitsType(8) and s2.rhs.const_value == 5
    assert s3.rhs.type == T.BitsType(8) and s3.rhs.right.type == T.IntType()


def test_names_resolve_to_declarations(tmp_path):
    prog = check_src(
        tmp_path,
        """
        bit<8> tmp = 3;
        const bit<8> K = 7;
        action a(bit<8> v) { m.x = v + K + tmp; }
        table t { key = { m.x: exact; } actions = { a; } }
        apply { t.apply(); a(1); }
        """,
    )
    ctl = prog.find("I")
    act = ctl.locals[2]
    rhs = act.body.stmts[0].rhs
    assert isinstance(rhs.left.left.decl, ast.Parameter)
    assert isinstance(rhs.left.right.decl, ast.ConstDecl) and rhs.left.right.const_value == 7
    assert isinstance(rhs.right.decl, ast.VariableDecl)
    call_t, call_a = (s.call for s in ctl.body.stmts)
    assert call_t.call.kind == "table_apply" and call_t.call.decl is ctl.locals[3]
    assert call_a.call.kind == "action" and call_a.call.decl is act
    assert call_a.args[0].value.type == T.BitsType(8)


def test_extern_generic_methods_are_inferred(tmp_path):
    prog = check_src(
        tmp_path,
        """
        register<bit<32>>(16) r;
        apply {
            bit<32> v;
            r.read(v, 2);
            r.write(1, v + 1);
            hash(m.y, HashAlgorithm.crc16, 16w0, { hdr.h.a, hdr.h.b }, 32w1024);
            mark_to_drop(sm);
        }
        """,
    )
    stmts = ingress_apply(prog)
    read = stmts[1].call.call
    assert read.kind == "extern_method" and read.decl.name == "read" and read.extern.name == "register"
    assert read.params[0].type == T.BitsType(32) and read.args[1].type == T.BitsType(32)
    write = stmts[2].call.call
    assert write.args[1].type == T.BitsType(32)
    h = stmts[3].call.call
    assert h.kind == "extern_function" and h.type_bindings["O"] == T.BitsType(16)
    assert isinstance(h.type_bindings["D"], T.TupleType)
    drop = stmts[4].call.call
    assert drop.kind == "extern_function" and len(drop.params) == 1
    inst = prog.find("I").locals[0]
    assert isinstance(inst.type, T.ExternType) and inst.type.type_args == (T.BitsType(32),)


def test_table_properties_are_evaluated(tmp_path):
    prog = check_src(
        tmp_path,
        """
        const bit<32> N = 64;
        action a(bit<8> v) { m.x = v; }
        table t {
            key = { m.x: exact; m.y: ternary; }
            actions = { a; NoAction; }
            default_action = a(3);
            size = N * 2;
            const entries = {
                (1, 0x10 &&& 0xf0) : a(5);
                (_, _) : NoAction();
            }
        }
        apply { t.apply(); }
        """,
    )
    t = prog.find("I").locals[2]
    assert t.size_value == 128
    assert t.default_action.call.call.args[0].type == T.BitsType(8)
    e0 = t.entries[0]
    assert e0.keys[0].type == T.BitsType(8) and e0.keys[1].type == T.SetType(T.BitsType(16))
    assert e0.action.action is prog.find("I").locals[1]


def test_switch_on_action_run_and_hit(tmp_path):
    prog = check_src(
        tmp_path,
        """
        action a() { }
        action b() { }
        table t { key = { m.x: exact; } actions = { a; b; } }
        apply {
            switch (t.apply().action_run) { a: b: { m.x = 1; } default: { } }
            if (t.apply().hit) { m.x = 2; }
        }
        """,
    )
    sw, iff = ingress_apply(prog)
    assert isinstance(sw.expr.type, T.ActionEnumType)
    assert sw.cases[0].label.decl is prog.find("I").locals[0]
    assert iff.cond.type == T.BoolType() and iff.cond.kind == "apply_result"


def test_enums_errors_and_serializable_enums(tmp_path):
    prog = check_src(
        tmp_path,
        "apply { if (sm.parser_error == error.PacketTooShort) { m.x = (bit<8>)SE.B; } C c = C.Y; }",
        top="enum bit<8> SE { A = 1, B = 0x20 }\nenum C { X, Y }\n",
    )
    iff, decl = ingress_apply(prog)
    assert iff.cond.right.kind == "error_member"
    inner = iff.then.stmts[0].rhs
    assert inner.const_value == 0x20 and inner.expr.kind == "enum_member"
    assert isinstance(decl.init.type, T.EnumType) and decl.init.kind == "enum_member"


def test_struct_initializers_take_their_type_from_context(tmp_path):
    prog = check_src(
        tmp_path,
        "apply { S s = { 1, 2 }; s = { a = 3, b = 4 }; s = S { a = 5, b = 6 }; hdr.h = { 1, 2, 3 }; }",
        top="struct S { bit<8> a; bit<4> b; }\n",
    )
    decl, s1, s2, s3 = ingress_apply(prog)
    assert isinstance(decl.init.type, T.StructType) and decl.init.elems[1].type == T.BitsType(4)
    assert isinstance(s1.rhs.type, T.StructType) and s1.rhs.fields[1].value.type == T.BitsType(4)
    assert s2.rhs.type.name == "S"
    assert isinstance(s3.rhs.type, T.HeaderType)


def test_header_stack_operations(tmp_path):
    prog = check_src(
        tmp_path,
        "apply { hdr.hs[0].setValid(); hdr.hs.push_front(1); hdr.hs.pop_front(2); m.x = hdr.hs.size; }",
    )
    sv, push, pop, size = ingress_apply(prog)
    assert sv.call.call.kind == "builtin" and sv.call.call.name == "setValid"
    assert push.call.call.name == "push_front"
    assert pop.call.call.name == "pop_front"
    assert size.rhs.const_value == 3


def test_constants_widths_and_casts_fold(tmp_path):
    prog = check_src(
        tmp_path,
        "apply { bit<W> v = (bit<W>)(8w1 << 3); m.s = -1; m.x = (bit<8>)m.s; m.x = 8w255 + 1; }",
        top="const int W = 4 * 2 + 4;\n",
    )
    v, s, _x1, x2 = ingress_apply(prog)
    assert v.type == T.BitsType(12) and v.init.const_value == 8
    assert s.rhs.type == T.BitsType(8, True) and s.rhs.const_value == -1
    assert x2.rhs.const_value == 0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("apply { m.x = m.y; }", r"type mismatch.*bit<16>.*bit<8>"),
        ("apply { m.x = nope; }", r"unknown name 'nope'"),
        ("register<bit<8>>(4) r; apply { r.read(m.x); }", r"wrong number of arguments"),
        ("register<bit<8>>(4) r; apply { r.read(5, 0); }", r"l-value"),
        ("action a() {} action a() {} apply { }", r"duplicate declaration of 'a'"),
        ("table t { key = { m.x: exact; } actions = { NoAction; } } action a() { t.apply(); } apply { a(); }",
         r"cannot be applied inside an action"),
        ("action a(in bit<8> v) { v = 1; } apply { a(m.x); }", r"'in' parameter"),
        ("apply { if (m.x) { } }", r"must be a bool"),
        ("apply { m.x = m.x + m.y; }", r"type mismatch"),
        ("apply { m.x = 8w1 ++ 1; }", r"known width"),
        ("apply { m.x = hdr.h.a[8:1]; }", r"out of the bounds"),
        ("apply { hdr.h.zz = 1; }", r"has no field 'zz'"),
        ("apply { m.x = (bit<8>)hdr.h; }", r"cannot cast"),
        ("table t { key = { m.x: fuzzy; } actions = { NoAction; } } apply { }", r"unknown match kind"),
        ("action a() {} table t { key = { m.x: exact; } actions = { NoAction; } default_action = a(); } apply { }",
         r"not in the actions list"),
        ("apply { m.x = m.x / m.x; }", r"division"),
    ],
)  # fmt: skip
def test_errors_are_reported_with_their_location(tmp_path, body, message):
    with pytest.raises(CompileError, match=message) as ei:
        check_src(tmp_path, body)
    assert ei.value.loc is not None and ei.value.loc.file.endswith("prog.p4")
    assert ei.value.loc.line > PRELUDE.count("\n")


def test_direct_application_and_loops(tmp_path):
    prog = check_src(
        tmp_path,
        """
        action a() {
            for (bit<8> i = 0; i < m.x; i = i + 1) { m.y = m.y + 1; if (i == 3) { break; } }
            for (bit<8> k in 1 .. 4) { m.x = m.x + k; }
        }
        apply { Sub.apply(m); a(); }
        """,
        top="control Sub(inout M mm) { apply { mm.x = 1; } }\n",
    )
    call = ingress_apply(prog)[0].call.call
    # the direct application got an implicit instance, declared in the enclosing control
    assert call.kind == "control_apply" and isinstance(call.decl, ast.Instantiation)
    assert call.decl.name == "Sub_inst" and call.decl in prog.find("I").locals
    assert call.decl.type.decl is prog.find("Sub")
    loop = prog.find("I").locals[0].body.stmts[0]
    assert loop.cond.type == T.BoolType() and loop.init[0].type == T.BitsType(8)


def test_break_outside_loop_is_an_error(tmp_path):
    with pytest.raises(CompileError, match="'break' outside a loop"):
        check_src(tmp_path, "apply { break; }")


def test_widening_on_assignment_needs_a_cast_as_in_p4c(tmp_path):
    with pytest.raises(CompileError, match=r"bit<16> cannot be implicitly cast to type bit<32>"):
        check_src(tmp_path, "apply { hdr.h.c = hdr.h.b + 1; }")
    prog = check_src(tmp_path, "apply { hdr.h.c = (bit<32>)hdr.h.b + 1; }")
    rhs = ingress_apply(prog)[0].rhs
    assert rhs.type == T.BitsType(32) and isinstance(rhs.left, ast.Cast)


def test_constructor_calls_record_their_arguments(tmp_path):
    prog = check_src(
        tmp_path,
        "Cnt(16) cnt; apply { cnt.apply(m); }",
        top="control Cnt(inout M mm)(bit<32> n) { counter(n, CounterType.packets) c; apply { c.count(0); } }\n",
    )
    inst = prog.find("I").locals[0]
    assert inst.ctor_call.kind == "constructor" and inst.ctor_call.args[0].const_value == 16
    counter = prog.find("Cnt").locals[0]
    assert counter.ctor_call.decl is counter.ctor and counter.ctor_call.args[0].decl.name == "n"
    assert prog.main.ctor_call.params[0].name == "p"


def test_cast_of_an_initializer_becomes_the_typed_initializer(tmp_path):
    prog = check_src(tmp_path, "apply { hdr.h = (h_t){ a = 1, b = 2, c = 3 }; }")
    rhs = ingress_apply(prog)[0].rhs
    assert isinstance(rhs, ast.StructExpression) and isinstance(rhs.type, T.HeaderType)
    assert rhs.fields[2].value.type == T.BitsType(32)


def test_generic_parameters_bound_only_by_literals_are_an_error(tmp_path):
    # p4c: "0: could not infer a width" -- a type parameter needs a width, an unsized literal has none
    with pytest.raises(CompileError, match=r"could not infer a width .* 'base' .* type parameter T"):
        check_src(tmp_path, "apply { hash(m.y, HashAlgorithm.crc16, 0, { hdr.h.a }, 1024); }")
    prog = check_src(tmp_path, "apply { hash(m.y, HashAlgorithm.crc16, 16w0, { hdr.h.a }, 32w1024); }")
    info = ingress_apply(prog)[0].call.call
    assert info.type_bindings["O"] == T.BitsType(16) and info.type_bindings["T"] == T.BitsType(16)
    assert info.type_bindings["M"] == T.BitsType(32)


def test_static_assert_is_evaluated(tmp_path):
    check_src(tmp_path, "apply { }", top="const bool ok = static_assert(8w1 + 1 == 2);\n")
    with pytest.raises(CompileError, match="static assertion failed: too small"):
        check_src(tmp_path, "apply { }", top='const bool ok = static_assert(1 > 2, "too small");\n')


def test_a_table_may_shadow_a_parameter_of_its_control(tmp_path):
    """p4c only warns when a table is named like a parameter (issue2267): uses in the apply block
    are the table, and the parameter stays reachable nowhere else by that name."""
    prog = check_src(
        tmp_path,
        """
        action fwd(bit<9> p) { sm.egress_spec = p; }
        table m { key = { hdr.h.a: exact; } actions = { fwd; NoAction; } }
        apply { m.apply(); }
        """,
    )
    (call,) = ingress_apply(prog)
    assert isinstance(call.call.method.expr.decl, ast.TableDecl)


def test_other_locals_named_like_a_parameter_stay_refused(tmp_path):
    with pytest.raises(CompileError, match="duplicate declaration of 'm'"):
        check_src(tmp_path, "bit<8> m = 1; apply { }")


def test_list_types_take_a_typed_or_an_untyped_list(tmp_path):
    """list<T> (P4_16 v1.2.3): `(list<T>){...}` and a plain `{...}` both become a list<T> of
    extern constructor arguments; each element takes T's width."""
    prog = check_src(
        tmp_path,
        """
        Fixed((list<bit<32>>){2, 3, 4}) a;
        Fixed({5, 6}) b;
        apply { }
        """,
        top="extern Fixed { Fixed(list<bit<32>> values); }\n",
    )
    ctl = prog.find("I")
    a, b = ctl.locals
    for inst, n in ((a, 3), (b, 2)):
        (arg,) = inst.ctor_call.args
        assert str(arg.type) == "list<bit<32>>" and len(arg.elems) == n
        assert all(x.type == T.BitsType(32) for x in arg.elems)


def test_a_list_variable_is_refused_as_unsupported_and_a_variable_may_be_named_list(tmp_path):
    with pytest.raises(CompileError, match=r"unsupported: variables of type list<bit<8>>"):
        check_src(tmp_path, "apply { list<bit<8>> l = {1, 2}; }")
    prog = check_src(tmp_path, "apply { bit<8> list = 1; m.x = list; }")
    assert ingress_apply(prog)[1].rhs.decl.name == "list"
