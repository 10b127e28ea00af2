"""p4runtime-shell must accept the P4Info text we write, exactly the way users load it:
`p4runtime_sh.shell.setup(config=FwdPipeConfig(p4info_path, json_path))`.

setup() reads the file with its own text_format.Merge inside P4RuntimeClient.set_fwd_pipe_config,
pushes it to the device, reads it back and builds its name tables from it. To run that real code
path without a switch, the test serves P4Runtime from a small in-process gRPC server that does what a
device does with a pipeline config (stores it, returns it) and answers arbitration. Nothing of
p4runtime-shell is replaced.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from test_p4info import basic_model, full_model  # same directory (pytest puts it on sys.path)

from p4kit.compiler.p4info import build_p4info, write_p4info

sh = pytest.importorskip("p4runtime_sh.shell")


class _PipelineStore(p4runtime_pb2_grpc.P4RuntimeServicer):
    """The part of a P4Runtime device that setup() talks to."""

    def __init__(self) -> None:
        self.config = p4runtime_pb2.ForwardingPipelineConfig()
        self.lock = threading.Lock()

    def StreamChannel(self, request_iterator, context) -> Iterator[p4runtime_pb2.StreamMessageResponse]:
        for req in request_iterator:
            if req.HasField("arbitration"):
                rep = p4runtime_pb2.StreamMessageResponse()
                rep.arbitration.device_id = req.arbitration.device_id
                rep.arbitration.election_id.CopyFrom(req.arbitration.election_id)
                rep.arbitration.status.code = code_pb2.OK
                yield rep

    def SetForwardingPipelineConfig(self, request, context):
        with self.lock:
            self.config.CopyFrom(request.config)
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(self, request, context):
        rep = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        with self.lock:
            rep.config.p4info.CopyFrom(self.config.p4info)
            rep.config.cookie.CopyFrom(self.config.cookie)
        return rep


@pytest.fixture
def device():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    store = _PipelineStore()
    p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(store, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", store
    finally:
        server.stop(grace=None)


@pytest.mark.parametrize("model", [basic_model, full_model], ids=["basic", "full"])
def test_p4runtime_shell_setup_loads_our_p4info_text(tmp_path: Path, device, model):
    addr, store = device
    p4info = build_p4info(model())
    p4info_path = tmp_path / "prog.p4info.txtpb"
    write_p4info(p4info, p4info_path)
    json_path = tmp_path / "prog.json"
    json_path.write_text(json.dumps({"__meta__": {"version": [2, 23]}}))

    sh.setup(
        device_id=1,
        grpc_addr=addr,
        election_id=(0, 1),
        config=sh.FwdPipeConfig(str(p4info_path), str(json_path)),
        verbose=False,
    )
    try:
        # What the shell parsed from our file is what we built, field for field.
        assert store.config.p4info == p4info
        assert store.config.p4_device_config == json_path.read_bytes()
        ctx = sh.context
        P4Type = sh.P4Type
        if model is basic_model:
            assert ctx.get_obj_id(P4Type.table, "MyIngress.ipv4_lpm") == 37375156
            assert ctx.get_obj_id(P4Type.table, "ipv4_lpm") == 37375156  # shell's suffix lookup
            assert ctx.get_mf_id("MyIngress.ipv4_lpm", "hdr.ipv4.dstAddr") == 1
            assert ctx.get_param_id("MyIngress.ipv4_forward", "port") == 2
            # Build an entry the way users do: names, match syntax and params all resolve.
            te = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.ipv4_forward")
            te.match["hdr.ipv4.dstAddr"] = "10.0.1.0/24"
            te.action["dstAddr"] = "08:00:00:00:01:11"
            te.action["port"] = "1"
            msg = te.msg()
            assert msg.table_id == 37375156
            assert msg.match[0].lpm.prefix_len == 24
            assert msg.action.action.action_id == 28792405
        else:
            assert ctx.get_obj(P4Type.controller_packet_metadata, "packet_in") is not None
            assert ctx.get_obj(P4Type.digest, "mac_learn_digest_t") is not None
            assert ctx.get_obj(P4Type.direct_counter, "fwd_counter") is not None
            te = sh.TableEntry("MyIngress.fwd")
            te.match["meta.flag"] = "1"  # optional match, as P4Runtime 1.4 defines it
            assert te.msg().match[0].HasField("optional")
    finally:
        sh.teardown()
