"""The WAN's P4Runtime ports lie outside the kernel's ephemeral port range.

Why: a TCP socket in TIME_WAIT whose local port is a switch's (left by any outgoing connection of the
machine, such as the start-up probes of the switches' addresses) makes the switch's gRPC bind fail
with "Address already in use" while nothing listens there. The second test shows that failure on a
port inside the range, so the first one guards against a real hazard, not a convention."""

from __future__ import annotations

import socket
import time
from concurrent import futures
from pathlib import Path

import grpc

from topo.addressing import fabric, grpc_address
from topo.wan import default_wan


def _ephemeral_range() -> tuple[int, int]:
    low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    return int(low), int(high)


def test_every_switch_of_the_nine_site_wan_listens_below_the_ephemeral_range() -> None:
    low, high = _ephemeral_range()
    switches = fabric(default_wan()).switches
    assert len(switches) == 9
    for sw in switches:
        port = int(sw.grpc_addr.rsplit(":", 1)[1])
        assert not low <= port <= high, (sw.name, port, (low, high))
    # a topology of hundreds of sites stays below it too
    assert int(grpc_address(500).rsplit(":", 1)[1]) < low


def test_a_time_wait_socket_on_a_port_keeps_a_grpc_server_from_listening_there() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    client = socket.socket()
    client.bind(("127.0.0.1", 0))  # a port the kernel picked, as for any outgoing connection
    port = client.getsockname()[1]
    client.connect(listener.getsockname())
    accepted, _ = listener.accept()
    client.close()  # the side that closes first keeps TIME_WAIT on its local port
    time.sleep(0.05)
    accepted.close()
    listener.close()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    try:
        try:
            bound = server.add_insecure_port(f"127.0.0.1:{port}")
        except RuntimeError:
            bound = 0
        assert bound == 0, "the bind over a TIME_WAIT socket succeeded: the hazard is gone"
    finally:
        server.stop(None)
