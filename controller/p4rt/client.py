"""A P4Runtime connection to one switch: arbitration as primary, pipeline push, batched writes, reads,
packet-out/in and digests, with errors that say which update failed and why."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import grpc
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

_CODE_NAMES = {v: k for k, v in code_pb2.Code.items()}

# A Write's per-update errors travel in the trailing metadata (grpc-status-details-bin): for a batch
# of thousands of updates that is hundreds of KB, and at gRPC's default limit (8 KB soft, 16 KB hard)
# the client got "metadata size exceeds hard limit" instead of the switch's reasons.
MAX_METADATA = 8 << 20
SHOWN_UPDATES = 3
CHANNEL_OPTIONS = [
    ("grpc.max_metadata_size", MAX_METADATA),
    ("grpc.absolute_max_metadata_size", MAX_METADATA),
]


@dataclass
class UpdateError:
    """Why one update of a batch failed (from the p4.v1.Error details of the Write status)."""

    index: int
    code: int
    message: str

    @property
    def code_name(self) -> str:
        return _CODE_NAMES.get(self.code, str(self.code))

    def __str__(self) -> str:
        return f"update #{self.index}: {self.code_name}: {self.message}"


class P4RuntimeError(Exception):
    """A failed P4Runtime call; for a Write, `updates` lists each failed update."""

    def __init__(
        self,
        switch: str,
        call: str,
        code: grpc.StatusCode | None,
        message: str,
        updates: list[UpdateError] | None = None,
    ) -> None:
        self.switch = switch
        self.call = call
        self.code = code
        self.details = message
        self.updates = updates or []
        text = f"{switch}: {call} failed"
        if code is not None:
            text += f" ({code.name})"
        if message:
            text += f": {message}"
        if self.updates:  # the first few reasons: a batch of thousands would make a page of text
            text += "; " + "; ".join(str(u) for u in self.updates[:SHOWN_UPDATES])
            if len(self.updates) > SHOWN_UPDATES:
                text += f"; and {len(self.updates) - SHOWN_UPDATES} more failed update(s)"
        super().__init__(text)


def _update_errors(err: grpc.RpcError) -> list[UpdateError]:
    """The per-update errors a server packs into the Write status (google.rpc.Status details)."""
    out: list[UpdateError] = []
    for key, value in err.trailing_metadata() or ():
        if key != "grpc-status-details-bin":
            continue
        status = status_pb2.Status()
        status.ParseFromString(value)
        for i, detail in enumerate(status.details):
            p4err = p4runtime_pb2.Error()
            if detail.Unpack(p4err) and p4err.canonical_code != code_pb2.OK:
                out.append(UpdateError(i, p4err.canonical_code, p4err.message))
    return out


class SwitchConnection:
    """One switch: a gRPC channel plus the StreamChannel that holds our primary arbitration.

    The stream stays open for the connection's lifetime (the switch forgets who is primary when it
    closes); a background thread files its messages into queues: arbitration answers, packet-ins, digests.
    """

    def __init__(
        self,
        name: str,
        address: str,
        device_id: int = 0,
        election_id: tuple[int, int] = (0, 1),
        timeout: float = 10.0,
    ) -> None:
        self.name = name
        self.address = address
        self.device_id = device_id
        self.election_id = election_id
        self.timeout = timeout
        self._channel: grpc.Channel | None = None
        self._stub: p4runtime_pb2_grpc.P4RuntimeStub | None = None
        self._requests: queue.Queue[p4runtime_pb2.StreamMessageRequest | None] = queue.Queue()
        self._arbitration: queue.Queue[p4runtime_pb2.MasterArbitrationUpdate] = queue.Queue()
        self.packet_ins: queue.Queue[p4runtime_pb2.PacketIn] = queue.Queue()
        self.digests: queue.Queue[p4runtime_pb2.DigestList] = queue.Queue()
        self._reader: threading.Thread | None = None
        self.stream_error: grpc.RpcError | None = None

    # --- connection -------------------------------------------------------------------------------

    @property
    def stub(self) -> p4runtime_pb2_grpc.P4RuntimeStub:
        if self._stub is None:
            raise P4RuntimeError(self.name, "call", None, "not connected")
        return self._stub

    def _election(self) -> p4runtime_pb2.Uint128:
        return p4runtime_pb2.Uint128(high=self.election_id[0], low=self.election_id[1])

    def connect(self) -> None:
        """Open the channel and the stream, and become primary; raises P4RuntimeError otherwise."""
        self._channel = grpc.insecure_channel(self.address, options=CHANNEL_OPTIONS)
        try:
            grpc.channel_ready_future(self._channel).result(timeout=self.timeout)
        except grpc.FutureTimeoutError:
            self._channel.close()
            self._channel = None
            raise P4RuntimeError(
                self.name, "connect", None, f"no P4Runtime server answers at {self.address}"
            ) from None
        self._stub = p4runtime_pb2_grpc.P4RuntimeStub(self._channel)
        stream = self._stub.StreamChannel(self._request_iter())
        self._reader = threading.Thread(
            target=self._read_stream, args=(stream,), daemon=True, name=f"p4rt-stream-{self.name}"
        )
        self._reader.start()
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.CopyFrom(self._election())
        self._requests.put(req)
        try:
            answer = self._arbitration.get(timeout=self.timeout)
        except queue.Empty:
            msg = str(self.stream_error.details()) if self.stream_error else "no arbitration answer"
            self.close()
            raise P4RuntimeError(self.name, "arbitration", None, msg) from None
        if answer.status.code != code_pb2.OK:
            self.close()
            raise P4RuntimeError(
                self.name,
                "arbitration",
                None,
                f"not primary for device {self.device_id}: {answer.status.message}",
            )

    def _request_iter(self) -> Iterator[p4runtime_pb2.StreamMessageRequest]:
        while True:
            req = self._requests.get()
            if req is None:
                return
            yield req

    def _read_stream(self, stream: Iterator[p4runtime_pb2.StreamMessageResponse]) -> None:
        try:
            for msg in stream:
                kind = msg.WhichOneof("update")
                if kind == "arbitration":
                    self._arbitration.put(msg.arbitration)
                elif kind == "packet":
                    self.packet_ins.put(msg.packet)
                elif kind == "digest":
                    self.digests.put(msg.digest)
                    ack = p4runtime_pb2.StreamMessageRequest()
                    ack.digest_ack.digest_id = msg.digest.digest_id
                    ack.digest_ack.list_id = msg.digest.list_id
                    self._requests.put(ack)
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.CANCELLED:
                self.stream_error = err

    def close(self) -> None:
        self._requests.put(None)
        if self._channel is not None:
            self._channel.close()
        self._channel = None
        self._stub = None

    def __enter__(self) -> SwitchConnection:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- calls --------------------------------------------------------------------------------------

    def _fail(self, call: str, err: grpc.RpcError) -> P4RuntimeError:
        return P4RuntimeError(self.name, call, err.code(), err.details() or "", _update_errors(err))

    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes, cookie: int = 0) -> None:
        """Push a pipeline with VERIFY_AND_COMMIT; device_config is the BMv2 JSON (raw bytes)."""
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            election_id=self._election(),
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
        )
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        req.config.cookie.cookie = cookie
        try:
            self.stub.SetForwardingPipelineConfig(req, timeout=self.timeout * 3)
        except grpc.RpcError as err:
            raise self._fail("SetForwardingPipelineConfig", err) from None

    def get_pipeline(
        self,
        response_type: int = p4runtime_pb2.GetForwardingPipelineConfigRequest.ALL,
        timeout: float | None = None,
    ) -> p4runtime_pb2.ForwardingPipelineConfig:
        """`timeout`: seconds for this call (default: the connection's)."""
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id, response_type=response_type
        )
        try:
            return self.stub.GetForwardingPipelineConfig(req, timeout=timeout or self.timeout).config
        except grpc.RpcError as err:
            raise self._fail("GetForwardingPipelineConfig", err) from None

    def write(
        self,
        updates: Iterable[p4runtime_pb2.Update],
        atomicity: int = p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR,
    ) -> None:
        """Send one batch; raises P4RuntimeError listing each failed update."""
        req = p4runtime_pb2.WriteRequest(
            device_id=self.device_id, election_id=self._election(), atomicity=atomicity
        )
        req.updates.extend(updates)
        if not req.updates:
            return
        try:
            self.stub.Write(req, timeout=self.timeout)
        except grpc.RpcError as err:
            raise self._fail("Write", err) from None

    def insert(self, entities: Iterable[p4runtime_pb2.Entity]) -> None:
        self.write(_updates(p4runtime_pb2.Update.INSERT, entities))

    def modify(self, entities: Iterable[p4runtime_pb2.Entity]) -> None:
        self.write(_updates(p4runtime_pb2.Update.MODIFY, entities))

    def delete(self, entities: Iterable[p4runtime_pb2.Entity]) -> None:
        self.write(_updates(p4runtime_pb2.Update.DELETE, entities))

    def read(
        self, entities: Iterable[p4runtime_pb2.Entity], timeout: float | None = None
    ) -> list[p4runtime_pb2.Entity]:
        """Read with the given (possibly wildcard) entities; returns every matching entity.
        `timeout`: seconds for this call (default: the connection's)."""
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        req.entities.extend(entities)
        out: list[p4runtime_pb2.Entity] = []
        try:
            for resp in self.stub.Read(req, timeout=timeout or self.timeout):
                out.extend(resp.entities)
        except grpc.RpcError as err:
            raise self._fail("Read", err) from None
        return out

    def packet_out(self, payload: bytes, metadata: dict[int, bytes] | None = None) -> None:
        req = p4runtime_pb2.StreamMessageRequest()
        req.packet.payload = payload
        for mid, value in (metadata or {}).items():
            req.packet.metadata.add(metadata_id=mid, value=value)
        self._requests.put(req)


def _updates(kind: int, entities: Iterable[p4runtime_pb2.Entity]) -> list[p4runtime_pb2.Update]:
    return [p4runtime_pb2.Update(type=kind, entity=e) for e in entities]
