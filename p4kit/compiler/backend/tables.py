"""P4 tables -> BMv2 match-action tables (keys, actions, default entry, const entries, action
profiles/selectors, direct counters and meters) and their control-plane description.

Keys BMv2 can match on are fields (optionally under a constant mask) and header validity; any other
key expression is computed into a `scalars` temporary just before the table, as p4c does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4kit.compiler import ast
from p4kit.compiler import types as T  # noqa: N812
from p4kit.compiler.backend import externs
from p4kit.compiler.backend import values as V  # noqa: N812
from p4kit.compiler.backend.context import Ctx, Scope, cp_annotations, source_info, unsupported
from p4kit.compiler.backend.expressions import ExprLowering
from p4kit.compiler.backend.statements import lower_body
from p4kit.compiler.backend.storage import ActionLoc, ExternLoc, FieldLoc, HeaderLoc, Loc, TableLoc, bits
from p4kit.compiler.backend.text import expr_text
from p4kit.compiler.cpmodel import CPActionProfile, CPActionRef, CPAnnotation, CPMatchField, CPTable
from p4kit.compiler.diagnostics import CompileError

JSON = dict[str, Any]
DEFAULT_SIZE = 1024


def lower_action(
    ctx: Ctx,
    aloc: ActionLoc,
    bound: list[ast.Expression | None] | None = None,
    bound_scope: Scope | None = None,
    exit_hooks: list[Any] | None = None,
) -> int:
    """The JSON action for an action declaration in one control instance (created once).

    `bound` are arguments in parameter order for the directional parameters, as in
    `actions = { my_drop(standard_metadata); }`; they are evaluated in `bound_scope` (the table's)."""
    decl: ast.ActionDecl = aloc.decl
    bound = bound or []
    bound_text = tuple(
        expr_text(bound[i]) if i < len(bound) and bound[i] is not None else ""
        for i, p in enumerate(decl.params)
        if p.direction
    )
    key = (id(decl), aloc.scope.prefix if aloc.scope is not None else "", *bound_text)
    if key in ctx.action_ids:
        return ctx.action_ids[key]
    scope = (aloc.scope or Scope()).child()
    runtime_data: list[JSON] = []
    cparams = []
    for i, p in enumerate(decl.params):
        if p.direction != "":
            a = bound[i] if i < len(bound) else None
            if a is None:
                raise unsupported(f"action {decl.name} has a directional parameter and is used by a table", p)
            scope.bind(p, ExprLowering(ctx, bound_scope or scope).loc(a))
            continue
        assert p.type is not None
        from p4kit.compiler.backend.storage import ValueLoc

        scope.bind(p, ValueLoc({"type": "runtime_data", "value": len(runtime_data)}, p.type))
        runtime_data.append({"name": p.name, "bitwidth": bits(p.type)})
        cparams.append(p)

    def fill(sl: Any) -> None:
        # an exit in the action also copies out the arguments of the sub-controls it runs in
        sl.exit_hooks = list(exit_hooks or [])
        sl.stmt(decl.body)

    _, prims = lower_body(ctx, scope, fill)
    aid = ctx.out.add_action(aloc.name, runtime_data, prims)
    ctx.action_ids[key] = aid
    ctx.action_names[aid] = aloc.name
    hidden = ast.find_annotation(decl.annotations, "hidden") is not None
    ctx.add_cp_action(aloc.name, decl, cparams, hidden)
    return aid


def action_data(
    ctx: Ctx, decl: ast.ActionDecl, args: list[ast.Expression | None], node: ast.Node
) -> list[str]:
    """Constant arguments of a default or entry action, as BMv2 wants them (hexstr per parameter)."""
    out = []
    # arguments line up with the parameters from the first one (directional parameters come first)
    pairs = [(p, a) for p, a in zip(decl.params, args, strict=False) if p.direction == ""]
    for p, a in pairs:
        if a is None or not isinstance(a.const_value, (int, bool)):
            if isinstance(a, ast.Member) and a.kind in ("enum_member", "error_member"):
                ex = ExprLowering(ctx, Scope())
                out.append(ex.value(a)["value"])
                continue
            raise unsupported("a non-constant action argument here", a or node)
        assert p.type is not None
        out.append(V.hexstr_text(int(a.const_value), bits(p.type)))
    return out


def ref_args(ref: ast.ActionRef) -> list[ast.Expression | None]:
    if ref.call is not None and ref.call.call is not None:
        return list(ref.call.call.args)
    return [a.value for a in (ref.args or [])]


@dataclass
class TableResult:
    json: JSON
    pre: list[tuple[Loc, ast.Expression]] = field(default_factory=list)  # key temporaries to compute first
    action_names: dict[int, str] = field(default_factory=dict)  # id(ActionDecl) -> JSON action name


@dataclass
class TableBuilder:
    ctx: Ctx
    pipeline_profiles: list[JSON]
    applied: set[int] = field(default_factory=set)
    profiles_made: dict[str, str] = field(default_factory=dict)
    # copy-outs an exit in a table's action runs (the sub-control applications around the table)
    exit_hooks: list[Any] = field(default_factory=list)

    def build(self, tloc: TableLoc, node: ast.Node) -> TableResult:
        decl: ast.TableDecl = tloc.decl
        if id(tloc) in self.applied:
            raise unsupported(f"table {tloc.name} applied more than once", node)
        self.applied.add(id(tloc))
        scope: Scope = tloc.scope
        ex = ExprLowering(self.ctx, scope)
        name = tloc.name
        res = TableResult({})
        cp = CPTable(name, annotations=cp_annotations(decl.annotations))
        keys: list[JSON] = []
        selector_inputs: list[JSON] = []
        kinds: list[str] = []
        for k in decl.keys:
            kname = ast.annotation_string(k.annotations, "name") or expr_text(k.expr)
            target, mask, width = self._key_target(ex, k.expr, res)
            if k.match_kind == "selector":
                selector_inputs.append(V.field(*target))
                continue
            mk = k.match_kind
            if mk not in ("exact", "lpm", "ternary", "range", "optional"):
                raise unsupported(f"match kind {k.match_kind}", k)
            kinds.append(mk)
            keys.append(
                {
                    "match_type": mk,
                    "name": kname,
                    "target": target,
                    "mask": None if mask is None else V.concat_padded([(mask, width)]),
                }
            )
            cp.match_fields.append(
                CPMatchField(kname, width, k.match_kind, cp_annotations([a for a in k.annotations]))
            )
        match_type = "exact"
        for m in ("range", "ternary", "lpm"):
            if m in kinds or (m == "ternary" and "optional" in kinds):
                match_type = m
                break
        # actions
        action_ids: list[int] = []
        names: list[str] = []
        refs = list(decl.actions)
        no_action = self.ctx.program.find("NoAction")
        add_noaction = (
            decl.default_action is None
            and isinstance(no_action, ast.ActionDecl)
            and not any(r.action is no_action for r in refs)
        )
        noaction_id: int | None = None  # the default when the table names none (P4: NoAction)
        for ref in refs:
            aid, aname = self._action(scope, ref.action, ref)
            if ref.action is no_action:
                noaction_id = aid
            action_ids.append(aid)
            names.append(aname)
            res.action_names[id(ref.action)] = aname
            scope_kind = "TABLE_AND_DEFAULT"
            if ast.find_annotation(ref.annotations, "defaultonly"):
                scope_kind = "DEFAULT_ONLY"
            elif ast.find_annotation(ref.annotations, "tableonly"):
                scope_kind = "TABLE_ONLY"
            cp.action_refs.append(CPActionRef(aname, scope_kind, cp_annotations(ref.annotations)))
        if add_noaction:
            aid, aname = self._action(scope, no_action, decl)
            action_ids.append(aid)
            names.append(aname)
            res.action_names[id(no_action)] = aname
            cp.action_refs.append(CPActionRef(aname, "DEFAULT_ONLY", [CPAnnotation("defaultonly")]))
            noaction_id = aid
        size = decl.size_value if decl.size_value is not None else DEFAULT_SIZE
        cp.size = size
        j: JSON = {"name": name, "id": self.ctx.out.next_id("table")}
        si = source_info(decl)
        if si:
            j["source_info"] = si
        j.update(
            {
                "key": keys,
                "match_type": match_type,
                "type": "simple",
                "max_size": size,
                "with_counters": False,
                "support_timeout": False,
                "direct_meters": None,
                "action_ids": action_ids,
                "actions": names,
                "base_default_next": None,
                "next_tables": {},
            }
        )
        self._properties(decl, scope, j, cp, selector_inputs, size)
        # default entry
        dref = decl.default_action
        if dref is not None:
            daid, _ = self._action(scope, dref.action, dref)
            j["default_entry"] = {
                "action_id": daid,
                "action_const": bool(decl.default_action_const),
                "action_data": action_data(self.ctx, dref.action, ref_args(dref), dref),
                "action_entry_const": bool(decl.default_action_const),
            }
            if decl.default_action_const:
                cp.const_default_action = self.ctx.action_names[daid]
        elif noaction_id is not None:
            # no default_action: NoAction, whether the actions list names it or not (without a
            # default entry, a miss would skip the `NoAction:` case of a switch on action_run)
            j["default_entry"] = {
                "action_id": noaction_id,
                "action_const": False,
                "action_data": [],
                "action_entry_const": False,
            }
        if decl.entries is not None:
            j["entries"] = self._entries(decl, scope, keys, match_type)
            cp.has_initial_entries = True
            cp.is_const_table = bool(decl.entries_const)
            if not decl.entries_const:
                # `entries` without const (P4 1.2.4): installed at load, but the control plane may add
                # entries and change or remove those not marked const (p4kit-switch reads the flag;
                # BMv2, which has no initial entries, keeps every JSON entry const)
                j["initial_entries"] = True
        self.ctx.cp.tables.append(cp)
        return TableResult(j, res.pre, res.action_names)

    def _action(self, scope: Scope, decl: Any, node: ast.Node) -> tuple[int, str]:
        aloc = scope.lookup(decl)
        if not isinstance(aloc, ActionLoc):
            raise unsupported("this table action", node)
        bound: list[ast.Expression | None] = []
        if isinstance(node, ast.ActionRef):
            bound = ref_args(node)
        elif isinstance(node, ast.Entry):
            bound = ref_args(node.action)
        aid = lower_action(self.ctx, aloc, bound, scope, self.exit_hooks)
        return aid, self.ctx.action_names[aid]

    def _key_target(
        self, ex: ExprLowering, e: ast.Expression, res: TableResult
    ) -> tuple[Any, int | None, int]:
        """(target, mask, width) of a key element; computes complex keys into temporaries."""
        if isinstance(e, ast.MethodCallExpression) and e.call is not None and e.call.kind == "builtin":
            if e.call.name == "isValid" and e.call.obj is not None:
                loc = ex.loc(e.call.obj)
                if isinstance(loc, HeaderLoc):
                    return [loc.name, "$valid$"], None, 1
        if isinstance(e, ast.BinaryOp) and e.op == "&" and isinstance(e.right.const_value, int):
            try:
                loc = ex.loc(e.left)
            except CompileError:
                loc = None
            if isinstance(loc, FieldLoc) and not isinstance(T.unwrap(loc.type), T.BoolType):
                w = bits(loc.type)
                return [loc.header, loc.name], int(e.right.const_value) & V.mask(w), w
        if isinstance(e, (ast.PathExpression, ast.Member)):
            loc = ex.loc(e)
            if isinstance(loc, FieldLoc):
                return [loc.header, loc.name], None, bits(loc.type)
        t = e.type or T.BitsType(32)
        tmp = self.ctx.temp(t, "key")
        assert isinstance(tmp, FieldLoc)
        res.pre.append((tmp, e))
        return [tmp.header, tmp.name], None, bits(t)

    def _properties(
        self, decl: ast.TableDecl, scope: Scope, j: JSON, cp: CPTable, selector_inputs: list[JSON], size: int
    ) -> None:
        name = j["name"]
        for p in decl.properties:
            if p.name in ("key", "actions", "default_action", "entries", "size"):
                continue
            if p.name in ("implementation", "psa_implementation"):
                ext = self._extern_value(scope, p.value, name)
                prof = self._profile(ext, name, selector_inputs, p)
                j["type"] = "indirect_ws" if ext.kind == "action_selector" else "indirect"
                j["action_profile"] = prof
                cp.implementation = prof
            elif p.name in ("counters", "psa_direct_counter"):
                ext = self._extern_value(scope, p.value, name)
                if ext.kind != "direct_counter":
                    raise unsupported("counters property that is not a direct_counter", p)
                externs.bind_direct_counter(self.ctx, ext, name, size)
                j["with_counters"] = True
                cp.direct_counters.append(ext.name)
            elif p.name in ("meters", "psa_direct_meter"):
                ext = self._extern_value(scope, p.value, name)
                if ext.kind != "direct_meter":
                    raise unsupported("meters property that is not a direct_meter", p)
                externs.bind_direct_meter(self.ctx, ext, name, size)
                j["direct_meters"] = ext.name
                cp.direct_meters.append(ext.name)
            elif p.name in ("support_timeout", "psa_idle_timeout"):
                v = p.value.const_value if isinstance(p.value, ast.Expression) else None
                if v is True or (
                    p.name == "psa_idle_timeout"
                    and isinstance(p.value, ast.Member)
                    and p.value.member == "NOTIFY_CONTROL"
                ):
                    j["support_timeout"] = True
                    cp.idle_timeout = True
            # other target-specific properties are ignored, as p4c's bmv2 back end ignores them

    def _extern_value(self, scope: Scope, e: Any, table: str) -> ExternLoc:
        if isinstance(e, ast.PathExpression):
            loc = scope.lookup(e.decl)
            if isinstance(loc, ExternLoc):
                return loc
        if isinstance(e, ast.ConstructorCallExpression):
            t = T.unwrap(e.type) if e.type is not None else None
            if isinstance(t, T.ExternType):
                return ExternLoc(f"{table}_{t.name}", t.name, t, externs.ctor_args(e), e, [])
        raise unsupported("this table property value", e)

    def _profile(self, ext: ExternLoc, table: str, selector_inputs: list[JSON], node: ast.Node) -> str:
        if ext.name in self.profiles_made:
            for prof in self.ctx.cp.action_profiles:
                if prof.name == ext.name:
                    prof.table_names.append(table)
            return ext.name
        args = ext.args
        if ext.kind == "action_profile":
            size = externs.const_int(args[0], "an action profile's size")
            pj: JSON = {"name": ext.name, "id": self.ctx.out.next_id("action_profile"), "max_size": size}
            with_sel = False
        elif ext.kind == "action_selector":
            algo = externs.HASH_ALGOS.get(externs.enum_name(args[0]))
            size = externs.const_int(args[1], "an action selector's size")
            pj = {
                "name": ext.name,
                "id": self.ctx.out.next_id("action_profile"),
                "max_size": size,
                "selector": {"algo": algo, "input": selector_inputs},
            }
            with_sel = True
        else:
            raise unsupported(f"table implementation {ext.kind}", node)
        self.pipeline_profiles.append(pj)
        self.profiles_made[ext.name] = ext.name
        max_group = 0
        for a in ext.annotations:  # @max_group_size(N) on an action_selector, as P4Info reports it
            if a.name == "max_group_size" and a.args:
                arg0 = a.args[0]
                max_group = int(
                    arg0.const_value if isinstance(arg0.const_value, int) else getattr(arg0, "value", 0)
                )
        self.ctx.cp.action_profiles.append(
            CPActionProfile(ext.name, [table], with_sel, size, max_group, cp_annotations(ext.annotations))
        )
        return ext.name

    def _entries(self, decl: ast.TableDecl, scope: Scope, keys: list[JSON], match_type: str) -> list[JSON]:
        ex = ExprLowering(self.ctx, scope)
        out = []
        key_elems = [k for k in decl.keys if k.match_kind != "selector"]
        widths = []
        for k in key_elems:
            t = k.expr.type or T.BitsType(1)
            widths.append(bits(t))
        prios = self._bmv2_priorities(decl)
        for i, ent in enumerate(decl.entries or []):
            mk = []
            for k, kj, w, ke in zip(key_elems, keys, widths, ent.keys, strict=False):
                mk.append(self._match(ex, kj["match_type"], w, ke, k))
            aid, _ = self._action(scope, ent.action.action, ent)
            ej: JSON = {
                "match_key": mk,
                "action_entry": {
                    "action_id": aid,
                    "action_data": action_data(self.ctx, ent.action.action, ref_args(ent.action), ent),
                },
                "priority": prios[i],
            }
            if ent.is_const and not decl.entries_const:
                ej["is_const"] = True
            si = source_info(ent)
            if si:
                ej["source_info"] = si
            out.append(ej)
        return out

    def _bmv2_priorities(self, decl: ast.TableDecl) -> list[int]:
        """BMv2 prefers the *smallest* priority value. Without explicit priorities, earlier entries
        win (1, 2, ...); explicit P4 priorities (larger wins, unless `largest_priority_wins = false`)
        are mirrored into that order."""
        entries = decl.entries or []
        explicit = [e.priority_value for e in entries]
        if all(p is None for p in explicit):
            return list(range(1, len(entries) + 1))
        if all(e.priority_is_annotation for e in entries if e.priority_value is not None):
            # p4c's bmv2 back end writes an entry's @priority(N) as BMv2's priority itself (the smaller
            # wins) and numbers the others by position
            return [
                e.priority_value if e.priority_value is not None else i + 1 for i, e in enumerate(entries)
            ]
        prop = decl.property("largest_priority_wins")
        largest = not (prop is not None and getattr(prop.value, "const_value", True) is False)
        dprop = decl.property("priority_delta")
        delta = getattr(dprop.value, "const_value", None) if dprop is not None else 1
        if isinstance(delta, bool) or not isinstance(delta, int) or delta <= 0:
            raise CompileError(
                "priority_delta must be a positive integer constant", dprop.loc if dprop else None
            )
        if explicit[0] is None:  # the spec's rule, so the others can be derived from it
            raise CompileError(
                "when some entries have a priority, the first entry must have one too", entries[0].loc
            )
        p4: list[int] = []
        for i, p in enumerate(explicit):
            if p is None:  # an entry without a priority follows the previous one by priority_delta
                p = p4[i - 1] - delta if largest else p4[i - 1] + delta
            if p < 0:
                raise CompileError(f"entry priority {p} is negative", entries[i].loc)
            p4.append(p)
        if not largest:
            return [max(p, 1) for p in p4]
        top = max(p4) + 1
        return [top - p for p in p4]

    def _match(self, ex: ExprLowering, mt: str, w: int, e: ast.Expression, node: ast.Node) -> JSON:
        def num(x: ast.Expression) -> int:
            if isinstance(x.const_value, bool):
                return int(x.const_value)
            if isinstance(x.const_value, int):
                return x.const_value & V.mask(w)
            if isinstance(x, ast.Member) and x.kind in ("enum_member", "error_member"):
                return int(ex.value(x)["value"], 16)
            raise unsupported("a non-constant key in a table entry", x)

        def hx(v: int) -> str:
            return V.hexstr_text(v, w)

        dont_care = isinstance(e, ast.DefaultExpression)
        if mt == "exact":
            if dont_care:
                raise CompileError("'_' is not allowed for an exact key", e.loc)
            return {"match_type": "exact", "key": hx(num(e))}
        if mt == "optional":  # an exact value or a wildcard; BMv2 stores it like a ternary entry
            if dont_care:
                return {"match_type": "optional", "key": hx(0), "mask": hx(0)}
            return {"match_type": "optional", "key": hx(num(e)), "mask": hx(V.mask(w))}
        if mt == "ternary":
            if dont_care:
                return {"match_type": "ternary", "key": hx(0), "mask": hx(0)}
            if isinstance(e, ast.BinaryOp) and e.op == "&&&":
                v, m = num(e.left), num(e.right)
                return {"match_type": "ternary", "key": hx(v & m), "mask": hx(m)}
            return {"match_type": "ternary", "key": hx(num(e)), "mask": hx(V.mask(w))}
        if mt == "lpm":
            if dont_care:
                return {"match_type": "lpm", "key": hx(0), "prefix_length": 0}
            if isinstance(e, ast.BinaryOp) and e.op == "&&&":
                v, m = num(e.left), num(e.right)
                plen = bin(m).count("1")
                return {"match_type": "lpm", "key": hx(v & m), "prefix_length": plen}
            return {"match_type": "lpm", "key": hx(num(e)), "prefix_length": w}
        if mt == "range":
            if dont_care:
                return {"match_type": "range", "start": hx(0), "end": hx(V.mask(w))}
            if isinstance(e, ast.BinaryOp) and e.op == "..":
                return {"match_type": "range", "start": hx(num(e.left)), "end": hx(num(e.right))}
            v = num(e)
            return {"match_type": "range", "start": hx(v), "end": hx(v)}
        raise unsupported(f"entries for match kind {mt}", node)
