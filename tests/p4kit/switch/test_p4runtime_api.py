"""P4Runtime Write/Read/pipeline rules against a real p4kit-switch process, with raw p4.v1 stubs."""

from __future__ import annotations

import json

import grpc
import pytest
from p4.v1 import p4runtime_pb2 as pb

from p4kit.switch.p4rt_config import wrap_legacy

from ._p4rt_client import Client, switch_process, update, write_errors
from ._switch_programs import bmv2_json, p4info

DEV = 3
LPM = 37375156
ACL = 44506256
FWD, DROP, TO_CPU, MCAST, NOACTION = 28792405, 25652968, 23118640, 18426021, 21257015
PORT_COUNTER = 309010261
REG = 371444078
JSON_BYTES = json.dumps(bmv2_json()).encode()


@pytest.fixture(scope="module")
def switch_addr():
    with switch_process("--no-p4", device_id=DEV) as (addr, _):
        yield addr


@pytest.fixture
def client(switch_addr):
    c = Client(switch_addr, DEV)
    s = c.stream(election=1)
    assert s.next("arbitration").arbitration.status.code == 0
    c.set_pipeline(p4info(), JSON_BYTES)  # a fresh pipeline: empty tables for every test
    yield c
    c.close()


def lpm_entry(prefix: bytes, plen: int, port: bytes = b"\x02", mac: bytes = b"\x02\0\0\0\0\x02") -> pb.Entity:
    te = pb.TableEntry(table_id=LPM)
    m = te.match.add(field_id=1)
    m.lpm.value, m.lpm.prefix_len = prefix, plen
    te.action.action.action_id = FWD
    te.action.action.params.add(param_id=1, value=mac)
    te.action.action.params.add(param_id=2, value=port)
    return pb.Entity(table_entry=te)


def acl_entry(value: bytes, mask: bytes, priority: int, action: int = DROP) -> pb.Entity:
    te = pb.TableEntry(table_id=ACL, priority=priority)
    m = te.match.add(field_id=1)
    m.ternary.value, m.ternary.mask = value, mask
    te.action.action.action_id = action
    return pb.Entity(table_entry=te)


def all_lpm(client: Client) -> list[pb.TableEntry]:
    return [e.table_entry for e in client.read(pb.Entity(table_entry=pb.TableEntry(table_id=LPM)))]


def code_of(excinfo) -> grpc.StatusCode:
    return excinfo.value.code()


# ------------------------------------------------------------------------------------------------ basics
def test_capabilities(switch_addr) -> None:
    c = Client(switch_addr, DEV)
    assert c.stub.Capabilities(pb.CapabilitiesRequest()).p4runtime_api_version.startswith("1.")
    c.close()


def test_no_pipeline_is_failed_precondition() -> None:
    with switch_process("--no-p4", device_id=DEV) as (addr, _):
        c = Client(addr, DEV)
        for call in (
            lambda: c.read(pb.Entity(table_entry=pb.TableEntry())),
            lambda: c.stub.GetForwardingPipelineConfig(pb.GetForwardingPipelineConfigRequest(device_id=DEV)),
        ):
            with pytest.raises(grpc.RpcError) as e:
                call()
            assert code_of(e) == grpc.StatusCode.FAILED_PRECONDITION
        c.close()


def test_wrong_device_id_is_not_found(client) -> None:
    with pytest.raises(grpc.RpcError) as e:
        client.write(update("INSERT", lpm_entry(b"\x0a\0\0\0", 8)), device_id=DEV + 1)
    assert code_of(e) == grpc.StatusCode.NOT_FOUND


def test_get_pipeline_config_response_types(client) -> None:
    T = pb.GetForwardingPipelineConfigRequest
    get = lambda t: client.stub.GetForwardingPipelineConfig(T(device_id=DEV, response_type=t)).config  # noqa: E731
    full = get(T.ALL)
    assert full.p4info == p4info() and full.p4_device_config == JSON_BYTES and full.cookie.cookie == 42
    only = get(T.COOKIE_ONLY)
    assert only.cookie.cookie == 42 and not only.HasField("p4info") and not only.p4_device_config
    info = get(T.P4INFO_AND_COOKIE)
    assert info.p4info == p4info() and not info.p4_device_config
    dev = get(T.DEVICE_CONFIG_AND_COOKIE)
    assert dev.p4_device_config == JSON_BYTES and not dev.HasField("p4info")


def test_legacy_device_config_wrapper_is_accepted(client) -> None:
    client.set_pipeline(p4info(), wrap_legacy(JSON_BYTES))
    client.write(update("INSERT", lpm_entry(b"\x0a\0\0\0", 8)))
    assert len(all_lpm(client)) == 1


def test_bad_device_config_is_invalid_argument(client) -> None:
    for data in (b"", b"not json", b"\x1a\x05{nope"):
        with pytest.raises(grpc.RpcError) as e:
            client.set_pipeline(p4info(), data)
        assert code_of(e) == grpc.StatusCode.INVALID_ARGUMENT


def test_verify_save_commit(client) -> None:
    A = pb.SetForwardingPipelineConfigRequest
    client.write(update("INSERT", lpm_entry(b"\x0a\0\0\0", 8)))
    client.set_pipeline(p4info(), JSON_BYTES, action=A.VERIFY)
    client.set_pipeline(p4info(), JSON_BYTES, action=A.VERIFY_AND_SAVE)
    assert len(all_lpm(client)) == 1  # nothing applied yet
    client.set_pipeline(p4info(), b"", action=A.COMMIT)
    assert all_lpm(client) == []
    with pytest.raises(grpc.RpcError) as e:
        client.set_pipeline(p4info(), b"", action=A.COMMIT)
    assert code_of(e) == grpc.StatusCode.FAILED_PRECONDITION


def test_reconcile_and_commit_keeps_state(client) -> None:
    A = pb.SetForwardingPipelineConfigRequest
    client.write(update("INSERT", lpm_entry(b"\x0a\0\0\0", 8)))
    doc = bmv2_json()
    doc["__meta__"]["compiler"] = "another build"
    client.set_pipeline(p4info(), json.dumps(doc).encode(), action=A.RECONCILE_AND_COMMIT)
    assert len(all_lpm(client)) == 1


# ------------------------------------------------------------------------------------------------ tables
def test_insert_read_modify_delete_with_bytestring_forms(client) -> None:
    client.write(update("INSERT", lpm_entry(b"\x0a\x00\x02\x00", 24)))
    got = all_lpm(client)
    assert len(got) == 1
    assert got[0].match[0].lpm.value == b"\x0a\x00\x02\x00" and got[0].match[0].lpm.prefix_len == 24
    # canonical form on read: port 2 is b"\x02"
    assert [p.value for p in got[0].action.action.params] == [b"\x02\0\0\0\0\x02", b"\x02"]
    # zero-padded key and parameter are the same entry / value
    client.write(update("MODIFY", lpm_entry(b"\x00\x0a\x00\x02\x00", 24, port=b"\x00\x00\x03")))
    assert [p.value for p in all_lpm(client)[0].action.action.params][1] == b"\x03"
    client.write(update("DELETE", lpm_entry(b"\x0a\x00\x02\x00", 24)))
    assert all_lpm(client) == []


def test_duplicate_insert_is_already_exists_and_changes_nothing(client) -> None:
    client.write(update("INSERT", lpm_entry(b"\x0a\0\0\0", 8)))
    with pytest.raises(grpc.RpcError) as e:
        client.write(update("INSERT", lpm_entry(b"\x0a\0\0\0", 8, port=b"\x07")))
    assert write_errors(e.value)[0][0] == "ALREADY_EXISTS"
    assert all_lpm(client)[0].action.action.params[1].value == b"\x02"


@pytest.mark.parametrize(
    ("entity", "code"),
    [
        (lpm_entry(b"\x01\x0a\0\0\0", 8), "INVALID_ARGUMENT"),  # wider than 32 bits
        (lpm_entry(b"\x0a\0\0\x01", 8), "INVALID_ARGUMENT"),  # bits beyond the prefix
        (lpm_entry(b"\x0a\0\0\0", 0), "INVALID_ARGUMENT"),  # don't care must be omitted
        (lpm_entry(b"\x0a\0\0\0", 33), "INVALID_ARGUMENT"),
        (lpm_entry(b"\x0a\0\0\0", 8, port=b"\x02\x00"), "INVALID_ARGUMENT"),  # 512 > bit<9>
        (lpm_entry(b"", 8), "INVALID_ARGUMENT"),  # empty bytestring
        (pb.Entity(table_entry=pb.TableEntry(table_id=0x02000999)), "NOT_FOUND"),
    ],
)
def test_invalid_inserts(client, entity, code) -> None:
    with pytest.raises(grpc.RpcError) as e:
        client.write(update("INSERT", entity))
    assert write_errors(e.value)[0][0] == code
    assert all_lpm(client) == []


def test_bad_actions(client) -> None:
    e1 = lpm_entry(b"\x0a\0\0\0", 8)
    e1.table_entry.action.action.action_id = 0x01999999  # unknown action
    e2 = lpm_entry(b"\x0a\0\0\0", 8)
    del e2.table_entry.action.action.params[1]  # missing parameter
    e3 = lpm_entry(b"\x0a\0\0\0", 8)
    e3.table_entry.action.action.params.add(param_id=9, value=b"\x01")  # unknown parameter
    e4 = acl_entry(b"\x08\x00", b"\xff\xff", 10, action=FWD)  # not an action of the acl table
    with pytest.raises(grpc.RpcError) as e:
        client.write(*(update("INSERT", x) for x in (e1, e2, e3, e4)))
    assert [c for c, _ in write_errors(e.value)] == ["INVALID_ARGUMENT"] * 4


def test_batch_reports_each_update_and_keeps_the_good_ones(client) -> None:
    good = lpm_entry(b"\x0a\0\0\0", 8)
    bad = lpm_entry(b"\x0b\0\0\0", 8, port=b"\xff\xff")
    good2 = lpm_entry(b"\x0c\0\0\0", 8)
    with pytest.raises(grpc.RpcError) as e:
        client.write(update("INSERT", good), update("INSERT", bad), update("INSERT", good2))
    assert [c for c, _ in write_errors(e.value)] == ["OK", "INVALID_ARGUMENT", "OK"]
    assert len(all_lpm(client)) == 2


def test_modify_and_delete_missing_are_not_found(client) -> None:
    for kind in ("MODIFY", "DELETE"):
        with pytest.raises(grpc.RpcError) as e:
            client.write(update(kind, lpm_entry(b"\x0a\0\0\0", 8)))
        assert write_errors(e.value)[0][0] == "NOT_FOUND"


def test_priorities_and_ternary_rules(client) -> None:
    with pytest.raises(grpc.RpcError) as e:
        client.write(
            update("INSERT", acl_entry(b"\x08\x00", b"\xff\xff", 0)),  # ternary table needs a priority
            update("INSERT", acl_entry(b"\x08\x01", b"\xff\x00", 5)),  # value outside the mask
            update("INSERT", acl_entry(b"\x00", b"\x00", 5)),  # zero mask must be omitted
        )
    assert [c for c, _ in write_errors(e.value)] == ["INVALID_ARGUMENT"] * 3
    bad = lpm_entry(b"\x0a\0\0\0", 8)
    bad.table_entry.priority = 3  # LPM table: priority must be 0
    with pytest.raises(grpc.RpcError) as e:
        client.write(update("INSERT", bad))
    assert write_errors(e.value)[0][0] == "INVALID_ARGUMENT"
    client.write(update("INSERT", acl_entry(b"\x08\x00", b"\xff\xff", 10)))
    client.write(update("INSERT", acl_entry(b"\x08\x00", b"\xff\xff", 20)))  # same key, other priority
    got = client.read(pb.Entity(table_entry=pb.TableEntry(table_id=ACL)))
    assert sorted(e.table_entry.priority for e in got) == [10, 20]
    only = client.read(pb.Entity(table_entry=pb.TableEntry(table_id=ACL, priority=20)))
    assert [e.table_entry.priority for e in only] == [20]


def test_default_entry(client) -> None:
    default = pb.Entity(table_entry=pb.TableEntry(table_id=LPM, is_default_action=True))
    (d,) = client.read(default)
    assert d.table_entry.is_default_action and d.table_entry.action.action.action_id == DROP
    for kind in ("INSERT", "DELETE"):
        with pytest.raises(grpc.RpcError) as e:
            client.write(update(kind, default))
        assert write_errors(e.value)[0][0] == "INVALID_ARGUMENT"
    new = pb.Entity()
    new.CopyFrom(default)
    new.table_entry.action.action.action_id = TO_CPU
    client.write(update("MODIFY", new))
    assert client.read(default)[0].table_entry.action.action.action_id == TO_CPU
    client.write(update("MODIFY", default))  # no action: back to the program's default
    assert client.read(default)[0].table_entry.action.action.action_id == DROP


def test_wildcard_reads(client) -> None:
    client.write(
        update("INSERT", lpm_entry(b"\x0a\0\0\0", 8)),
        update("INSERT", acl_entry(b"\x08\x00", b"\xff\xff", 1)),
    )
    everything = client.read(pb.Entity(table_entry=pb.TableEntry()))
    assert {e.table_entry.table_id for e in everything} == {LPM, ACL}
    one = lpm_entry(b"\x0a\0\0\0", 8)
    one.table_entry.ClearField("action")
    assert len(client.read(one)) == 1
    by_action = pb.TableEntry(table_id=LPM)
    by_action.action.action.action_id = DROP
    assert client.read(pb.Entity(table_entry=by_action)) == []


def test_metadata_and_direct_counter_roundtrip(client) -> None:
    e = lpm_entry(b"\x0a\0\0\0", 8)
    e.table_entry.controller_metadata = 77
    e.table_entry.metadata = b"cookie"
    e.table_entry.counter_data.packet_count = 5
    e.table_entry.counter_data.byte_count = 500
    client.write(update("INSERT", e))
    req = pb.TableEntry(table_id=LPM)
    req.counter_data.SetInParent()
    (got,) = client.read(pb.Entity(table_entry=req))
    assert got.table_entry.controller_metadata == 77 and got.table_entry.metadata == b"cookie"
    assert got.table_entry.counter_data.packet_count == 5 and got.table_entry.counter_data.byte_count == 500
    dc = client.read(
        pb.Entity(direct_counter_entry=pb.DirectCounterEntry(table_entry=pb.TableEntry(table_id=LPM)))
    )
    assert dc[0].direct_counter_entry.data.packet_count == 5


# ------------------------------------------------------------------------------------------------ externs
def test_counters_read_all_cells_and_one_cell(client) -> None:
    cells = client.read(pb.Entity(counter_entry=pb.CounterEntry(counter_id=PORT_COUNTER)))
    assert len(cells) == 512
    ce = pb.CounterEntry(counter_id=PORT_COUNTER)
    ce.index.index = 7
    ce.data.packet_count, ce.data.byte_count = 3, 300
    client.write(update("MODIFY", pb.Entity(counter_entry=ce)))
    req = pb.CounterEntry(counter_id=PORT_COUNTER)
    req.index.index = 7
    (got,) = client.read(pb.Entity(counter_entry=req))
    assert (got.counter_entry.data.packet_count, got.counter_entry.data.byte_count) == (3, 300)
    req.index.index = 512
    with pytest.raises(grpc.RpcError) as e:
        client.read(pb.Entity(counter_entry=req))
    assert code_of(e) == grpc.StatusCode.OUT_OF_RANGE


def test_register_read_and_write(client) -> None:
    re = pb.RegisterEntry(register_id=REG)
    re.index.index = 3
    re.data.bitstring = b"\x00\x00\x12\x34"
    client.write(update("MODIFY", pb.Entity(register_entry=re)))
    req = pb.RegisterEntry(register_id=REG)
    req.index.index = 3
    (got,) = client.read(pb.Entity(register_entry=req))
    assert got.register_entry.data.bitstring == b"\x12\x34"
    assert len(client.read(pb.Entity(register_entry=pb.RegisterEntry(register_id=REG)))) == 16
    re.data.bitstring = b"\x01\x00\x00\x00\x00"  # 33 bits
    with pytest.raises(grpc.RpcError) as e:
        client.write(update("MODIFY", pb.Entity(register_entry=re)))
    assert write_errors(e.value)[0][0] == "INVALID_ARGUMENT"
    (got,) = client.read(pb.Entity(register_entry=req))
    assert got.register_entry.data.bitstring == b"\x12\x34"


def test_multicast_groups_and_clone_sessions(client) -> None:
    def mc(gid: int, *replicas: tuple[int, int]) -> pb.Entity:
        g = pb.MulticastGroupEntry(multicast_group_id=gid)
        for port, rid in replicas:
            g.replicas.add(egress_port=port, instance=rid)
        return pb.Entity(
            packet_replication_engine_entry=pb.PacketReplicationEngineEntry(multicast_group_entry=g)
        )

    client.write(update("INSERT", mc(1, (1, 0), (2, 0))))
    with pytest.raises(grpc.RpcError) as e:
        client.write(update("INSERT", mc(1, (3, 0))))
    assert write_errors(e.value)[0][0] == "ALREADY_EXISTS"
    client.write(update("MODIFY", mc(1, (3, 1))))
    (got,) = client.read(mc(1))
    assert [
        (r.egress_port, r.instance)
        for r in got.packet_replication_engine_entry.multicast_group_entry.replicas
    ] == [(3, 1)]
    with pytest.raises(grpc.RpcError) as e:
        client.write(update("DELETE", mc(9)))
    assert write_errors(e.value)[0][0] == "NOT_FOUND"
    cs = pb.CloneSessionEntry(session_id=5, packet_length_bytes=64)
    cs.replicas.add(egress_port=4, instance=1)
    client.write(
        update(
            "INSERT",
            pb.Entity(
                packet_replication_engine_entry=pb.PacketReplicationEngineEntry(clone_session_entry=cs)
            ),
        )
    )
    (got,) = client.read(
        pb.Entity(
            packet_replication_engine_entry=pb.PacketReplicationEngineEntry(
                clone_session_entry=pb.CloneSessionEntry(session_id=5)
            )
        )
    )
    assert got.packet_replication_engine_entry.clone_session_entry == cs
    client.write(update("DELETE", mc(1)))
    assert client.read(mc(0)) == []


# ------------------------------------------------------------------------------------------------ roles
def test_only_the_primary_may_write(client) -> None:
    backup = client.stream(election=0)
    msg = backup.next("arbitration")
    assert msg.arbitration.status.code == 6  # ALREADY_EXISTS: a backup
    with pytest.raises(grpc.RpcError) as e:
        client.write(update("INSERT", lpm_entry(b"\x0a\0\0\0", 8)), election=0)
    assert code_of(e) == grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(grpc.RpcError) as e:
        client.set_pipeline(p4info(), JSON_BYTES, election=7)
    assert code_of(e) == grpc.StatusCode.PERMISSION_DENIED
    assert all_lpm(client) == []
