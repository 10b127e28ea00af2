"""simple_switch_CLI's action profile commands (act_prof_*, table_indirect_*), as P4Runtime requests.

Why a mapping of handles: BMv2 numbers an action profile's members and groups from 0, and the CLI's
users type those numbers; P4Runtime names them by ids that the client chooses and that must not be 0.
So the CLI's handle h is P4Runtime id h + 1, in both directions: a member a controller made with id
m shows as handle m - 1, and what the CLI creates takes the lowest handle not in use, as BMv2 does.
The older `table_indirect_*` spellings, which name the table instead of its profile, do the same on the
table's profile (BMv2 kept them, deprecated, for scripts).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from p4.v1 import p4runtime_pb2 as pb

from p4kit.cli.session import MAX_PRIORITY, PRIORITY_MATCH_KINDS, Session
from p4kit.cli.values import CliError, count, words

INSERT, MODIFY, DELETE = pb.Update.INSERT, pb.Update.MODIFY, pb.Update.DELETE


class ActionProfileCommands:
    """Mixed into RuntimeShell, which provides the session `s` and the helpers named below."""

    s: Session

    if TYPE_CHECKING:  # RuntimeShell's

        def say(self, text: str = "") -> None: ...
        def _matches(self, t: Any, tokens: list[str]) -> list[pb.FieldMatch]: ...
        def _action(self, t: Any | None, name: str, tokens: list[str]) -> pb.Action: ...
        def _fmt_action(self, ta: pb.TableAction) -> str: ...

    # ------------------------------------------------------------------ lookups
    def _ap(self, name: str) -> Any:
        return self.s.find("action_profiles", name)

    def _profile_of_table(self, name: str) -> Any:
        t = self.s.find("tables", name)
        if not t.implementation_id:
            raise CliError("Cannot run this command on non-indirect table")
        for ap in self.s.info().action_profiles:
            if ap.preamble.id == t.implementation_id:
                return ap
        raise CliError(f"table {t.preamble.name}: its action profile is not in the P4Info")

    def _check_selector(self, ap: Any) -> None:
        if not ap.with_selector:
            raise CliError("Cannot run this command on an action profile without selector")

    def _action_of_profile(self, ap: Any, name: str, tokens: list[str]) -> pb.Action:
        """The action, checked against the actions of the tables that use the profile."""
        tables = [t for t in self.s.info().tables if t.preamble.id in set(ap.table_ids)]
        a = self.s.find("actions", name)
        if tables and not any(a.preamble.id in {r.id for r in t.action_refs} for t in tables):
            raise CliError(f"Action profile '{ap.preamble.name}' has no action '{name}'")
        if tokens[:1] == ["=>"]:
            tokens = tokens[1:]  # BMv2 tolerates the arrow here too
        return self._action(None, name, tokens)

    def _ap_members(self, ap: Any) -> dict[int, pb.ActionProfileMember]:
        e = pb.Entity(action_profile_member=pb.ActionProfileMember(action_profile_id=ap.preamble.id))
        return {m.action_profile_member.member_id: m.action_profile_member for m in self.s.read(e)}

    def _ap_groups(self, ap: Any) -> dict[int, pb.ActionProfileGroup]:
        e = pb.Entity(action_profile_group=pb.ActionProfileGroup(action_profile_id=ap.preamble.id))
        return {g.action_profile_group.group_id: g.action_profile_group for g in self.s.read(e)}

    def _ap_group(self, ap: Any, handle: int) -> pb.ActionProfileGroup:
        g = self._ap_groups(ap).get(handle + 1)
        if g is None:
            raise CliError(f"Invalid group handle {handle} in action profile {ap.preamble.name}")
        return g

    @staticmethod
    def _lowest_free(ids: set[int]) -> int:
        handle = 0
        while handle + 1 in ids:
            handle += 1
        return handle

    # ------------------------------------------------------------------ members
    def _create_member(self, ap: Any, tokens: list[str]) -> None:
        action = self._action_of_profile(ap, tokens[0], tokens[1:])
        handle = self._lowest_free(set(self._ap_members(ap)))
        m = pb.ActionProfileMember(action_profile_id=ap.preamble.id, member_id=handle + 1, action=action)
        self.s.write(pb.Update(type=INSERT, entity=pb.Entity(action_profile_member=m)))
        self.say(f"Member has been created with handle {handle}")

    def _delete_member(self, ap: Any, text: str) -> None:
        handle = count(text, "member handle")
        m = pb.ActionProfileMember(action_profile_id=ap.preamble.id, member_id=handle + 1)
        self.s.write(pb.Update(type=DELETE, entity=pb.Entity(action_profile_member=m)))

    def _modify_member(self, ap: Any, tokens: list[str]) -> None:
        handle = count(tokens[1], "member handle")
        action = self._action_of_profile(ap, tokens[0], tokens[2:])
        m = pb.ActionProfileMember(action_profile_id=ap.preamble.id, member_id=handle + 1, action=action)
        self.s.write(pb.Update(type=MODIFY, entity=pb.Entity(action_profile_member=m)))

    def do_act_prof_create_member(self, line: str) -> None:
        """act_prof_create_member <action profile name> <action_name> [action parameters]"""
        p = self._n(line, 2, self.do_act_prof_create_member.__doc__)
        self._create_member(self._ap(p[0]), p[1:])

    def do_act_prof_delete_member(self, line: str) -> None:
        """act_prof_delete_member <action profile name> <member handle>"""
        p = self._n(line, 2, self.do_act_prof_delete_member.__doc__, exact=True)
        self._delete_member(self._ap(p[0]), p[1])

    def do_act_prof_modify_member(self, line: str) -> None:
        """act_prof_modify_member <action profile name> <action_name> <member_handle> [action parameters]"""
        p = self._n(line, 3, self.do_act_prof_modify_member.__doc__)
        self._modify_member(self._ap(p[0]), p[1:])

    def do_table_indirect_create_member(self, line: str) -> None:
        """table_indirect_create_member <table name> <action_name> [action parameters] (deprecated: act_prof_create_member)"""
        p = self._n(line, 2, self.do_table_indirect_create_member.__doc__)
        self._create_member(self._profile_of_table(p[0]), p[1:])

    def do_table_indirect_delete_member(self, line: str) -> None:
        """table_indirect_delete_member <table name> <member handle> (deprecated: act_prof_delete_member)"""
        p = self._n(line, 2, self.do_table_indirect_delete_member.__doc__, exact=True)
        self._delete_member(self._profile_of_table(p[0]), p[1])

    def do_table_indirect_modify_member(self, line: str) -> None:
        """table_indirect_modify_member <table name> <action_name> <member_handle> [action parameters] (deprecated: act_prof_modify_member)"""
        p = self._n(line, 3, self.do_table_indirect_modify_member.__doc__)
        self._modify_member(self._profile_of_table(p[0]), p[1:])

    # ------------------------------------------------------------------ groups
    def _create_group(self, ap: Any) -> None:
        self._check_selector(ap)
        handle = self._lowest_free(set(self._ap_groups(ap)))
        g = pb.ActionProfileGroup(action_profile_id=ap.preamble.id, group_id=handle + 1)
        self.s.write(pb.Update(type=INSERT, entity=pb.Entity(action_profile_group=g)))
        self.say(f"Group has been created with handle {handle}")

    def _delete_group(self, ap: Any, text: str) -> None:
        self._check_selector(ap)
        handle = count(text, "group handle")
        g = pb.ActionProfileGroup(action_profile_id=ap.preamble.id, group_id=handle + 1)
        self.s.write(pb.Update(type=DELETE, entity=pb.Entity(action_profile_group=g)))

    def _change_group(self, ap: Any, member_text: str, group_text: str, add: bool) -> None:
        """P4Runtime replaces a group's whole member list: read it, change one member, write it."""
        self._check_selector(ap)
        member = count(member_text, "member handle") + 1
        g = self._ap_group(ap, count(group_text, "group handle"))
        present = [m.member_id for m in g.members]
        if add:
            if member in present:
                raise CliError(f"member {member - 1} is already in group {g.group_id - 1}")
            g.members.add(member_id=member, weight=1)
        else:
            if member not in present:
                raise CliError(f"member {member - 1} is not in group {g.group_id - 1}")
            kept = [m for m in g.members if m.member_id != member]
            del g.members[:]
            g.members.extend(kept)
        self.s.write(pb.Update(type=MODIFY, entity=pb.Entity(action_profile_group=g)))

    def do_act_prof_create_group(self, line: str) -> None:
        """act_prof_create_group <action profile name>"""
        p = self._n(line, 1, self.do_act_prof_create_group.__doc__, exact=True)
        self._create_group(self._ap(p[0]))

    def do_act_prof_delete_group(self, line: str) -> None:
        """act_prof_delete_group <action profile name> <group handle>"""
        p = self._n(line, 2, self.do_act_prof_delete_group.__doc__, exact=True)
        self._delete_group(self._ap(p[0]), p[1])

    def do_act_prof_add_member_to_group(self, line: str) -> None:
        """act_prof_add_member_to_group <action profile name> <member handle> <group handle>"""
        p = self._n(line, 3, self.do_act_prof_add_member_to_group.__doc__, exact=True)
        self._change_group(self._ap(p[0]), p[1], p[2], add=True)

    def do_act_prof_remove_member_from_group(self, line: str) -> None:
        """act_prof_remove_member_from_group <action profile name> <member handle> <group handle>"""
        p = self._n(line, 3, self.do_act_prof_remove_member_from_group.__doc__, exact=True)
        self._change_group(self._ap(p[0]), p[1], p[2], add=False)

    def do_table_indirect_create_group(self, line: str) -> None:
        """table_indirect_create_group <table name> (deprecated: act_prof_create_group)"""
        p = self._n(line, 1, self.do_table_indirect_create_group.__doc__, exact=True)
        self._create_group(self._profile_of_table(p[0]))

    def do_table_indirect_delete_group(self, line: str) -> None:
        """table_indirect_delete_group <table name> <group handle> (deprecated: act_prof_delete_group)"""
        p = self._n(line, 2, self.do_table_indirect_delete_group.__doc__, exact=True)
        self._delete_group(self._profile_of_table(p[0]), p[1])

    def do_table_indirect_add_member_to_group(self, line: str) -> None:
        """table_indirect_add_member_to_group <table name> <member handle> <group handle> (deprecated)"""
        p = self._n(line, 3, self.do_table_indirect_add_member_to_group.__doc__, exact=True)
        self._change_group(self._profile_of_table(p[0]), p[1], p[2], add=True)

    def do_table_indirect_remove_member_from_group(self, line: str) -> None:
        """table_indirect_remove_member_from_group <table name> <member handle> <group handle> (deprecated)"""
        p = self._n(line, 3, self.do_table_indirect_remove_member_from_group.__doc__, exact=True)
        self._change_group(self._profile_of_table(p[0]), p[1], p[2], add=False)

    # ------------------------------------------------------------------ entries of indirect tables
    def _indirect_entry(self, line: str, usage: str, group: bool) -> pb.TableEntry:
        """`<table> <match fields> => <handle> [priority]` as a table entry pointing at a member or group."""
        p = self._n(line, 1, usage)
        t = self.s.find("tables", p[0])
        ap = self._profile_of_table(p[0])
        if group:
            self._check_selector(ap)
        rest = p[1:]
        if "=>" not in rest:
            raise CliError("Invalid arguments, could not find handle")
        i = rest.index("=>")
        keys, after = rest[:i], rest[i + 1 :]
        needs_prio = any(m.match_type in PRIORITY_MATCH_KINDS for m in t.match_fields)
        prio = None
        if needs_prio:
            if len(after) != 2:
                raise CliError("Table is ternary, but could not extract a valid priority from args")
            prio = count(after[1], "priority")
            if prio >= MAX_PRIORITY:
                raise CliError(f"priority {prio} is too large")
        elif len(after) != 1:
            raise CliError("Invalid arguments, could not find handle")
        handle = count(after[0], "handle")
        te = pb.TableEntry(table_id=t.preamble.id)
        te.match.extend(self._matches(t, keys))
        if group:
            self._ap_group(ap, handle)  # a clear error for a group that does not exist
            te.action.action_profile_group_id = handle + 1
        else:
            te.action.action_profile_member_id = handle + 1
        if prio is not None:
            te.priority = MAX_PRIORITY - prio
        return te

    def do_table_indirect_add(self, line: str) -> None:
        """table_indirect_add <table name> <match fields> => <member handle> [priority]"""
        te = self._indirect_entry(line, self.do_table_indirect_add.__doc__ or "", group=False)
        self.say(f"Adding entry to indirect match table {self.s.table_by_id(te.table_id).preamble.name}")
        self.s.write(pb.Update(type=INSERT, entity=pb.Entity(table_entry=te)))
        self.say(f"Entry has been added with handle {self.s.handle_of(te)}")

    def do_table_indirect_add_with_group(self, line: str) -> None:
        """table_indirect_add_with_group <table name> <match fields> => <group handle> [priority]"""
        te = self._indirect_entry(line, self.do_table_indirect_add_with_group.__doc__ or "", group=True)
        self.say(f"Adding entry to indirect match table {self.s.table_by_id(te.table_id).preamble.name}")
        self.s.write(pb.Update(type=INSERT, entity=pb.Entity(table_entry=te)))
        self.say(f"Entry has been added with handle {self.s.handle_of(te)}")

    def do_table_indirect_delete(self, line: str) -> None:
        """table_indirect_delete <table name> <entry handle>"""
        p = self._n(line, 2, self.do_table_indirect_delete.__doc__, exact=True)
        t = self.s.find("tables", p[0])
        self._profile_of_table(p[0])
        handle = count(p[1], "entry handle")
        te = self.s.entry_by_handle(t.preamble.id, handle)
        self.say(f"Deleting entry {handle} from {t.preamble.name}")
        key = pb.TableEntry(table_id=te.table_id, priority=te.priority)
        key.match.extend(te.match)
        self.s.write(pb.Update(type=DELETE, entity=pb.Entity(table_entry=key)))
        self.s.forget(te)

    def _modify_indirect(self, line: str, usage: str, group: bool) -> None:
        p = self._n(line, 3, usage, exact=True)
        t = self.s.find("tables", p[0])
        ap = self._profile_of_table(p[0])
        if group:
            self._check_selector(ap)
        te = self.s.entry_by_handle(t.preamble.id, count(p[1], "entry handle"))
        target = count(p[2], "group handle" if group else "member handle")
        new = pb.TableEntry(table_id=te.table_id, priority=te.priority)
        new.match.extend(te.match)
        if group:
            self._ap_group(ap, target)
            new.action.action_profile_group_id = target + 1
        else:
            new.action.action_profile_member_id = target + 1
        self.s.write(pb.Update(type=MODIFY, entity=pb.Entity(table_entry=new)))

    def do_table_indirect_modify(self, line: str) -> None:
        """table_indirect_modify <table name> <entry handle> <member handle>"""
        self._modify_indirect(line, self.do_table_indirect_modify.__doc__ or "", group=False)

    def do_table_indirect_modify_with_group(self, line: str) -> None:
        """table_indirect_modify_with_group <table name> <entry handle> <group handle>"""
        self._modify_indirect(line, self.do_table_indirect_modify_with_group.__doc__ or "", group=True)

    def _set_default_indirect(self, line: str, usage: str, group: bool) -> None:
        p = self._n(line, 2, usage, exact=True)
        t = self.s.find("tables", p[0])
        ap = self._profile_of_table(p[0])
        if group:
            self._check_selector(ap)
        target = count(p[1], "group handle" if group else "member handle")
        te = pb.TableEntry(table_id=t.preamble.id, is_default_action=True)
        if group:
            self._ap_group(ap, target)
            te.action.action_profile_group_id = target + 1
        else:
            te.action.action_profile_member_id = target + 1
        self.s.write(pb.Update(type=MODIFY, entity=pb.Entity(table_entry=te)))

    def do_table_indirect_set_default(self, line: str) -> None:
        """table_indirect_set_default <table name> <member handle>"""
        self._set_default_indirect(line, self.do_table_indirect_set_default.__doc__ or "", group=False)

    def do_table_indirect_set_default_with_group(self, line: str) -> None:
        """table_indirect_set_default_with_group <table name> <group handle>"""
        self._set_default_indirect(
            line, self.do_table_indirect_set_default_with_group.__doc__ or "", group=True
        )

    def do_table_indirect_reset_default(self, line: str) -> None:
        """table_indirect_reset_default <table name>"""
        p = self._n(line, 1, self.do_table_indirect_reset_default.__doc__, exact=True)
        t = self.s.find("tables", p[0])
        self._profile_of_table(p[0])
        te = pb.TableEntry(table_id=t.preamble.id, is_default_action=True)
        self.s.write(pb.Update(type=MODIFY, entity=pb.Entity(table_entry=te)))

    # ------------------------------------------------------------------ dumps
    def _dump_member(self, m: pb.ActionProfileMember) -> None:
        self.say(f"Dumping member {m.member_id - 1}")
        self.say(f"Action entry: {self._fmt_action(pb.TableAction(action=m.action))}")

    def _dump_group(self, g: pb.ActionProfileGroup) -> None:
        self.say(f"Dumping group {g.group_id - 1}")
        self.say(f"Members: [{', '.join(str(m.member_id - 1) for m in g.members)}]")

    def dump_profile(self, ap: Any) -> None:
        """The members (and groups) of a profile, as `act_prof_dump` and `table_dump` print them."""
        self.say("==========")
        self.say("MEMBERS")
        for _, m in sorted(self._ap_members(ap).items()):
            self.say("**********")
            self._dump_member(m)
        if ap.with_selector:
            self.say("==========")
            self.say("GROUPS")
            for _, g in sorted(self._ap_groups(ap).items()):
                self.say("**********")
                self._dump_group(g)

    def do_act_prof_dump(self, line: str) -> None:
        """act_prof_dump <action profile name>"""
        p = self._n(line, 1, self.do_act_prof_dump.__doc__, exact=True)
        self.dump_profile(self._ap(p[0]))

    def do_act_prof_dump_member(self, line: str) -> None:
        """act_prof_dump_member <action profile name> <member handle>"""
        p = self._n(line, 2, self.do_act_prof_dump_member.__doc__, exact=True)
        ap = self._ap(p[0])
        handle = count(p[1], "member handle")
        m = self._ap_members(ap).get(handle + 1)
        if m is None:
            raise CliError(f"Invalid member handle {handle} in action profile {ap.preamble.name}")
        self._dump_member(m)

    def do_act_prof_dump_group(self, line: str) -> None:
        """act_prof_dump_group <action profile name> <group handle>"""
        p = self._n(line, 2, self.do_act_prof_dump_group.__doc__, exact=True)
        ap = self._ap(p[0])
        self._dump_group(self._ap_group(ap, count(p[1], "group handle")))

    def do_table_dump_member(self, line: str) -> None:
        """table_dump_member <table name> <member handle>"""
        p = self._n(line, 2, self.do_table_dump_member.__doc__, exact=True)
        ap = self._profile_of_table(p[0])
        self.do_act_prof_dump_member(f"{shlex.quote(ap.preamble.name)} {p[1]}")

    def do_table_dump_group(self, line: str) -> None:
        """table_dump_group <table name> <group handle>"""
        p = self._n(line, 2, self.do_table_dump_group.__doc__, exact=True)
        ap = self._profile_of_table(p[0])
        self.do_act_prof_dump_group(f"{shlex.quote(ap.preamble.name)} {p[1]}")

    # ------------------------------------------------------------------ arguments
    @staticmethod
    def _n(line: str, n: int, usage: str | None, exact: bool = False) -> list[str]:
        parts = words(line)
        if len(parts) < n or (exact and len(parts) != n):
            raise CliError(f"Invalid number of arguments; usage: {usage or ''}")
        return parts
