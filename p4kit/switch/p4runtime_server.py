"""The P4Runtime (p4.v1) gRPC service of p4kit-switch, as simple_switch_grpc serves it.

Why this shape: the gRPC layer here only does what is about the protocol -- device ids, arbitration,
pipeline configuration, batching a Write's per-update errors into the google.rpc.Status details,
streaming Read answers, PacketIn/PacketOut with controller packet metadata and DigestList on the stream.
What an entity means is `p4rt_entities`; who is primary is `p4rt_arbitration`.

Packets to and from the controller, exactly as BMv2 does it:
- PacketOut: the P4Info `packet_out` controller header's fields (by metadata id, missing ones 0) are
  packed big-endian into a header that is prepended to the payload; the frame enters ingress on the CPU
  port (handed to `inject`, so the port loop's thread runs it).
- PacketIn: a frame the pipeline sends to the CPU port starts with the `packet_in` header; its fields
  become PacketIn metadata and the rest is the payload. Only primaries receive PacketIn.

Digests are batched into DigestLists by `p4rt_digests.DigestBatcher` as the DigestEntry's config asks
(list size, buffering timeout, duplicate suppression until a DigestListAck or the ack timeout); the
lists go to the primaries.

Entries written with an idle_timeout_ns are watched by `p4rt_idle.IdleWatcher`; the entries it finds
idle in one check go to the primaries as one IdleTimeoutNotification.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent import futures
from dataclasses import dataclass

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4kit.switch.errors import SwitchError
from p4kit.switch.p4info_index import ControllerHeaderInfo, P4InfoIndex
from p4kit.switch.p4rt_arbitration import Arbiter
from p4kit.switch.p4rt_codec import P4RTError, decode, encode, invalid
from p4kit.switch.p4rt_config import decode_device_config
from p4kit.switch.p4rt_consistency import check_consistency
from p4kit.switch.p4rt_digests import DigestBatch, DigestBatcher
from p4kit.switch.p4rt_entities import EntityService, from_switch_error
from p4kit.switch.p4rt_idle import IdleWatcher
from p4kit.switch.runtime import DigestMessage, PacketIn, Switch

log = logging.getLogger("p4kit.switch.p4runtime")

API_VERSION = "1.4.1"  # the p4.v1 protos this server is built from (p4runtime 1.4.1)
READ_BATCH = 256  # entities per ReadResponse
MAX_STREAM_BACKLOG = 10000  # queued PacketIn/DigestList per stream before new ones are dropped

SetAction = p4runtime_pb2.SetForwardingPipelineConfigRequest
GetType = p4runtime_pb2.GetForwardingPipelineConfigRequest


@dataclass
class Pipeline:
    """A verified forwarding pipeline config and its P4Info index."""

    config: p4runtime_pb2.ForwardingPipelineConfig
    index: P4InfoIndex
    bmv2_json: dict


class P4RuntimeService(p4runtime_pb2_grpc.P4RuntimeServicer):
    """The servicer. `inject(port, frame)` feeds a PacketOut frame to the dataplane (the port loop's
    inject; without one, the switch runs it inline and `transmit` sends its outputs)."""

    def __init__(
        self,
        switch: Switch,
        device_id: int = 0,
        cpu_port: int | None = None,
        inject: Callable[[int, bytes], None] | None = None,
        transmit: Callable[[int, bytes], object] | None = None,
        allow_swap: bool = True,
    ) -> None:
        self.switch = switch
        self.allow_swap = allow_swap  # simple_switch_grpc --disable-swap: the first program stays
        self.device_id = device_id
        self.cpu_port = cpu_port
        self.inject = inject
        self.transmit = transmit
        self.arbiter = Arbiter(device_id)
        self.pipeline: Pipeline | None = None
        self.entities: EntityService | None = None
        self._saved: Pipeline | None = None  # VERIFY_AND_SAVE, waiting for COMMIT
        self._lock = threading.RLock()  # one control operation at a time
        self._stream_ids = itertools.count(1)
        self.digests = DigestBatcher(self._send_digest_list, self._digest_config)
        self.digests.start()
        # the watcher confirms and sends under self._lock, so no Write deletes an entry it reports
        self.idle = IdleWatcher(self._send_idle_notification, self._entry_hit_ns, switch.now_ns, self._lock)
        self.idle.start()
        switch.set_packet_in_callback(self._on_packet_in)
        switch.set_digest_callback(self._on_digest)

    def close(self) -> None:
        """Stop the digest and idle timeout threads (the server is going away)."""
        self.digests.close()
        self.idle.close()

    # ====================================================================== helpers
    def _check_device(self, device_id: int) -> None:
        if device_id != self.device_id:
            raise P4RTError(
                grpc.StatusCode.NOT_FOUND, f"unknown device id {device_id} (this is {self.device_id})"
            )

    def _need_pipeline(self) -> tuple[Pipeline, EntityService]:
        if self.pipeline is None or self.entities is None:
            raise P4RTError(grpc.StatusCode.FAILED_PRECONDITION, "no forwarding pipeline config has been set")
        return self.pipeline, self.entities

    @staticmethod
    def _abort(context: grpc.ServicerContext, err: P4RTError) -> None:
        context.abort(err.code, err.message)

    # ====================================================================== Capabilities
    def Capabilities(
        self, request: p4runtime_pb2.CapabilitiesRequest, context: grpc.ServicerContext
    ) -> p4runtime_pb2.CapabilitiesResponse:
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    # ====================================================================== pipeline config
    def SetForwardingPipelineConfig(
        self, request: p4runtime_pb2.SetForwardingPipelineConfigRequest, context: grpc.ServicerContext
    ) -> p4runtime_pb2.SetForwardingPipelineConfigResponse:
        try:
            with self._lock:
                self._check_device(request.device_id)
                self.arbiter.check_writer(
                    role_name_of(request), request.election_id, request.HasField("election_id")
                )
                self._set_pipeline(request)
        except P4RTError as e:
            self._abort(context, e)
        except Exception as e:  # a bug here must still answer with a status that says so
            log.exception("SetForwardingPipelineConfig failed")
            context.abort(grpc.StatusCode.INTERNAL, f"internal error: {type(e).__name__}: {e}")
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def _verify(self, config: p4runtime_pb2.ForwardingPipelineConfig, compile_json: bool = True) -> Pipeline:
        """Check a config. With `compile_json`, the JSON is also compiled in a scratch switch (VERIFY,
        VERIFY_AND_SAVE); a commit compiles it in the real switch, which keeps its old pipeline when
        that fails."""
        if not config.HasField("p4info") or config.p4info.ByteSize() == 0:
            raise invalid("the config has no P4Info")
        doc = decode_device_config(config.p4_device_config)
        check_consistency(config.p4info, doc)  # also checks the JSON's shape
        if compile_json:
            try:
                Switch(drop_port=self.switch.drop_port).load_pipeline(doc)
            except SwitchError as e:
                raise invalid(f"BMv2 JSON rejected: {e}") from None
        return Pipeline(config, P4InfoIndex(config.p4info), doc)

    def _set_pipeline(self, request: p4runtime_pb2.SetForwardingPipelineConfigRequest) -> None:
        action = request.action
        if action == SetAction.VERIFY:
            self._verify(request.config)
        elif action == SetAction.VERIFY_AND_SAVE:
            self._saved = self._verify(request.config)
        elif action == SetAction.VERIFY_AND_COMMIT:
            self._commit(self._verify(request.config, compile_json=False))
        elif action == SetAction.COMMIT:
            if self._saved is None:
                raise P4RTError(grpc.StatusCode.FAILED_PRECONDITION, "COMMIT without a saved config")
            saved, self._saved = self._saved, None
            self._commit(saved)
        elif action == SetAction.RECONCILE_AND_COMMIT:
            self._reconcile(self._verify(request.config, compile_json=False))
        else:
            raise invalid("SetForwardingPipelineConfig needs an action (e.g. VERIFY_AND_COMMIT)")

    def _commit(self, pipeline: Pipeline) -> None:
        if not self.allow_swap and self.switch.has_pipeline:
            raise P4RTError(
                grpc.StatusCode.FAILED_PRECONDITION,
                "the switch runs with --disable-swap: its program cannot be replaced",
            )
        try:
            self.switch.load_pipeline(pipeline.bmv2_json)
        except SwitchError as e:
            raise invalid(f"BMv2 JSON rejected: {e}") from None
        self.pipeline = pipeline
        self.idle.reset()  # the old program's entries are gone
        self.entities = EntityService(pipeline.index, self.switch, self.idle)
        self.digests.reset()  # buffered and cached digests belong to the old program
        log.info("pipeline committed (%d tables)", len(pipeline.index.tables))

    def _reconcile(self, pipeline: Pipeline) -> None:
        """Commit a new config but keep the forwarding state: entries, members, groups, multicast
        groups, clone sessions, register cells and digest configs whose P4 objects still exist (by id,
        which P4Info derives from names) are written again; the rest is dropped."""
        old = self.entities
        if old is None:
            return self._commit(pipeline)
        if (
            self.pipeline is not None
            and self.pipeline.bmv2_json == pipeline.bmv2_json
            and self.pipeline.config.p4info == pipeline.config.p4info
        ):
            self.pipeline = Pipeline(pipeline.config, self.pipeline.index, self.pipeline.bmv2_json)
            return None
        saved: list[p4runtime_pb2.Entity] = []
        for probe in reconcile_probes():
            saved.extend(e for e in old.read(probe) if not e.table_entry.is_const)
        self._commit(pipeline)
        kept = 0
        for entity in saved:
            te = entity.table_entry if entity.HasField("table_entry") else None
            op = p4runtime_pb2.Update.MODIFY if _is_modify_only(entity) else p4runtime_pb2.Update.INSERT
            try:
                self.entities.write(p4runtime_pb2.Update(type=op, entity=entity))  # type: ignore[union-attr]
                kept += 1
            except P4RTError:
                if te is not None:
                    log.info("reconcile dropped an entry of table id %#x", te.table_id)
        log.info("reconcile kept %d of %d entities", kept, len(saved))
        return None

    def GetForwardingPipelineConfig(
        self, request: p4runtime_pb2.GetForwardingPipelineConfigRequest, context: grpc.ServicerContext
    ) -> p4runtime_pb2.GetForwardingPipelineConfigResponse:
        try:
            self._check_device(request.device_id)
            pipeline, _ = self._need_pipeline()
        except P4RTError as e:
            self._abort(context, e)
        cfg = pipeline.config
        out = p4runtime_pb2.ForwardingPipelineConfig()
        if cfg.HasField("cookie"):
            out.cookie.CopyFrom(cfg.cookie)
        rtype = request.response_type
        if rtype in (GetType.ALL, GetType.P4INFO_AND_COOKIE):
            out.p4info.CopyFrom(cfg.p4info)
        if rtype in (GetType.ALL, GetType.DEVICE_CONFIG_AND_COOKIE):
            out.p4_device_config = cfg.p4_device_config
        return p4runtime_pb2.GetForwardingPipelineConfigResponse(config=out)

    # ====================================================================== Write / Read
    def Write(
        self, request: p4runtime_pb2.WriteRequest, context: grpc.ServicerContext
    ) -> p4runtime_pb2.WriteResponse:
        try:
            with self._lock:
                self._check_device(request.device_id)
                self.arbiter.check_writer(
                    role_name_of(request), request.election_id, request.HasField("election_id")
                )
                _, entities = self._need_pipeline()
                if request.atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR:
                    raise P4RTError(
                        grpc.StatusCode.UNIMPLEMENTED,
                        "only CONTINUE_ON_ERROR atomicity is supported (as in BMv2)",
                    )
                errors: list[P4RTError | None] = []
                for update in request.updates:
                    try:
                        entities.write(update)
                        errors.append(None)
                    except P4RTError as e:
                        log.info("write failed: %s", e)
                        errors.append(e)
                    except Exception as e:  # one bad update must not hide the others' statuses
                        log.exception("write of one update failed")
                        errors.append(P4RTError(grpc.StatusCode.INTERNAL, f"{type(e).__name__}: {e}"))
                if any(u.entity.HasField("digest_entry") for u in request.updates):
                    self.digests.wake()  # deadlines follow the new config (or the digest is off)
        except P4RTError as e:
            self._abort(context, e)
        if any(errors):
            status = write_error_status(errors)
            context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
            context.set_code(grpc.StatusCode.UNKNOWN)
            context.set_details(status.message)
        return p4runtime_pb2.WriteResponse()

    def Read(
        self, request: p4runtime_pb2.ReadRequest, context: grpc.ServicerContext
    ) -> Iterator[p4runtime_pb2.ReadResponse]:
        try:
            with self._lock:
                self._check_device(request.device_id)
                _, entities = self._need_pipeline()
                found: list[p4runtime_pb2.Entity] = []
                for entity in request.entities:
                    found.extend(entities.read(entity))
        except P4RTError as e:
            self._abort(context, e)
        for start in range(0, len(found), READ_BATCH):
            yield p4runtime_pb2.ReadResponse(entities=found[start : start + READ_BATCH])
        if not found:
            yield p4runtime_pb2.ReadResponse()

    # ====================================================================== StreamChannel
    def StreamChannel(
        self, request_iterator: Iterator[p4runtime_pb2.StreamMessageRequest], context: grpc.ServicerContext
    ) -> Iterator[p4runtime_pb2.StreamMessageResponse]:
        stream_id = next(self._stream_ids)
        outbox: queue.Queue = queue.Queue()
        self.arbiter.register(stream_id, outbox)
        context.add_callback(lambda: outbox.put(None))
        reader = threading.Thread(
            target=self._read_stream,
            args=(stream_id, request_iterator, outbox),
            daemon=True,
            name=f"p4rt-stream-{stream_id}",
        )
        reader.start()
        try:
            while True:
                msg = outbox.get()
                if msg is None:
                    break
                if isinstance(msg, P4RTError):
                    context.abort(msg.code, msg.message)
                yield msg
        finally:
            self.arbiter.unregister(stream_id)

    def _read_stream(self, stream_id: int, requests: Iterator, outbox: queue.Queue) -> None:
        try:
            for req in requests:
                kind = req.WhichOneof("update")
                try:
                    if kind == "arbitration":
                        self.arbiter.arbitrate(stream_id, req.arbitration)
                    elif kind == "packet":
                        self._packet_out(stream_id, req.packet, outbox)
                    elif kind == "digest_ack":
                        self._digest_ack(stream_id, req.digest_ack)
                except P4RTError as e:
                    if kind == "arbitration":
                        outbox.put(e)
                        return
                    outbox.put(stream_error(e, req))
        except grpc.RpcError:
            pass
        except Exception:  # a bug must not leave the stream hanging
            log.exception("stream %d failed", stream_id)
        finally:
            outbox.put(None)

    def _packet_out(self, stream_id: int, packet: p4runtime_pb2.PacketOut, outbox: queue.Queue) -> None:
        if not self.arbiter.is_primary_stream(stream_id):
            raise P4RTError(grpc.StatusCode.PERMISSION_DENIED, "only the primary client may send PacketOut")
        pipeline, _ = self._need_pipeline()
        if self.cpu_port is None:
            raise P4RTError(grpc.StatusCode.FAILED_PRECONDITION, "the switch has no CPU port (--cpu-port)")
        header = pipeline.index.controller_headers.get("packet_out")
        frame = (pack_header(header, packet.metadata) if header else b"") + packet.payload
        if self.inject is not None:
            self.inject(self.cpu_port, frame)
            return
        try:
            outputs = self.switch.packet_out(frame)
        except SwitchError as e:
            raise from_switch_error(e) from None
        for port, data in outputs:
            if self.transmit is not None:
                self.transmit(port, data)

    def _digest_ack(self, stream_id: int, ack: p4runtime_pb2.DigestListAck) -> None:
        """The primary acknowledges a DigestList: its messages may be learned (sent) again."""
        if not self.arbiter.is_primary_stream(stream_id):
            raise P4RTError(grpc.StatusCode.PERMISSION_DENIED, "only the primary client may ack digest lists")
        _, entities = self._need_pipeline()
        if ack.digest_id not in entities.index.digests:
            raise invalid(f"unknown digest id {ack.digest_id:#x}")
        self.digests.ack(ack.digest_id, ack.list_id)  # an unknown or expired list id is no error

    # ====================================================================== dataplane -> controller
    def _send_to_primaries(self, msg: p4runtime_pb2.StreamMessageResponse) -> None:
        for client in self.arbiter.primaries():
            if client.outbox.qsize() < MAX_STREAM_BACKLOG:
                client.outbox.put(msg)

    def _on_packet_in(self, pkt: PacketIn) -> None:
        pipeline = self.pipeline
        if pipeline is None:
            return
        header = pipeline.index.controller_headers.get("packet_in")
        msg = p4runtime_pb2.StreamMessageResponse()
        if header is None:
            msg.packet.payload = pkt.data
        else:
            n = header.byte_length
            msg.packet.payload = pkt.data[n:]
            msg.packet.metadata.extend(unpack_header(header, pkt.data[:n]))
        self._send_to_primaries(msg)

    def _digest_config(self, digest_id: int) -> p4runtime_pb2.DigestEntry.Config | None:
        """The digest's DigestEntry config; None while no DigestEntry enables it."""
        entities = self.entities
        return None if entities is None else entities.store.digests.get(digest_id)

    def _on_digest(self, digest: DigestMessage) -> None:
        """Dataplane thread: hand the message to the batcher (which only buffers; it never sends here)."""
        entities = self.entities
        if entities is None:
            return
        info = entities.index.digest_by_name(digest.name)
        if info is not None:
            self.digests.add(info.id, digest.values)  # dropped unless a DigestEntry configures it

    def _send_digest_list(self, batch: DigestBatch) -> None:
        """Batcher thread: one finished list -> a DigestList to the primaries."""
        entities = self.entities
        if entities is None or batch.digest_id not in entities.index.digests:
            return  # the pipeline changed under the list
        msg = p4runtime_pb2.StreamMessageResponse()
        msg.digest.digest_id = batch.digest_id
        msg.digest.list_id = batch.list_id
        msg.digest.timestamp = batch.timestamp
        msg.digest.data.extend(entities.digest_data(batch.digest_id, v) for v in batch.values)
        self._send_to_primaries(msg)

    def _entry_hit_ns(self, table: str, handle: int) -> int | None:
        """Idle watcher thread: the entry's last hit on the switch's now_ns clock; None when gone."""
        try:
            return self.switch.table_hit_ns(table, handle)
        except SwitchError:
            return None

    def _send_idle_notification(self, expired: list[tuple[str, int]]) -> None:
        """Idle watcher thread, with self._lock held: the entries idle in one check -> one
        IdleTimeoutNotification to the primaries (none when no entry is left)."""
        entities = self.entities
        if entities is None:
            return
        msg = p4runtime_pb2.StreamMessageResponse()
        note = msg.idle_timeout_notification
        for table, handle in expired:
            te = entities.idle_entry_msg(table, handle)
            if te is not None:
                note.table_entry.append(te)
        if not note.table_entry:
            return  # the spec forbids an empty notification
        note.timestamp = time.time_ns()
        self._send_to_primaries(msg)


# ========================================================================== protocol helpers
def role_name_of(
    request: p4runtime_pb2.WriteRequest | p4runtime_pb2.SetForwardingPipelineConfigRequest,
) -> str:
    """The role of a Write/SetForwardingPipelineConfig request ("" = default role)."""
    if request.role:
        return request.role
    return str(request.role_id) if request.role_id else ""


def write_error_status(errors: list[P4RTError | None]) -> status_pb2.Status:
    """google.rpc.Status UNKNOWN with one p4.v1.Error per update (OK for those that succeeded)."""
    failed = sum(1 for e in errors if e is not None)
    status = status_pb2.Status(code=code_pb2.UNKNOWN, message=f"{failed} of {len(errors)} update(s) failed")
    for err in errors:
        p4err = p4runtime_pb2.Error(canonical_code=code_pb2.OK)
        if err is not None:
            p4err.canonical_code = err.code.value[0]
            p4err.message = err.message
        detail = any_pb2.Any()
        detail.Pack(p4err)
        status.details.append(detail)
    return status


def stream_error(
    err: P4RTError, req: p4runtime_pb2.StreamMessageRequest
) -> p4runtime_pb2.StreamMessageResponse:
    msg = p4runtime_pb2.StreamMessageResponse()
    msg.error.canonical_code = err.code.value[0]
    msg.error.message = err.message
    if req.HasField("packet"):
        msg.error.packet_out.packet_out.CopyFrom(req.packet)
    elif req.HasField("digest_ack"):
        msg.error.digest_list_ack.digest_list_ack.CopyFrom(req.digest_ack)
    return msg


def pack_header(header: ControllerHeaderInfo, metadata: Iterable[p4runtime_pb2.PacketMetadata]) -> bytes:
    """PacketOut metadata -> the packet_out header's bytes (fields in P4Info order, big-endian)."""
    values: dict[int, int] = {}
    by_id = {f.id: f for f in header.fields}
    for m in metadata:
        f = by_id.get(m.metadata_id)
        if f is None:
            raise invalid(f"packet_out has no metadata id {m.metadata_id}")
        values[f.id] = decode(m.value, f.bitwidth, f"packet_out metadata {f.name}")
    number = bits = 0
    for f in header.fields:
        number = (number << f.bitwidth) | values.get(f.id, 0)
        bits += f.bitwidth
    pad = (-bits) % 8
    return (number << pad).to_bytes((bits + pad) // 8, "big")


def unpack_header(header: ControllerHeaderInfo, data: bytes) -> list[p4runtime_pb2.PacketMetadata]:
    """The packet_in header's bytes -> PacketIn metadata (canonical bytestrings)."""
    total = header.byte_length * 8
    number = int.from_bytes(data.ljust(header.byte_length, b"\0"), "big")
    out = []
    shift = total
    for f in header.fields:
        shift -= f.bitwidth
        value = (number >> shift) & ((1 << f.bitwidth) - 1)
        out.append(p4runtime_pb2.PacketMetadata(metadata_id=f.id, value=encode(value)))
    return out


def reconcile_probes() -> list[p4runtime_pb2.Entity]:
    """Wildcard reads that dump the state RECONCILE_AND_COMMIT carries over (members before groups
    before entries, so references resolve when written again)."""
    return [
        p4runtime_pb2.Entity(action_profile_member=p4runtime_pb2.ActionProfileMember()),
        p4runtime_pb2.Entity(action_profile_group=p4runtime_pb2.ActionProfileGroup()),
        p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()),
        p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(is_default_action=True)),
        p4runtime_pb2.Entity(packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry()),
        p4runtime_pb2.Entity(register_entry=p4runtime_pb2.RegisterEntry()),
        p4runtime_pb2.Entity(digest_entry=p4runtime_pb2.DigestEntry()),
    ]


def _is_modify_only(entity: p4runtime_pb2.Entity) -> bool:
    if entity.HasField("table_entry"):
        return entity.table_entry.is_default_action
    return entity.HasField("register_entry")


class P4RuntimeServer:
    """A grpc.Server hosting one P4RuntimeService."""

    def __init__(self, service: P4RuntimeService, address: str, workers: int = 8) -> None:
        self.service = service
        self.address = address
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="p4rt"),
            options=[
                ("grpc.max_receive_message_length", 256 << 20),
                ("grpc.max_send_message_length", 256 << 20),
                ("grpc.so_reuseport", 0),
            ],
        )
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(service, self._server)
        try:
            self.port = self._server.add_insecure_port(address)
        except RuntimeError:
            self.port = 0
        if self.port == 0:
            raise OSError(f"cannot listen on {address} (in use, or not a local address)")

    def add_handlers(self, handler: grpc.GenericRpcHandler) -> None:
        """Another service on the same port (control_service.py); before `start`."""
        self._server.add_generic_rpc_handlers((handler,))

    def start(self) -> None:
        self._server.start()

    def stop(self, grace: float = 0.5) -> None:
        self._server.stop(grace).wait(grace + 1)
        self.service.close()

    def wait(self) -> None:
        self._server.wait_for_termination()
