"""Client arbitration for the P4Runtime StreamChannel: who is primary, and who is told what.

Why separate: the rules are the subtle part of the protocol and deserve their own tests. They follow the
P4Runtime specification and PI (BMv2's server):

- per role, the stream with the highest election id is the primary; election ids are unique per role
  (a second stream claiming one in use is closed with INVALID_ARGUMENT);
- every arbitration answer carries the device id, the role and the primary's election id (or the highest
  seen, when there is no primary), with status OK for the primary, ALREADY_EXISTS for a backup while a
  primary exists and NOT_FOUND when there is none;
- when the primary changes (a higher id arrives, or the primary's stream closes and the next highest
  takes over) every stream of the role is told; otherwise only the stream that asked;
- a stream that changes device id is closed with FAILED_PRECONDITION; one naming another device gets
  NOT_FOUND.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field

import grpc
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4kit.switch.p4rt_codec import P4RTError

Outbox = queue.Queue  # of p4runtime_pb2.StreamMessageResponse | None (None closes the stream)


def election_value(uint128: p4runtime_pb2.Uint128) -> int:
    return (uint128.high << 64) | uint128.low


def role_name(role: p4runtime_pb2.Role) -> str:
    """The role's name ("" = default role). p4runtime 1.4 names roles; older clients sent a numeric id."""
    if role.name:
        return role.name
    return str(role.id) if role.id else ""


@dataclass
class StreamClient:
    stream_id: int
    outbox: Outbox
    device_id: int | None = None
    role: str = ""
    election_id: int | None = None  # None: not yet arbitrated (or a backup without an id)


@dataclass
class _RoleState:
    highest_seen: int = 0
    primary: int | None = None  # stream id
    clients: set[int] = field(default_factory=set)


class Arbiter:
    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self._lock = threading.Lock()
        self._clients: dict[int, StreamClient] = {}
        self._roles: dict[str, _RoleState] = {}

    # -- stream life cycle ---------------------------------------------------------------------------
    def register(self, stream_id: int, outbox: Outbox) -> StreamClient:
        client = StreamClient(stream_id, outbox)
        with self._lock:
            self._clients[stream_id] = client
        return client

    def arbitrate(self, stream_id: int, update: p4runtime_pb2.MasterArbitrationUpdate) -> None:
        """Apply one MasterArbitrationUpdate and queue the answers. Raises P4RTError to close the stream."""
        with self._lock:
            client = self._clients[stream_id]
            if update.device_id != self.device_id:
                if client.device_id is not None:
                    raise P4RTError(grpc.StatusCode.FAILED_PRECONDITION, "device id of the stream changed")
                raise P4RTError(grpc.StatusCode.NOT_FOUND, f"this switch is device {self.device_id}")
            if client.device_id is not None and client.device_id != update.device_id:
                raise P4RTError(grpc.StatusCode.FAILED_PRECONDITION, "device id of the stream changed")
            role = role_name(update.role)
            election = election_value(update.election_id) if update.HasField("election_id") else None
            if election is not None:
                for other in self._clients.values():
                    if other is not client and other.role == role and other.election_id == election:
                        raise P4RTError(
                            grpc.StatusCode.INVALID_ARGUMENT,
                            f"election id {election} is already used by another client of this role",
                        )
            client.device_id = update.device_id
            changed: set[str] = set()
            if client.role != role:
                old = self._roles.get(client.role)
                if old is not None and stream_id in old.clients:
                    old.clients.discard(stream_id)
                    if self._elect(client.role):
                        changed.add(client.role)
            client.role = role
            client.election_id = election
            state = self._roles.setdefault(role, _RoleState())
            state.clients.add(stream_id)
            if election is not None and election > state.highest_seen:
                state.highest_seen = election
            if self._elect(role):
                changed.add(role)
            if role in changed:
                self._notify_role(role)
            else:
                self._notify(client, state)
            for other_role in changed - {role}:
                self._notify_role(other_role)

    def unregister(self, stream_id: int) -> None:
        with self._lock:
            client = self._clients.pop(stream_id, None)
            if client is None:
                return
            state = self._roles.get(client.role)
            if state is None or stream_id not in state.clients:
                return
            state.clients.discard(stream_id)
            if self._elect(client.role):
                self._notify_role(client.role)

    # -- queries -------------------------------------------------------------------------------------
    def primary(self, role: str = "") -> StreamClient | None:
        with self._lock:
            state = self._roles.get(role)
            if state is None or state.primary is None:
                return None
            return self._clients.get(state.primary)

    def is_primary_stream(self, stream_id: int) -> bool:
        with self._lock:
            client = self._clients.get(stream_id)
            if client is None:
                return False
            state = self._roles.get(client.role)
            return state is not None and state.primary == stream_id

    def check_writer(self, role: str, election: p4runtime_pb2.Uint128, has_election: bool) -> None:
        """Raise PERMISSION_DENIED unless `election` is the role's primary. As in PI, a request without
        an election id is accepted while no client at all is connected (handy for scripts and tests)."""
        value = election_value(election) if has_election else 0
        with self._lock:
            state = self._roles.get(role)
            if state is None or not state.clients:
                if value == 0 and not self._clients:
                    return
                raise P4RTError(grpc.StatusCode.PERMISSION_DENIED, "no primary client for this role")
            primary = self._clients.get(state.primary) if state.primary is not None else None
            if primary is None or primary.election_id != value:
                raise P4RTError(
                    grpc.StatusCode.PERMISSION_DENIED, "only the primary client may write (election id)"
                )

    def primaries(self) -> list[StreamClient]:
        """The primary stream of every role (PacketIn and DigestList go to these)."""
        with self._lock:
            return [
                self._clients[s.primary]
                for s in self._roles.values()
                if s.primary is not None and s.primary in self._clients
            ]

    def clients(self) -> list[StreamClient]:
        with self._lock:
            return list(self._clients.values())

    # -- internals (lock held) -------------------------------------------------------------------------
    def _elect(self, role: str) -> bool:
        """Recompute the role's primary; True when it changed."""
        state = self._roles.get(role)
        if state is None:
            return False
        best: StreamClient | None = None
        for sid in state.clients:
            c = self._clients[sid]
            if c.election_id is not None and (best is None or c.election_id > best.election_id):  # type: ignore[operator]
                best = c
        new = best.stream_id if best is not None else None
        if new != state.primary:
            state.primary = new
            return True
        return False

    def _notify_role(self, role: str) -> None:
        state = self._roles[role]
        for sid in sorted(state.clients):
            self._notify(self._clients[sid], state)

    def _notify(self, client: StreamClient, state: _RoleState) -> None:
        msg = p4runtime_pb2.StreamMessageResponse()
        arb = msg.arbitration
        arb.device_id = self.device_id
        if client.role:
            arb.role.name = client.role
        primary = self._clients.get(state.primary) if state.primary is not None else None
        shown = primary.election_id if primary is not None else state.highest_seen
        arb.election_id.high = (shown or 0) >> 64
        arb.election_id.low = (shown or 0) & ((1 << 64) - 1)
        if primary is None:
            arb.status.code = code_pb2.NOT_FOUND
            arb.status.message = "no primary client"
        elif primary is client:
            arb.status.code = code_pb2.OK
            arb.status.message = "is primary"
        else:
            arb.status.code = code_pb2.ALREADY_EXISTS
            arb.status.message = "is backup: a primary client exists"
        client.outbox.put(msg)
