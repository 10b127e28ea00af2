"""The packet replication engine: multicast groups and clone (mirroring) sessions.

Why two views of multicast: BMv2's CLI (and STF files) build groups from *nodes* -- (rid, port set)
pairs associated to a group -- while P4Runtime writes a group as a flat list of (port, instance)
replicas. Both are kept here over one store, so a group made one way can be read the other way.
Replicas are produced node by node in association order, ports ascending within a node, as BMv2 does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p4kit.switch.errors import BadIndexError, DuplicateEntryError, EntryNotFoundError, InvalidOperationError

MAX_MGRP = 65535


@dataclass
class McNode:
    rid: int
    ports: list[int]


@dataclass
class CloneSession:
    session_id: int
    port: int | None = None
    mcast_grp: int | None = None
    replicas: list[tuple[int, int]] | None = None  # P4Runtime-style replica list (port, rid)
    truncate_length: int = 0  # 0 = no truncation
    class_of_service: int = 0


@dataclass
class Pre:
    groups: dict[int, list[int]] = field(default_factory=dict)  # group -> node handles
    nodes: dict[int, McNode] = field(default_factory=dict)
    owner: dict[int, int] = field(default_factory=dict)  # node handle -> group it is associated to
    next_node: int = 0
    replicas_cache: dict[int, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    sessions: dict[int, CloneSession] = field(default_factory=dict)

    # -- BMv2 node API -----------------------------------------------------------------------
    def mgrp_create(self, gid: int) -> None:
        _check_gid(gid)
        if gid in self.groups:
            raise DuplicateEntryError(f"multicast group {gid} already exists")
        self.groups[gid] = []
        self.replicas_cache[gid] = ()

    def mgrp_destroy(self, gid: int) -> None:
        handles = self._group(gid)
        for h in handles:
            self.owner.pop(h, None)
        del self.groups[gid]
        del self.replicas_cache[gid]

    def node_create(self, rid: int, ports: list[int]) -> int:
        if not 0 <= rid < (1 << 16):
            raise BadIndexError(f"replication id {rid} out of range 0..65535")
        h = self.next_node
        self.next_node += 1
        self.nodes[h] = McNode(rid, sorted(set(ports)))
        return h

    def node_update(self, handle: int, ports: list[int]) -> None:
        node = self._node(handle)
        node.ports = sorted(set(ports))
        if handle in self.owner:
            self._refresh(self.owner[handle])

    def node_destroy(self, handle: int) -> None:
        self._node(handle)
        gid = self.owner.pop(handle, None)
        if gid is not None:
            self.groups[gid].remove(handle)
            self._refresh(gid)
        del self.nodes[handle]

    def node_associate(self, gid: int, handle: int) -> None:
        handles = self._group(gid)
        self._node(handle)
        if handle in self.owner:
            raise InvalidOperationError(
                f"multicast node {handle} is already associated to group {self.owner[handle]}"
            )
        handles.append(handle)
        self.owner[handle] = gid
        self._refresh(gid)

    def node_dissociate(self, gid: int, handle: int) -> None:
        handles = self._group(gid)
        if handle not in handles:
            raise EntryNotFoundError(f"multicast node {handle} is not associated to group {gid}")
        handles.remove(handle)
        del self.owner[handle]
        self._refresh(gid)

    # -- P4Runtime replica API ----------------------------------------------------------------
    def group_create(self, gid: int, replicas: list[tuple[int, int]]) -> None:
        _check_gid(gid)
        if gid in self.groups:
            raise DuplicateEntryError(f"multicast group {gid} already exists")
        nodes = self._nodes_for(replicas)
        self.groups[gid] = []
        for rid, ports in nodes:
            h = self.node_create(rid, ports)
            self.groups[gid].append(h)
            self.owner[h] = gid
        self._refresh(gid)

    def group_modify(self, gid: int, replicas: list[tuple[int, int]]) -> None:
        self._group(gid)
        nodes = self._nodes_for(replicas)
        self.group_delete(gid)
        self.groups[gid] = []
        for rid, ports in nodes:
            h = self.node_create(rid, ports)
            self.groups[gid].append(h)
            self.owner[h] = gid
        self._refresh(gid)

    def group_delete(self, gid: int) -> None:
        handles = list(self._group(gid))
        self.mgrp_destroy(gid)
        for h in handles:
            self.nodes.pop(h, None)

    def replicas(self, gid: int) -> tuple[tuple[int, int], ...]:
        return self.replicas_cache.get(gid, ())

    # -- clone sessions -----------------------------------------------------------------------
    def session_set(self, s: CloneSession) -> None:
        if not 0 <= s.session_id < (1 << 15):
            raise BadIndexError(f"clone session id {s.session_id} out of range 0..32767")
        given = sum(x is not None for x in (s.port, s.mcast_grp, s.replicas))
        if given != 1:
            raise InvalidOperationError("a clone session needs exactly one of port, mcast_grp or replicas")
        self.sessions[s.session_id] = s

    def session_delete(self, sid: int) -> None:
        if sid not in self.sessions:
            raise EntryNotFoundError(f"clone session {sid} does not exist")
        del self.sessions[sid]

    # -- helpers ------------------------------------------------------------------------------
    def _group(self, gid: int) -> list[int]:
        handles = self.groups.get(gid)
        if handles is None:
            raise EntryNotFoundError(f"multicast group {gid} does not exist")
        return handles

    def _node(self, handle: int) -> McNode:
        node = self.nodes.get(handle)
        if node is None:
            raise EntryNotFoundError(f"multicast node {handle} does not exist")
        return node

    def _nodes_for(self, replicas: list[tuple[int, int]]) -> list[tuple[int, list[int]]]:
        by_rid: dict[int, list[int]] = {}
        seen: set[tuple[int, int]] = set()
        for port, rid in replicas:
            if (port, rid) in seen:
                raise DuplicateEntryError(f"replica (port {port}, rid {rid}) listed twice")
            seen.add((port, rid))
            if not 0 <= rid < (1 << 16):
                raise BadIndexError(f"replication id {rid} out of range 0..65535")
            by_rid.setdefault(rid, []).append(port)
        return list(by_rid.items())

    def _refresh(self, gid: int) -> None:
        out: list[tuple[int, int]] = []
        for h in self.groups[gid]:
            node = self.nodes[h]
            out.extend((p, node.rid) for p in node.ports)
        self.replicas_cache[gid] = tuple(out)


def _check_gid(gid: int) -> None:
    if not 0 < gid <= MAX_MGRP:
        raise BadIndexError(f"multicast group id {gid} out of range 1..{MAX_MGRP}")
