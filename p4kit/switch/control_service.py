"""What simple_switch_CLI asks of simple_switch over Thrift and P4Runtime has no message for: the egress
queues' depth and rate, the switch's clock, its ports. Served beside P4Runtime on the same gRPC port.

Why a service of our own: simple_switch_grpc answers these only on its Thrift port, and p4kit has no
Thrift server; `p4kit-cli` speaks P4Runtime. One generic method, `/p4kit.v1.SwitchControl/Call`,
takes a JSON object `{"op": ..., "device_id": ..., "election_id": ..., ...}` and answers a JSON
object, so no protocol compiler is needed and any gRPC client can call it. A P4Runtime server that is
not p4kit-switch answers UNIMPLEMENTED, which `p4kit-cli` turns into a clear error.

Changing a queue is a write: as for P4Runtime's Write, only the primary client (its election id) may
do it, or anyone while no client is connected.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import grpc
from p4.v1 import p4runtime_pb2

from p4kit.switch.errors import SwitchError
from p4kit.switch.p4rt_codec import P4RTError

SERVICE = "p4kit.v1.SwitchControl"
METHOD = f"/{SERVICE}/Call"

Handler = Callable[[dict[str, Any]], Any]


def encode(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def decode(data: bytes) -> Any:
    return json.loads(data.decode())


class SwitchControl:
    """The ops; `ports` is the port loop's {number: interface} (empty for a switch without one)."""

    def __init__(
        self,
        switch: Any,
        service: Any,
        ports: dict[int, str],
        device_id: int,
        info: dict[str, Any] | None = None,
        started: float | None = None,
    ) -> None:
        self.switch = switch
        self.service = service  # the P4RuntimeService, for its arbitration
        self.ports = dict(ports)
        self.device_id = device_id
        self.info = {"device_id": device_id, **(info or {})}  # what switch_info shows
        self.started = time.monotonic() if started is None else started
        self.ops: dict[str, tuple[bool, Handler]] = {  # name -> (is a write, handler)
            "set_queue_depth": (True, self._set_queue_depth),
            "set_queue_rate": (True, self._set_queue_rate),
            "get_time_elapsed_us": (False, lambda req: int((time.monotonic() - self.started) * 1e6)),
            "get_time_since_epoch_us": (False, lambda req: time.time_ns() // 1000),
            "show_ports": (False, lambda req: [[n, i, _is_up(i)] for n, i in sorted(self.ports.items())]),
            "switch_info": (False, lambda req: self.info),
            "set_crc_parameters": (True, self._set_crc_parameters),
        }

    # ------------------------------------------------------------------ ops
    @staticmethod
    def _int(req: dict[str, Any], key: str, required: bool = True) -> int | None:
        v = req.get(key)
        if v is None:
            if required:
                raise P4RTError(grpc.StatusCode.INVALID_ARGUMENT, f"'{key}' is missing")
            return None
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise P4RTError(grpc.StatusCode.INVALID_ARGUMENT, f"'{key}' must be a non-negative integer")
        return v

    def _port_and_priority(self, req: dict[str, Any]) -> tuple[int | None, int | None]:
        port, priority = self._int(req, "port", False), self._int(req, "priority", False)
        if priority is not None and port is None:
            raise P4RTError(grpc.StatusCode.INVALID_ARGUMENT, "a priority needs a port")
        return port, priority

    def _set_queue_depth(self, req: dict[str, Any]) -> None:
        depth = self._int(req, "depth")
        assert depth is not None
        self.switch.set_queue_depth(depth, *self._port_and_priority(req))

    def _set_queue_rate(self, req: dict[str, Any]) -> None:
        pps = self._int(req, "pps")
        assert pps is not None
        self.switch.set_queue_rate(float(pps), *self._port_and_priority(req))

    def _set_crc_parameters(self, req: dict[str, Any]) -> None:
        name = req.get("name")
        if not isinstance(name, str):
            raise P4RTError(grpc.StatusCode.INVALID_ARGUMENT, "'name' must be a string")
        width = req.get("width")
        if width not in (16, 32):
            raise P4RTError(grpc.StatusCode.INVALID_ARGUMENT, "'width' must be 16 or 32")
        algo = self.switch.calculation_algo(name)
        if algo != f"crc{width}_custom":
            raise P4RTError(
                grpc.StatusCode.INVALID_ARGUMENT, f"calculation '{name}' uses {algo}, not crc{width}_custom"
            )
        values = [self._int(req, k) for k in ("polynomial", "initial", "final_xor")]
        flags = [req.get(k) for k in ("reflect_data", "reflect_remainder")]
        if not all(isinstance(f, bool) for f in flags):
            raise P4RTError(grpc.StatusCode.INVALID_ARGUMENT, "the reflect flags must be true or false")
        self.switch.set_crc_parameters(name, *values, *flags)

    # ------------------------------------------------------------------ the gRPC method
    def call(self, request: Any, context: grpc.ServicerContext) -> bytes:
        try:
            if not isinstance(request, dict):
                raise P4RTError(grpc.StatusCode.INVALID_ARGUMENT, "the request must be a JSON object")
            op = request.get("op")
            if op not in self.ops:
                raise P4RTError(
                    grpc.StatusCode.UNIMPLEMENTED,
                    f"unknown op {op!r} (known: {', '.join(sorted(self.ops))})",
                )
            if request.get("device_id", 0) != self.device_id:
                raise P4RTError(grpc.StatusCode.NOT_FOUND, f"no device {request.get('device_id')}")
            is_write, handler = self.ops[op]
            if is_write:
                self._check_writer(request.get("election_id"))
            return encode({"result": handler(request)})
        except P4RTError as e:
            context.abort(e.code, e.message)
        except SwitchError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        raise AssertionError("unreachable")  # context.abort raises

    def _check_writer(self, election: Any) -> None:
        if election is not None and (isinstance(election, bool) or not isinstance(election, int)):
            raise P4RTError(grpc.StatusCode.INVALID_ARGUMENT, "'election_id' must be an integer")
        value = election or 0
        uint128 = p4runtime_pb2.Uint128(high=value >> 64, low=value & ((1 << 64) - 1))
        self.service.arbiter.check_writer("", uint128, election is not None)

    def handlers(self) -> grpc.GenericRpcHandler:
        method = grpc.unary_unary_rpc_method_handler(
            self.call, request_deserializer=_lenient_decode, response_serializer=lambda b: b
        )
        return grpc.method_handlers_generic_handler(SERVICE, {"Call": method})


def _is_up(iface: str) -> bool:
    try:
        with open(f"/sys/class/net/{iface}/operstate") as f:
            return f.read().strip() in ("up", "unknown")  # veths in some namespaces say unknown
    except OSError:
        return False


def _lenient_decode(data: bytes) -> Any:
    """A body that is not JSON reaches `call` as its bytes (not a dict: INVALID_ARGUMENT); gRPC would
    answer INTERNAL for a deserializer that raises or returns None."""
    try:
        return decode(data)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return data
