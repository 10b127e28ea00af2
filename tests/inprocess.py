"""Real p4kit switches in this process, each behind a real P4Runtime server on a loopback port, for a
fabric: what the controller's own planner and installer then program over gRPC, while a test feeds
packets straight into the switches (tests/p4src/inc_sim.py, tests/controller/test_edge_multicast.py)."""

from __future__ import annotations

from controller.fabric import Fabric
from p4kit.switch.p4runtime_server import P4RuntimeServer, P4RuntimeService
from p4kit.switch.runtime import Switch


def serve_switches(fabric: Fabric) -> tuple[dict[str, Switch], list[P4RuntimeServer]]:
    """One switch and server per fabric switch; each FabricSwitch's grpc_addr is set to its server."""
    switches: dict[str, Switch] = {}
    servers: list[P4RuntimeServer] = []
    for sw in fabric.switches:
        switch = Switch()
        server = P4RuntimeServer(P4RuntimeService(switch, sw.device_id), "127.0.0.1:0")
        server.start()
        sw.grpc_addr = f"127.0.0.1:{server.port}"
        switches[sw.name] = switch
        servers.append(server)
    return switches, servers
