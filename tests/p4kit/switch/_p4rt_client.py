"""Starting a real p4kit-switch process and talking P4Runtime to it with the raw p4.v1 stubs.

Why raw stubs besides p4runtime-shell: error tests need the exact gRPC status, the per-update
p4.v1.Error details of a failed Write, and several streams with chosen election ids.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import grpc
from google.protobuf import text_format
from google.rpc import status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from tests.localports import free_port, wait_listening


@contextlib.contextmanager
def switch_process(
    *args: str, device_id: int = 0, cpu_port: int | None = 255
) -> Iterator[tuple[str, subprocess.Popen]]:
    """Run `p4kit-switch ARGS -- --grpc-server-addr 127.0.0.1:<free> [--cpu-port N]`; yield (addr, proc)."""
    port = free_port()
    addr = f"127.0.0.1:{port}"
    target = ["--grpc-server-addr", addr] + (["--cpu-port", str(cpu_port)] if cpu_port is not None else [])
    cmd = [sys.executable, "-m", "p4kit.switch.cli", "--device-id", str(device_id), *args, "--", *target]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        wait_listening(port, proc, what="p4kit-switch")
        yield addr, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


class Stream:
    """One StreamChannel; answers land in `messages`."""

    def __init__(self, stub: p4runtime_pb2_grpc.P4RuntimeStub) -> None:
        self._out: queue.Queue = queue.Queue()
        self.messages: queue.Queue = queue.Queue()
        self.error: grpc.RpcError | None = None
        self._call = stub.StreamChannel(iter(self._out.get, None))
        self._t = threading.Thread(target=self._recv, daemon=True)
        self._t.start()

    def _recv(self) -> None:
        try:
            for msg in self._call:
                self.messages.put(msg)
        except grpc.RpcError as e:
            self.error = e
        self.messages.put(None)

    def send(self, msg: p4runtime_pb2.StreamMessageRequest) -> None:
        self._out.put(msg)

    def arbitrate(self, device_id: int, election: int | None, role: str = "") -> None:
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = device_id
        if election is not None:
            req.arbitration.election_id.high = election >> 64
            req.arbitration.election_id.low = election & ((1 << 64) - 1)
        if role:
            req.arbitration.role.name = role
        self.send(req)

    def next(self, kind: str | None = None, timeout: float = 3.0):
        end = time.monotonic() + timeout
        while True:
            msg = self.messages.get(timeout=max(0.01, end - time.monotonic()))
            if msg is None or kind is None or msg.WhichOneof("update") == kind:
                return msg

    def close(self) -> None:
        """End the stream and wait until the server has ended it too. The server forgets a stream
        before it ends it, so the next test's stream may claim the same election id at once;
        cancelling alone left that to a race (an id still in use is rejected)."""
        self._out.put(None)  # half-close: no more requests
        self._t.join(timeout=5)
        self._call.cancel()


class Client:
    def __init__(self, addr: str, device_id: int = 0) -> None:
        self.channel = grpc.insecure_channel(addr)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.device_id = device_id
        self.election = 1
        self.streams: list[Stream] = []

    def stream(self, election: int | None = 1, device_id: int | None = None) -> Stream:
        s = Stream(self.stub)
        s.arbitrate(self.device_id if device_id is None else device_id, election)
        self.streams.append(s)
        return s

    def close(self) -> None:
        for s in self.streams:
            s.close()
        self.channel.close()

    def set_pipeline(
        self, p4info: p4info_pb2.P4Info, device_config: bytes, action=None, election: int | None = None
    ):
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=self.device_id)
        req.election_id.low = self.election if election is None else election
        req.action = action or p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        req.config.cookie.cookie = 42
        return self.stub.SetForwardingPipelineConfig(req)

    def write(
        self, *updates: p4runtime_pb2.Update, election: int | None = None, device_id: int | None = None
    ):
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id if device_id is None else device_id)
        req.election_id.low = self.election if election is None else election
        req.updates.extend(updates)
        return self.stub.Write(req)

    def read(self, *entities: p4runtime_pb2.Entity) -> list[p4runtime_pb2.Entity]:
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        req.entities.extend(entities)
        return [e for rep in self.stub.Read(req) for e in rep.entities]


def update(kind: str, entity: p4runtime_pb2.Entity) -> p4runtime_pb2.Update:
    return p4runtime_pb2.Update(type=p4runtime_pb2.Update.Type.Value(kind), entity=entity)


def write_errors(err: grpc.RpcError) -> list[tuple[str, str]]:
    """The per-update (code name, message) list of a failed Write."""
    from google.rpc import code_pb2

    assert err.code() == grpc.StatusCode.UNKNOWN, err
    for key, value in err.trailing_metadata():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            out = []
            for detail in status.details:
                e = p4runtime_pb2.Error()
                detail.Unpack(e)
                out.append((code_pb2.Code.Name(e.canonical_code), e.message))
            return out
    raise AssertionError("no grpc-status-details-bin")


def parse_p4info(text: str) -> p4info_pb2.P4Info:
    return text_format.Parse(text, p4info_pb2.P4Info())
