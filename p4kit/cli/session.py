"""One P4Runtime connection as simple_switch_CLI would use the switch: names, handles, writes, reads.

Why this layer: simple_switch_CLI talks Thrift to BMv2 and names everything as the JSON does; entries
and multicast nodes have numeric handles. P4Runtime names objects by P4Info ids and has no handles. The
session fetches the P4Info the switch runs, resolves the CLI's names (full names, P4Info aliases or
unique dotted suffixes, as simple_switch_CLI accepts them), and keeps the handle maps: an entry's handle
is given when this session first sees it (adding it, or reading it from the switch), so handles stay
stable for the session. Multicast nodes (rid + ports) exist only in P4Runtime's groups, so nodes are
session state, turned into group replicas when associated.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2 as pb
from p4.v1 import p4runtime_pb2_grpc

from p4kit.cli.values import CliError

T = TypeVar("T")

MAX_PRIORITY = 0x7FFFFFFF  # BMv2 prefers the smaller priority, P4Runtime the larger: p = MAX - cli
# tables with a key of these kinds take a priority (the CLI's last argument)
PRIORITY_MATCH_KINDS = {
    p4info_pb2.MatchField.TERNARY,
    p4info_pb2.MatchField.RANGE,
    p4info_pb2.MatchField.OPTIONAL,
}
YIELDING_ELECTION_ID = 0  # the lowest: any controller's id is higher, so a controller stays the primary


@dataclass
class Node:
    """A BMv2 multicast node: a replication id and ports, associated with groups."""

    rid: int
    ports: list[int]
    groups: set[int] = field(default_factory=set)


def rpc_message(err: grpc.RpcError) -> str:
    """The server's reason, with the per-update statuses of a failed Write when there are any."""
    for key, value in err.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            msgs = []
            for detail in status.details:
                e = pb.Error()
                detail.Unpack(e)
                if e.canonical_code != code_pb2.OK:
                    msgs.append(f"{code_pb2.Code.Name(e.canonical_code)}: {e.message}")
            if msgs:
                return "; ".join(msgs)
    return f"{err.code().name}: {err.details()}"


class Session:
    """A P4Runtime client for the CLI's commands. `connect()` fetches the P4Info, and arbitrates at once
    when an election id was chosen.

    Without a chosen election id the session behaves as simple_switch_CLI does beside a controller
    (its Thrift port knows nothing of P4Runtime's arbitration): it reads without a stream, so it never
    claims the id a controller uses (every p4lang/tutorials controller uses 1; a second stream with an
    id in use is refused, and such a controller would wait for its answer forever). It writes with
    election id 0, which the switch accepts while no client is connected; when a controller is
    connected it opens a stream with id 0, which any controller outranks, and writes once it is the
    primary, that is once the controller has gone (it waits up to `timeout` seconds)."""

    def __init__(
        self, address: str, device_id: int = 0, election_id: int | None = None, timeout: float = 10.0
    ):
        self.address = address
        self.device_id = device_id
        self.chosen_election = election_id is not None
        self.election_id = election_id if election_id is not None else YIELDING_ELECTION_ID
        self.timeout = timeout
        self.channel = grpc.insecure_channel(address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.p4info: p4info_pb2.P4Info | None = None
        self.primary = False
        self.primary_election = 0
        self.handles: dict[int, dict[bytes, int]] = {}  # table id -> entry key -> handle
        self.next_handle: dict[int, int] = {}
        self.nodes: dict[int, Node] = {}
        self._next_node = 0
        self._requests: queue.Queue = queue.Queue()
        self._answers: queue.Queue = queue.Queue()
        self._stream: Any = None

    # ------------------------------------------------------------------ connection
    def connect(self) -> str | None:
        """Reach the server, fetch its P4Info and, with a chosen election id, arbitrate; returns a note
        when this client is not the primary."""
        try:
            grpc.channel_ready_future(self.channel).result(timeout=self.timeout)
        except grpc.FutureTimeoutError:
            raise CliError(f"cannot connect to the P4Runtime server at {self.address}") from None
        if not self.chosen_election:
            self.refresh_p4info()
            return None
        return self._arbitrate()

    def _arbitrate(self) -> str | None:
        """Open the stream with this session's election id; a note when another client is primary."""
        self._stream = self.stub.StreamChannel(iter(self._requests.get, None))
        threading.Thread(target=self._read_stream, daemon=True).start()
        req = pb.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.high = self.election_id >> 64
        req.arbitration.election_id.low = self.election_id & ((1 << 64) - 1)
        self._requests.put(req)
        try:
            answer = self._answers.get(timeout=self.timeout)
        except queue.Empty:
            raise CliError("the switch did not answer the arbitration request") from None
        if isinstance(answer, grpc.RpcError):
            raise CliError(f"arbitration failed: {answer.code().name}: {answer.details()}")
        self.primary = answer.status.code == code_pb2.OK
        self.primary_election = (answer.election_id.high << 64) | answer.election_id.low
        self.refresh_p4info()
        if not self.primary:
            other = self.primary_election
            return (
                f"not the primary client (another has election id {other}): writes will be refused; "
                f"use --election-id {other + 1} to take over"
            )
        return None

    def _await_primary(self) -> None:
        """Without a chosen election id, after a write was refused: become the primary with the lowest
        id once no controller holds the role, or say who does and how to take over."""
        if self._stream is None:
            self._arbitrate()
        else:  # refused although primary once: a controller came; the last answer queued is the news
            self.primary = False
            while True:
                try:
                    self._take_answer(self._answers.get_nowait())
                except queue.Empty:
                    break
        end = time.monotonic() + self.timeout
        while not self.primary:
            left = end - time.monotonic()
            if left <= 0:
                other = self.primary_election
                raise CliError(
                    f"another P4Runtime client (election id {other}) is the primary and only it may write; "
                    f"p4kit-cli writes after it has gone, or with --election-id {other + 1}, which makes "
                    "that client a backup"
                )
            try:
                self._take_answer(self._answers.get(timeout=left))
            except queue.Empty:
                continue

    def _take_answer(self, answer: Any) -> None:
        if isinstance(answer, grpc.RpcError):
            raise CliError(f"arbitration failed: {answer.code().name}: {answer.details()}")
        self.primary = answer.status.code == code_pb2.OK
        self.primary_election = (answer.election_id.high << 64) | answer.election_id.low

    def _retry_as_primary(self, call: Callable[[], T]) -> T:
        """`call`, and once more after `_await_primary` when it was refused for not being primary
        (only without a chosen election id: a chosen one keeps P4Runtime's rules as they are)."""
        try:
            return call()
        except grpc.RpcError as e:
            if self.chosen_election or e.code() != grpc.StatusCode.PERMISSION_DENIED:
                raise
        self._await_primary()
        return call()

    def _read_stream(self) -> None:
        try:
            for msg in self._stream:
                if msg.WhichOneof("update") == "arbitration":
                    self._answers.put(msg.arbitration)
        except grpc.RpcError as e:
            self._answers.put(e)

    def close(self) -> None:
        self._requests.put(None)
        if self._stream is not None:
            self._stream.cancel()
        self.channel.close()

    def refresh_p4info(self) -> None:
        req = pb.GetForwardingPipelineConfigRequest(
            device_id=self.device_id, response_type=pb.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE
        )
        try:
            self.p4info = self.stub.GetForwardingPipelineConfig(req, timeout=self.timeout).config.p4info
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.FAILED_PRECONDITION:
                raise CliError(rpc_message(e)) from None
            self.p4info = None

    # ------------------------------------------------------------------ names
    def info(self) -> p4info_pb2.P4Info:
        if self.p4info is None:
            self.refresh_p4info()
        if self.p4info is None:
            raise CliError("the switch has no P4 program yet (no forwarding pipeline config)")
        return self.p4info

    def find(self, kind: str, name: str) -> Any:
        """A P4Info object of `kind` (tables, actions, counters, direct_counters, meters,
        direct_meters, registers) by full name, alias or unique dotted suffix."""
        objs = list(getattr(self.info(), kind))
        for o in objs:
            if name in (o.preamble.name, o.preamble.alias):
                return o
        hits = [o for o in objs if o.preamble.name.endswith("." + name)]
        if len(hits) == 1:
            return hits[0]
        what = {"tables": "table", "actions": "action", "registers": "register"}.get(kind, kind.rstrip("s"))
        if hits:
            raise CliError(f"ambiguous {what} name '{name}': {', '.join(h.preamble.name for h in hits)}")
        raise CliError(f"Invalid {what} name ({name})")

    def find_counter(self, name: str) -> tuple[str, Any]:
        for kind in ("counters", "direct_counters"):
            try:
                return kind, self.find(kind, name)
            except CliError:
                continue
        raise CliError(f"Invalid counter name ({name})")

    def find_meter(self, name: str) -> tuple[str, Any]:
        for kind in ("meters", "direct_meters"):
            try:
                return kind, self.find(kind, name)
            except CliError:
                continue
        raise CliError(f"Invalid meter name ({name})")

    def action_by_id(self, action_id: int) -> Any:
        for a in self.info().actions:
            if a.preamble.id == action_id:
                return a
        raise CliError(f"unknown action id {action_id:#x}")

    def table_by_id(self, table_id: int) -> Any:
        for t in self.info().tables:
            if t.preamble.id == table_id:
                return t
        raise CliError(f"unknown table id {table_id:#x}")

    # ------------------------------------------------------------------ RPCs
    def write(self, *updates: pb.Update) -> None:
        req = pb.WriteRequest(device_id=self.device_id)
        req.election_id.high = self.election_id >> 64
        req.election_id.low = self.election_id & ((1 << 64) - 1)
        req.updates.extend(updates)
        try:
            self._retry_as_primary(lambda: self.stub.Write(req, timeout=self.timeout))
        except grpc.RpcError as e:
            raise CliError(rpc_message(e)) from None

    def device_config(self) -> bytes:
        """The program the switch runs, as its device config (the BMv2 JSON for BMv2 and p4kit)."""
        req = pb.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=pb.GetForwardingPipelineConfigRequest.DEVICE_CONFIG_AND_COOKIE,
        )
        try:
            config = self.stub.GetForwardingPipelineConfig(req, timeout=self.timeout).config.p4_device_config
        except grpc.RpcError as e:
            raise CliError(rpc_message(e)) from None
        if not config:
            raise CliError("the switch has no P4 program yet (no forwarding pipeline config)")
        return config

    def control(self, op: str, **args: object) -> object:
        """One call of p4kit-switch's control service (p4kit/switch/control_service.py): what
        simple_switch_CLI does over simple_switch's Thrift port and P4Runtime has no message for."""
        from p4kit.switch.control_service import METHOD, decode, encode

        call = self.channel.unary_unary(METHOD, request_serializer=encode, response_deserializer=decode)
        body = {"op": op, "device_id": self.device_id, "election_id": self.election_id, **args}
        try:
            return self._retry_as_primary(lambda: call(body, timeout=self.timeout))["result"]
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.UNIMPLEMENTED and "unknown op" not in (e.details() or ""):
                raise CliError(
                    f"{op} needs p4kit-switch: this P4Runtime server has no call for it "
                    "(with BMv2, use simple_switch_CLI on its Thrift port)"
                ) from None
            raise CliError(f"{e.code().name}: {e.details()}") from None

    def read(self, entity: pb.Entity) -> list[pb.Entity]:
        req = pb.ReadRequest(device_id=self.device_id)
        req.entities.append(entity)
        try:
            return [e for rep in self.stub.Read(req, timeout=self.timeout) for e in rep.entities]
        except grpc.RpcError as e:
            raise CliError(rpc_message(e)) from None

    # ------------------------------------------------------------------ entry handles
    @staticmethod
    def entry_key(te: pb.TableEntry) -> bytes:
        matches = sorted(te.match, key=lambda m: m.field_id)
        return b"".join(m.SerializeToString(deterministic=True) for m in matches) + te.priority.to_bytes(
            4, "big"
        )

    def handle_of(self, te: pb.TableEntry) -> int:
        """The entry's handle, given now if this session has not seen the entry before."""
        table = self.handles.setdefault(te.table_id, {})
        key = self.entry_key(te)
        if key not in table:
            table[key] = self.next_handle.get(te.table_id, 0)
            self.next_handle[te.table_id] = table[key] + 1
        return table[key]

    def table_entries(self, table_id: int) -> list[tuple[int, pb.TableEntry]]:
        """Every entry of a table (with counters where it has them), by handle."""
        te = pb.TableEntry(table_id=table_id)
        out = [(self.handle_of(e.table_entry), e.table_entry) for e in self.read(pb.Entity(table_entry=te))]
        return sorted(out, key=lambda p: p[0])

    def entry_by_handle(self, table_id: int, handle: int) -> pb.TableEntry:
        for h, te in self.table_entries(table_id):
            if h == handle:
                return te
        raise CliError(f"Invalid table operation (INVALID_HANDLE): no entry with handle {handle}")

    def forget(self, te: pb.TableEntry) -> None:
        self.handles.get(te.table_id, {}).pop(self.entry_key(te), None)

    # ------------------------------------------------------------------ multicast nodes
    def new_node(self, rid: int, ports: list[int]) -> int:
        handle = self._next_node
        self._next_node += 1
        self.nodes[handle] = Node(rid, ports)
        return handle

    def node(self, handle: int) -> Node:
        if handle not in self.nodes:
            raise CliError(
                f"Invalid node handle {handle} (multicast nodes live in the p4kit-cli session that made them)"
            )
        return self.nodes[handle]
