"""StreamChannel arbitration: primary/backup by election id, re-election, device id and id clashes."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import code_pb2

from ._p4rt_client import Client, switch_process

DEV = 7


@pytest.fixture(scope="module")
def addr():
    with switch_process("--no-p4", device_id=DEV) as (a, _):
        yield a


@pytest.fixture
def client(addr):
    c = Client(addr, DEV)
    yield c
    c.close()


def election(msg) -> int:
    e = msg.arbitration.election_id
    return (e.high << 64) | e.low


def test_primary_then_backup_then_takeover_and_reelection(client) -> None:
    a = client.stream(election=10)
    m = a.next("arbitration")
    assert m.arbitration.status.code == code_pb2.OK and election(m) == 10 and m.arbitration.device_id == DEV
    b = client.stream(election=5)
    m = b.next("arbitration")
    assert m.arbitration.status.code == code_pb2.ALREADY_EXISTS and election(m) == 10
    c = client.stream(election=20)  # a higher id takes over: everybody is told
    assert c.next("arbitration").arbitration.status.code == code_pb2.OK
    m = a.next("arbitration")
    assert m.arbitration.status.code == code_pb2.ALREADY_EXISTS and election(m) == 20
    assert b.next("arbitration").arbitration.status.code == code_pb2.ALREADY_EXISTS
    c.close()  # the primary goes away: the next highest (a, 10) becomes primary
    m = a.next("arbitration", timeout=5)
    assert m.arbitration.status.code == code_pb2.OK and election(m) == 10
    m = b.next("arbitration", timeout=5)
    assert m.arbitration.status.code == code_pb2.ALREADY_EXISTS and election(m) == 10


def test_wrong_device_id_closes_the_stream(client) -> None:
    s = client.stream(election=1, device_id=DEV + 1)
    assert s.next(timeout=5) is None
    assert s.error is not None and s.error.code() == grpc.StatusCode.NOT_FOUND


def test_election_id_in_use_is_invalid_argument(client) -> None:
    a = client.stream(election=33)
    assert a.next("arbitration").arbitration.status.code == code_pb2.OK
    b = client.stream(election=33)
    assert b.next(timeout=5) is None
    assert b.error is not None and b.error.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_backup_without_primary_is_told_not_found(client) -> None:
    s = client.stream(election=None)
    m = s.next("arbitration")
    assert m.arbitration.status.code == code_pb2.NOT_FOUND


def test_packet_out_from_a_backup_is_refused_on_the_stream(client) -> None:
    primary = client.stream(election=50)
    assert primary.next("arbitration").arbitration.status.code == code_pb2.OK
    backup = client.stream(election=40)
    assert backup.next("arbitration").arbitration.status.code == code_pb2.ALREADY_EXISTS
    from p4.v1 import p4runtime_pb2 as pb

    req = pb.StreamMessageRequest()
    req.packet.payload = b"\x00" * 20
    backup.send(req)
    err = backup.next("error").error
    assert (
        err.canonical_code == code_pb2.PERMISSION_DENIED
        and err.packet_out.packet_out.payload == req.packet.payload
    )
