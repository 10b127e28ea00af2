"""Connections to every switch of the topology, kept alive: reconnect after a break, and notice a switch
that restarted (it comes back without a pipeline) so the manager can provision it again.

The service connects with a higher election id than `tributary run`'s own provisioning connection, so
it becomes primary even while that one is still open; a restarted controller takes the same id back.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from controller.p4rt import P4InfoIndex, P4RuntimeError, SwitchConnection
from controller.provision import Pipeline
from controller.service.topology import Topology

SERVICE_ELECTION_ID = (1, 0)
CONNECT_TIMEOUT_S = 5.0  # channel and arbitration; a live switch answers in milliseconds


def load_pipeline(p4info_path: Path, device_config_path: Path) -> Pipeline:
    """A compiled pipeline from its files (P4Info text or binary, BMv2 JSON)."""
    info = p4info_pb2.P4Info()
    raw = p4info_path.read_bytes()
    try:
        text_format.Parse(raw.decode(), info)
    except (UnicodeDecodeError, text_format.ParseError):
        info.ParseFromString(raw)
    return Pipeline(info, device_config_path.read_bytes())


def _listening(addr: str, timeout: float = 1.0) -> bool:
    host, _, port = addr.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


@dataclass
class SwitchStatus:
    name: str
    address: str
    device_id: int
    reachable: bool = False
    pipeline_loaded: bool = False
    last_error: str = ""
    reprovisioned: int = 0  # how often the service found it without a pipeline and pushed one
    in_sync: bool = False  # the last reconcile left it holding every entry the store asks for
    checked_at: float = 0.0


@dataclass
class SwitchPool:
    topology: Topology
    pipeline: Pipeline
    timeout: float = 30.0  # a Write of thousands of register resets takes seconds on a busy host
    election_id: tuple[int, int] = SERVICE_ELECTION_ID
    conns: dict[str, SwitchConnection] = field(default_factory=dict)
    status: dict[str, SwitchStatus] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.index = P4InfoIndex(self.pipeline.p4info)
        self._lock = threading.Lock()
        self._connecting = {sw.name: threading.Lock() for sw in self.topology.fabric.switches}
        for sw in self.topology.fabric.switches:
            self.status[sw.name] = SwitchStatus(sw.name, sw.grpc_addr, sw.device_id)

    def connect(self, name: str) -> SwitchConnection | None:
        """The live connection to `name`, opening a new one if the old one broke; None if unreachable.

        Opening one happens outside the pool's lock and within CONNECT_TIMEOUT_S: a switch that listens
        but does not answer (stopped, overloaded) costs only the callers that need that switch, and
        only seconds."""
        with self._connecting[name]:  # one attempt per switch at a time; the others wait for it
            with self._lock:
                conn = self.conns.get(name)
                if conn is not None and conn.stream_error is None and conn._stub is not None:
                    return conn
                if conn is not None:
                    self.conns.pop(name, None)
            if conn is not None:
                conn.close()
            st = self.status[name]
            sw = self.topology.fabric.switch(name)
            if not _listening(sw.grpc_addr):  # fail fast: a gRPC connect would wait the whole timeout
                st.reachable, st.pipeline_loaded, st.in_sync = False, False, False
                st.last_error = f"{name}: nothing listens at {sw.grpc_addr}"
                return None
            conn = SwitchConnection(name, sw.grpc_addr, sw.device_id, self.election_id, CONNECT_TIMEOUT_S)
            try:
                conn.connect()
            except P4RuntimeError as exc:
                st.reachable, st.pipeline_loaded, st.in_sync = False, False, False
                st.last_error = str(exc)
                return None
            conn.timeout = self.timeout  # for its calls from now on
            with self._lock:
                self.conns[name] = conn
            st.reachable, st.last_error = True, ""
            return conn

    def has_pipeline(self, conn: SwitchConnection, timeout: float | None = None) -> bool:
        """False when the switch holds no pipeline (it restarted, or was never provisioned)."""
        try:
            cfg = conn.get_pipeline(
                p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE, timeout=timeout
            )
        except P4RuntimeError as exc:
            if exc.code in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND):
                return False
            raise
        return len(cfg.p4info.tables) > 0

    def push_pipeline(self, conn: SwitchConnection) -> None:
        conn.set_pipeline(self.pipeline.p4info, self.pipeline.device_config)

    def live(self) -> dict[str, SwitchConnection]:
        """The connections that are up now (a snapshot; writers use it for one operation)."""
        with self._lock:
            return {n: c for n, c in self.conns.items() if c.stream_error is None and c._stub is not None}

    def mark_down(self, name: str, why: str) -> None:
        with self._lock:
            st = self.status[name]
            st.reachable, st.pipeline_loaded, st.in_sync, st.last_error = False, False, False, why
            conn = self.conns.pop(name, None)
        if conn is not None:
            conn.close()

    def note(self, name: str, pipeline_loaded: bool, in_sync: bool | None = None) -> None:
        st = self.status[name]
        st.pipeline_loaded = pipeline_loaded
        if in_sync is not None:
            st.in_sync = in_sync
        st.checked_at = time.time()

    def close(self) -> None:
        with self._lock:
            for conn in self.conns.values():
                conn.close()
            self.conns.clear()
