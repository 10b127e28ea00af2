"""Front end: the parser (syntax only), its type-name handling, literals, annotations and error messages."""

from __future__ import annotations

import time

import pytest

from p4kit.compiler import ast
from p4kit.compiler.diagnostics import CompileError, SourceMap
from p4kit.compiler.frontend import parse


def parse_text(text: str) -> ast.Program:
    return parse(SourceMap.from_preprocessed(text, "t.p4"))


def first_expr(src: str, prelude: str = "") -> ast.Expression:
    """The right-hand side of the single assignment in `src` (an action body)."""
    prog = parse_text(prelude + "action a() { " + src + " }")
    act = prog.decls[-1]
    assert isinstance(act, ast.ActionDecl)
    st = act.body.stmts[0]
    assert isinstance(st, ast.AssignmentStatement)
    return st.rhs


def test_declarations_of_every_kind():
    src = """
    const bit<8> C = 1;
    typedef bit<48> mac_t;
    type bit<32> ip_t;
    error { E1, E2 }
    match_kind { mk }
    enum Color { RED, GREEN }
    enum bit<8> P { TCP = 6, UDP = 17 }
    header h_t { bit<8> a; varbit<32> v; }
    header_union u_t { h_t h; }
    struct S<T> { T x; }
    extern E<T> { E(bit<32> n); T get<U>(in U u); abstract void cb(); }
    extern void f<T>(out T x);
    extern T g<T>(in T x);
    parser PT<H>(out H h);
    control CT<H>(inout H h);
    package Pkg<H>(PT<H> p, CT<H> c);
    bit<8> fn(in bit<8> x) { return x; }
    action act(inout bit<8> x, bit<8> y) { x = y; }
    """
    kinds = [type(d).__name__ for d in parse_text(src).decls]
    assert kinds == [
        "ConstDecl", "TypedefDecl", "TypedefDecl", "ErrorDecl", "MatchKindDecl", "EnumDecl", "EnumDecl",
        "StructLikeDecl", "StructLikeDecl", "StructLikeDecl", "ExternDecl", "ExternFunctionDecl",
        "ExternFunctionDecl", "ParserTypeDecl", "ControlTypeDecl", "PackageTypeDecl", "FunctionDecl",
        "ActionDecl",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "value", "width", "signed"),
    [
        ("8w5", 5, 8, False),
        ("8s5", 5, 8, True),
        ("0x1F", 31, None, False),
        ("0X1f", 31, None, False),
        ("0o17", 15, None, False),
        ("0b1010", 10, None, False),
        ("0d99", 99, None, False),
        ("1_000", 1000, None, False),
        ("16w0xFF_FF", 65535, 16, False),
        ("1w0", 0, 1, False),
        ("4w0b1_0_1", 5, 4, False),
    ],
)
def test_integer_literals(text, value, width, signed):
    e = first_expr(f"x = {text};")
    assert isinstance(e, ast.Constant)
    assert (e.value, e.width, e.signed) == (value, width, signed)


def test_operator_precedence_follows_p4():
    # in P4, & binds tighter than == (unlike C)
    e = first_expr("x = a & b == c;")
    assert isinstance(e, ast.BinaryOp) and e.op == "=="
    assert isinstance(e.left, ast.BinaryOp) and e.left.op == "&"
    e = first_expr("x = a + b << 2 | c;")
    assert e.op == "|" and e.left.op == "<<" and e.left.left.op == "+"
    e = first_expr("x = a || b && c ? d : e;")
    assert isinstance(e, ast.Mux) and e.cond.op == "||"
    e = first_expr("x = a |+| b ++ c |-| d;")
    assert e.op == "|-|"


def test_right_shift_versus_nested_generics():
    e = first_expr("x = a >> 2;")
    assert isinstance(e, ast.BinaryOp) and e.op == ">>"
    e = first_expr("x = a > > 2;") if False else first_expr("x = a > b;")
    assert e.op == ">"
    prog = parse_text("extern R<T> { R(bit<32> s); } control c() { R<bit<32>>(4) r; apply {} }")
    inst = prog.decls[1].locals[0]
    assert isinstance(inst, ast.Instantiation)
    assert isinstance(inst.type_ref, ast.SpecializedTypeRef)


def test_type_names_versus_identifiers():
    pre = "typedef bit<8> T; struct S { bit<8> f; } extern bit<8> f<X>(in X x);"
    # a < b > c is a comparison chain when b is not a type
    e = first_expr("x = a < b > c;", pre)
    assert isinstance(e, ast.BinaryOp) and e.op == ">"
    # (T) e is a cast because T is a type; (a) - b is a subtraction
    e = first_expr("x = (T) y;", pre)
    assert isinstance(e, ast.Cast)
    e = first_expr("x = (a) - b;", pre)
    assert isinstance(e, ast.BinaryOp) and e.op == "-"
    # generic call
    e = first_expr("x = f<bit<8>>(y);", pre)
    assert isinstance(e, ast.MethodCallExpression) and len(e.type_args) == 1
    # struct expression with a type name
    e = first_expr("x = S { f = 1 };", pre)
    assert isinstance(e, ast.StructExpression) and e.type_ref is not None


def test_a_parameter_may_shadow_a_type_name():
    prog = parse_text("struct meta { bit<8> x; } action a(inout meta meta) { meta.x = 1; }")
    st = prog.decls[1].body.stmts[0]
    assert isinstance(st, ast.AssignmentStatement)


def test_expressions_of_every_kind():
    e = first_expr("x = h.s[3].f[7:0];")
    assert isinstance(e, ast.Slice) and isinstance(e.expr, ast.Member)
    e = first_expr("x = {a, b, 8w1};")
    assert isinstance(e, ast.ListExpression) and len(e.elems) == 3
    e = first_expr("x = {f = 1, g = 2};")
    assert isinstance(e, ast.StructExpression) and [f.name for f in e.fields] == ["f", "g"]
    e = first_expr("x = error.NoError;")
    assert isinstance(e, ast.Member) and isinstance(e.expr, ast.TypeNameExpression)
    e = first_expr("x = t.apply().hit;")
    assert isinstance(e, ast.Member) and isinstance(e.expr, ast.MethodCallExpression)
    e = first_expr("x = -8s1;")
    assert isinstance(e, ast.UnaryOp) and e.op == "-"
    e = first_expr("x = .glob;")
    assert isinstance(e, ast.PathExpression) and e.is_global
    e = first_expr("x = {#};")
    assert isinstance(e, ast.InvalidHeaderExpression)


def test_annotations_structured_unstructured_and_pragma():
    src = """
    @name("ingress.t") @id(0x01000001) @hidden @a[k = 1, v = "s"] @b[1, 2]
    @pragma my_pragma 1 2
    action x() {}
    """
    act = parse_text(src).decls[0]
    names = [a.name for a in act.annotations]
    assert names == ["name", "id", "hidden", "a", "b", "my_pragma"]
    name = act.annotations[0]
    assert name.body == '"ingress.t"' and isinstance(name.args[0], ast.StringLiteral)
    assert act.control_plane_name() == "ingress.t"
    assert act.annotations[1].args[0].value == 0x01000001
    assert act.annotations[3].structured and set(act.annotations[3].kv) == {"k", "v"}
    assert act.annotations[5].body == "1 2"


def test_unstructured_annotation_body_with_arbitrary_tokens():
    act = parse_text('@weird(a + : ; "x" {) action x() {}').decls[0]
    assert act.annotations[0].body == 'a + : ; "x" {'
    assert act.annotations[0].args is None


def test_parser_states_and_select():
    src = """
    extern packet_in { }
    parser p(packet_in b, out bit<8> h) {
        value_set<bit<16>>(4) vs;
        state start {
            transition select(a, b) {
                (1 &&& 0xf, 2 .. 5): s1;
                (vs, _): accept;
                default: reject;
            }
        }
        state s1 { transition accept; }
    }
    """
    p = parse_text(src).decls[1]
    assert isinstance(p, ast.ParserDecl)
    sel = p.states[0].transition
    assert isinstance(sel, ast.SelectExpression)
    k0 = sel.cases[0].keyset
    assert isinstance(k0, ast.ListExpression)
    assert [e.op for e in k0.elems] == ["&&&", ".."]
    assert isinstance(sel.cases[2].keyset, ast.DefaultExpression)
    assert isinstance(p.locals[0], ast.ValueSetDecl)


def test_tables_with_all_properties():
    src = """
    control c() {
        action a(bit<8> v) {}
        table t {
            key = { x : exact @name("k"); y : ternary; }
            actions = { a; @defaultonly NoAction; }
            const default_action = NoAction();
            size = 1024;
            implementation = ap;
            support_timeout = true;
            my_prop = { 1, 2 };
            const entries = {
                (1, _) : a(1);
                priority = 3 : (2, 0 &&& 1) : a(2);
                @priority(7) (3, 4) : a(3);
            }
        }
        apply { switch (t.apply().action_run) { a: NoAction: { } default: { exit; } } }
    }
    """
    c = parse_text(src).decls[0]
    t = c.locals[1]
    assert isinstance(t, ast.TableDecl)
    assert [k.match_kind for k in t.keys] == ["exact", "ternary"]
    assert [r.expr.name for r in t.actions] == ["a", "NoAction"]
    assert t.default_action_const and t.entries_const
    assert [p.name for p in t.properties][-4:] == ["implementation", "support_timeout", "my_prop", "entries"]
    assert len(t.entries) == 3 and isinstance(t.entries[1].priority, ast.Constant)
    sw = c.body.stmts[0]
    assert isinstance(sw, ast.SwitchStatement)
    assert sw.cases[0].body is None and sw.cases[1].body is not None


def test_syntax_error_says_what_was_found_and_expected():
    with pytest.raises(CompileError) as ei:
        parse_text("action a() {\n  x = 1\n}\n")
    err = ei.value
    assert "unexpected '}'" in err.message and "expected ';'" in err.message
    assert (err.loc.line, err.loc.col) == (3, 1)


def test_syntax_error_location_maps_through_linemarkers():
    text = '# 1 "main.p4"\n# 10 "inc.p4" 1\nconst bit<8> x = ;\n'
    with pytest.raises(CompileError) as ei:
        parse(SourceMap.from_preprocessed(text, "main.p4"))
    assert str(ei.value.loc) == "inc.p4:10:18"


def test_unknown_type_in_declaration_is_reported_by_name():
    with pytest.raises(CompileError, match="unknown type 'ghost_t'"):
        parse_text("action a() { ghost_t tmp; }")


def test_large_program_parses_fast():
    parts = ["header h_t { bit<8> a; bit<16> b; }", "struct H { h_t h; }", "control c(inout H hdr) {"]
    for i in range(250):
        parts.append(
            f"  action a{i}(bit<8> v) {{\n    hdr.h.a = v + {i};\n    hdr.h.b = (bit<16>)hdr.h.a << 2;\n  }}\n"
            f"  table t{i} {{\n    key = {{ hdr.h.a: exact; }}\n    actions = {{ a{i}; }}\n    size = {i + 1};\n  }}"
        )
    parts.append("  apply {")
    parts += [f"    if (hdr.h.a == {i}) {{ t{i}.apply(); }}" for i in range(250)]
    parts.append("  }\n}")
    text = "\n".join(parts)
    assert text.count("\n") > 2000
    start = time.perf_counter()
    prog = parse_text(text)
    assert time.perf_counter() - start < 2.0
    assert len(prog.decls[-1].locals) == 500


def test_compound_assignments_desugar():
    prog = parse_text("action a() { x += 1; x <<= 2; x >>= 1; x |+|= 3; x[3:0] &= 4w1; }")
    ops = [st.rhs.op for st in prog.decls[0].body.stmts]
    assert ops == ["+", "<<", ">>", "|+|", "&"]
    st = prog.decls[0].body.stmts[0]
    assert st.rhs.left is not st.lhs and isinstance(st.rhs.left, ast.PathExpression)


def test_loops_parse():
    src = """
    action a() {
        for (bit<8> i = 0; i < 4; i = i + 1) { if (i == 2) { break; } continue; }
        for (bit<8> k in 0 .. 7) { x = k; }
        for (;;) { break; }
    }
    """
    stmts = parse_text(src).decls[0].body.stmts
    assert isinstance(stmts[0], ast.ForStatement) and isinstance(stmts[0].init[0], ast.VariableDecl)
    assert isinstance(stmts[1], ast.ForInStatement) and stmts[1].collection.op == ".."
    assert stmts[2].cond is None


def test_old_style_table_parentheses_and_forward_extern():
    prog = parse_text("extern Fwd; control c() { table t() { actions = { } } apply { } }")
    assert isinstance(prog.decls[0].locals[0], ast.TableDecl)
