"""Idle timeout of table entries: the dataplane's hit times, the IdleWatcher's rules with a fake
clock, then IdleTimeoutNotification and time_since_last_hit from a real switch over gRPC."""

from __future__ import annotations

import json
import queue
import threading
import time

import grpc
import pytest
from p4.v1 import p4runtime_pb2 as pb

from p4kit.switch import Switch
from p4kit.switch.errors import EntryNotFoundError
from p4kit.switch.jsonbuild import HDR, RD, F, JsonBuilder, P, assign
from p4kit.switch.p4rt_codec import P4RTError
from p4kit.switch.p4rt_idle import MAX_PERIOD_NS, MIN_PERIOD_NS, IdleWatcher
from p4kit.switch.p4runtime_server import check_consistency

from ._p4rt_client import Client, switch_process, update

MS = 1_000_000  # ns


# ================================================================================ dataplane: hit times
class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0  # seconds

    def __call__(self) -> float:
        return self.t


def program(clock: FakeClock, *, support_timeout: bool = True, profile: bool = False) -> Switch:
    """h = k(16) out(8); table t (exact k) sets h.out and the port; a miss drops."""
    b = JsonBuilder()
    b.add_header("h", [("k", 16), ("out", 8)])
    b.state("start", [b.extract("h")])
    b.deparse("h")
    b.action(
        "set",
        [("v", 8), ("port", 9)],
        [assign(F("h", "out"), RD(0)), assign(F("standard_metadata", "egress_spec"), RD(1))],
    )
    b.action("drop", [], [P("mark_to_drop", HDR("standard_metadata"))])
    if profile:
        b.action_profile("prof")
    b.table(
        "t",
        [("exact", ["h", "k"])],
        ["set", "drop"],
        default=("drop", []),
        action_profile="prof" if profile else None,
        support_timeout=support_timeout,
    )
    b.init("ingress", "t")
    sw = Switch(clock=clock)
    sw.raise_internal_errors = True
    sw.load_pipeline(b.build())
    return sw


def send(sw: Switch, k: int) -> list:
    return sw.process_packet(0, k.to_bytes(2, "big") + b"\0payload")


def test_idle_time_grows_with_the_clock_and_a_hit_resets_it() -> None:
    clock = FakeClock()
    sw = program(clock)
    assert sw.table_info("t").support_timeout
    h = sw.table_add("t", [7], "set", [1, 2])
    assert sw.table_get_entry("t", h).idle_ns == 0  # a new entry counts as just hit
    assert sw.table_hit_ns("t", h) == sw.now_ns()
    clock.t += 0.25
    assert sw.table_get_entry("t", h).idle_ns == 250 * MS
    assert send(sw, 8) == []  # a miss: the entry's idle time keeps growing
    clock.t += 0.25
    assert sw.table_get_entries("t")[0].idle_ns == 500 * MS
    assert send(sw, 7)[0][0] == 2  # a hit
    assert sw.table_get_entry("t", h).idle_ns == 0
    assert sw.table_hit_ns("t", h) == sw.now_ns()
    clock.t += 0.001
    assert sw.table_get_entry("t", h).idle_ns == 1 * MS
    sw.table_modify("t", h, "set", [3, 4])  # a control plane change is not a hit
    assert sw.table_get_entry("t", h).idle_ns == 1 * MS
    assert sw.table_get_default("t").idle_ns is None  # default entries have no idle time


def test_entries_through_an_action_profile_are_hit_too() -> None:
    clock = FakeClock()
    sw = program(clock, profile=True)
    sw.act_prof_add_member("prof", 1, "set", [5, 3])
    h = sw.table_add("t", [7], member=1)
    clock.t += 1.0
    assert sw.table_get_entry("t", h).idle_ns == 1_000 * MS
    assert send(sw, 7)[0][0] == 3
    assert sw.table_get_entry("t", h).idle_ns == 0


def test_tables_without_support_timeout_have_no_idle_time() -> None:
    clock = FakeClock()
    sw = program(clock, support_timeout=False)
    assert not sw.table_info("t").support_timeout
    h = sw.table_add("t", [7], "set", [1, 2])
    clock.t += 1.0
    send(sw, 7)
    assert sw.table_get_entry("t", h).idle_ns is None
    sw.table_delete("t", h)
    with pytest.raises(EntryNotFoundError):
        sw.table_hit_ns("t", h)


# ================================================================================ unit: the watcher
class Harness:
    """A watcher on a fake ns clock; `hits` holds each entry's last hit (absent: deleted)."""

    def __init__(self) -> None:
        self.now = 1_000 * MS
        self.hits: dict[tuple[str, int], int] = {}
        self.sent: list[list[tuple[str, int]]] = []
        self.watcher = IdleWatcher(self.sent.append, lambda t, h: self.hits.get((t, h)), lambda: self.now)

    def insert(self, table: str, handle: int, timeout_ns: int) -> None:
        self.hits[(table, handle)] = self.now  # a new entry counts as just hit
        self.watcher.arm(table, handle, timeout_ns)

    def hit(self, table: str, handle: int) -> None:
        self.hits[(table, handle)] = self.now

    def advance(self, ns: int) -> list[list[tuple[str, int]]]:
        self.now += ns
        self.watcher.poll()
        out, self.sent[:] = list(self.sent), []
        return out


@pytest.fixture
def h() -> Harness:
    return Harness()


def test_an_idle_entry_is_reported_once_its_timeout_has_passed(h) -> None:
    h.insert("t", 0, 100 * MS)
    assert h.advance(99 * MS) == []
    assert h.advance(1 * MS) == [[("t", 0)]]


def test_hits_postpone_the_report(h) -> None:
    h.insert("t", 0, 100 * MS)
    assert h.advance(60 * MS) == []
    h.hit("t", 0)
    assert h.advance(60 * MS) == []  # 120 ms since the insert, 60 since the hit
    assert h.advance(40 * MS) == [[("t", 0)]]


def test_an_entry_that_stays_idle_is_reported_every_timeout(h) -> None:
    """The specification resets the countdown at each report: every idle_timeout_ns, until a hit."""
    h.insert("t", 0, 100 * MS)
    assert h.advance(100 * MS) == [[("t", 0)]]
    for _ in range(3):
        assert h.advance(99 * MS) == []
        assert h.advance(1 * MS) == [[("t", 0)]]
    h.advance(50 * MS)
    h.hit("t", 0)
    assert h.advance(99 * MS) == []  # 149 ms since the report, 99 since the hit
    assert h.advance(1 * MS) == [[("t", 0)]]


def test_a_modify_rearms_the_entry(h) -> None:
    h.insert("t", 0, 100 * MS)
    assert h.advance(60 * MS) == []
    h.watcher.arm("t", 0, 50 * MS)  # MODIFY with a new idle_timeout_ns: the countdown restarts
    assert h.advance(49 * MS) == []
    assert h.advance(1 * MS) == [[("t", 0)]]
    assert h.advance(30 * MS) == []
    h.watcher.arm("t", 0, 50 * MS)  # a MODIFY that keeps the timeout restarts it as well
    assert h.advance(49 * MS) == []  # 79 ms after the report: without the MODIFY it was due at 50
    assert h.advance(1 * MS) == [[("t", 0)]]


def test_a_modify_to_zero_disarms(h) -> None:
    h.insert("t", 0, 100 * MS)
    h.watcher.arm("t", 0, 0)
    assert h.watcher.armed() == 0
    assert h.advance(1_000 * MS) == []


def test_deleted_entries_are_never_reported(h) -> None:
    h.insert("t", 0, 100 * MS)
    h.insert("t", 1, 100 * MS)
    h.watcher.forget("t", 0)
    del h.hits[("t", 0)]
    assert h.advance(200 * MS) == [[("t", 1)]]
    h.insert("t", 2, 100 * MS)
    del h.hits[("t", 2)]  # gone from the switch before its DELETE reached the watcher
    assert h.advance(200 * MS) == [[("t", 1)]]  # entry 1, still idle, again; never 0 or 2


def test_an_entry_deleted_during_a_check_is_not_reported() -> None:
    now = 1_000 * MS
    sent: list = []
    hits = {("t", 0): now, ("t", 1): now}

    def hit_ns(table: str, handle: int) -> int | None:
        hit = hits.get((table, handle))
        if handle == 1:  # the check has seen entry 0 idle; now a DELETE of it runs
            watcher.forget("t", 0)
        return hit

    watcher = IdleWatcher(sent.append, hit_ns, lambda: now)
    watcher.arm("t", 0, 10 * MS)
    watcher.arm("t", 1, 10 * MS)
    now += 10 * MS
    watcher.poll()
    assert sent == [[("t", 1)]]


def test_an_entry_rearmed_during_a_check_is_not_reported() -> None:
    now = 1_000 * MS
    sent: list = []

    def hit_ns(table: str, handle: int) -> int | None:
        watcher.arm("t", 0, 10 * MS)  # a MODIFY while the check looks at the entry
        return 1_000 * MS

    watcher = IdleWatcher(sent.append, hit_ns, lambda: now)
    watcher.arm("t", 0, 10 * MS)
    now += 20 * MS
    watcher.poll()
    assert sent == []


def test_entries_idle_in_one_check_share_one_report(h) -> None:
    h.insert("a", 0, 100 * MS)
    h.insert("a", 1, 80 * MS)
    h.insert("b", 0, 50 * MS)
    h.insert("b", 1, 300 * MS)
    assert h.advance(100 * MS) == [[("a", 0), ("a", 1), ("b", 0)]]
    assert h.advance(200 * MS) == [[("a", 0), ("a", 1), ("b", 0), ("b", 1)]]


def test_reset_forgets_every_entry(h) -> None:
    h.insert("t", 0, 100 * MS)
    h.watcher.reset()
    assert h.watcher.armed() == 0
    assert h.advance(1_000 * MS) == []


def test_next_check_time(h) -> None:
    assert h.watcher.poll() is None  # nothing armed: no check until an entry is armed
    h.insert("t", 0, 3_600_000 * MS)  # an hour
    assert h.watcher.poll() == h.now + MAX_PERIOD_NS
    h.insert("t", 1, 300 * MS)
    assert h.watcher.poll() == h.now + 300 * MS  # when entry 1 can first be idle
    h.insert("t", 2, 1 * MS)
    assert h.watcher.poll() == h.now + MIN_PERIOD_NS  # never sooner than the minimum period
    h.watcher.forget("t", 2)
    h.advance(300 * MS)  # entry 1 is reported; only a hit can make it due again
    assert h.watcher.poll() == h.now + 300 * MS


def test_a_failing_send_does_not_lose_later_reports(h) -> None:
    calls: list = []

    def send(keys: list) -> None:
        calls.append(keys)
        raise RuntimeError("stream gone")

    watcher = IdleWatcher(send, lambda t, hd: h.hits.get((t, hd)), lambda: h.now)
    h.hits[("t", 0)] = h.now
    watcher.arm("t", 0, 10 * MS)
    h.now += 10 * MS
    watcher.poll()
    assert calls == [[("t", 0)]]


def test_the_thread_reports_and_closes_at_once() -> None:
    hits = {("t", 0): time.monotonic_ns()}
    got: queue.Queue = queue.Queue()
    clock_calls = [0]

    def clock() -> int:
        clock_calls[0] += 1
        return time.monotonic_ns()

    watcher = IdleWatcher(got.put, lambda t, hd: hits.get((t, hd)), clock, guard=threading.RLock())
    watcher.start()
    try:
        time.sleep(0.2)
        idle_calls = clock_calls[0]
        time.sleep(0.3)
        assert clock_calls[0] == idle_calls  # nothing armed: the thread sleeps, it does not poll
        hits[("t", 0)] = time.monotonic_ns()
        watcher.arm("t", 0, 30 * MS)
        assert got.get(timeout=5) == [("t", 0)]
        first = time.monotonic()
        assert got.get(timeout=5) == [("t", 0)]  # still idle: reported again a timeout later
        assert time.monotonic() - first >= 0.02
    finally:
        start = time.monotonic()
        watcher.close()
        assert time.monotonic() - start < 1.0
        assert not watcher.running


# ================================================================================ gRPC: a real switch
IDLE_P4 = r"""
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { ethernet_t eth; }
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control MyVerify(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action drop() { mark_to_drop(sm); }
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table dmac {
        key = { hdr.eth.dst: exact; }
        actions = { fwd; drop; }
        default_action = drop();
        support_timeout = true;
    }
    table smac {
        key = { hdr.eth.src: exact; }
        actions = { fwd; drop; }
        default_action = drop();
    }
    apply { dmac.apply(); smac.apply(); }
}
control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
"""

DST = bytes.fromhex("0a0b0c0d0e0f")


@pytest.fixture(scope="module")
def idle_program(tmp_path_factory):
    driver = pytest.importorskip("p4kit.compiler.driver")
    p4info_mod = pytest.importorskip("p4kit.compiler.p4info")
    src = tmp_path_factory.mktemp("idle") / "idle.p4"
    src.write_text(IDLE_P4)
    result = driver.compile_file(src)
    p4info = p4info_mod.build_p4info(result.control_plane)
    return p4info, json.dumps(result.bmv2).encode()


def _table(p4info, name: str):
    return next(t for t in p4info.tables if t.preamble.name.endswith(name))


def _entry(p4info, table: str, key: bytes, idle_timeout_ns: int = 0) -> pb.TableEntry:
    t = _table(p4info, table)
    fwd = next(a for a in p4info.actions if a.preamble.name.endswith("fwd"))
    te = pb.TableEntry(table_id=t.preamble.id, idle_timeout_ns=idle_timeout_ns)
    te.match.add(field_id=t.match_fields[0].id).exact.value = key
    te.action.action.action_id = fwd.preamble.id
    te.action.action.params.add(param_id=1, value=b"\x01")
    return te


def test_idle_timeout_over_grpc(idle_program) -> None:
    p4info, device_config = idle_program
    dmac, smac = _table(p4info, "dmac"), _table(p4info, "smac")
    timeout = 200 * MS
    with switch_process("--no-p4", device_id=0, cpu_port=64) as (addr, _):
        c = Client(addr, 0)
        try:
            s = c.stream(election=1)
            assert s.next("arbitration", timeout=10).arbitration.status.code == 0
            c.set_pipeline(p4info, device_config)
            written = _entry(p4info, "dmac", DST, timeout)
            inserted = time.monotonic()  # before the write: the entry's countdown starts after this
            c.write(update("INSERT", pb.Entity(table_entry=written)))

            note = s.next("idle_timeout_notification", timeout=5)
            assert note is not None, s.error
            assert time.monotonic() - inserted >= 0.2
            msg = note.idle_timeout_notification
            assert abs(msg.timestamp - time.time_ns()) < 60_000 * MS
            expected = pb.TableEntry()
            expected.CopyFrom(written)
            expected.ClearField("action")  # as BMv2 sends it: key, metadata and the timeout
            assert list(msg.table_entry) == [expected]

            def elapsed() -> int:
                probe = pb.TableEntry(table_id=dmac.preamble.id)
                probe.time_since_last_hit.SetInParent()
                (got,) = c.read(pb.Entity(table_entry=probe))
                assert got.table_entry.idle_timeout_ns == timeout
                assert got.table_entry.HasField("time_since_last_hit")
                return got.table_entry.time_since_last_hit.elapsed_ns

            before = elapsed()
            assert before >= timeout
            time.sleep(0.5)
            assert elapsed() >= before + 500 * MS  # no hit: the idle time keeps growing
            # still idle: reported again (each report restarts the countdown, as the spec asks)
            again = s.next("idle_timeout_notification", timeout=5)
            assert again is not None and list(again.idle_timeout_notification.table_entry) == [expected]

            out = pb.StreamMessageRequest()
            out.packet.payload = DST + bytes(6) + b"\x08\x00"
            hit_not_before = time.time_ns()
            s.send(out)  # enters ingress on the CPU port and hits the entry
            deadline = time.monotonic() + 5
            while (after := elapsed()) >= before and time.monotonic() < deadline:
                time.sleep(0.01)
            assert after < before
            hit_not_after = time.time_ns()

            # Reports made before the hit may still be queued; the first one made after it comes a
            # whole timeout after the hit.
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                note = s.next("idle_timeout_notification", timeout=5)
                assert note is not None, s.error
                if note.idle_timeout_notification.timestamp > hit_not_after:
                    break
            else:
                raise AssertionError("no report after the hit")
            assert note.idle_timeout_notification.timestamp >= hit_not_before + timeout
            assert list(note.idle_timeout_notification.table_entry) == [expected]

            # a Read without time_since_last_hit gets none back
            (plain,) = c.read(pb.Entity(table_entry=pb.TableEntry(table_id=dmac.preamble.id)))
            assert not plain.table_entry.HasField("time_since_last_hit")

            # smac has no idle timeout support: asking for its time_since_last_hit is an error, and a
            # wildcard read over all tables leaves the field unset for its entries
            c.write(update("INSERT", pb.Entity(table_entry=_entry(p4info, "smac", DST))))
            probe = pb.TableEntry(table_id=smac.preamble.id)
            probe.time_since_last_hit.SetInParent()
            with pytest.raises(grpc.RpcError) as err:
                c.read(pb.Entity(table_entry=probe))
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            probe = pb.TableEntry(table_id=dmac.preamble.id, is_default_action=True)
            probe.time_since_last_hit.SetInParent()  # default entries have no idle timeout
            with pytest.raises(grpc.RpcError) as err:
                c.read(pb.Entity(table_entry=probe))
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            probe = pb.TableEntry()
            probe.time_since_last_hit.SetInParent()
            found = {e.table_entry.table_id: e.table_entry for e in c.read(pb.Entity(table_entry=probe))}
            assert found[dmac.preamble.id].HasField("time_since_last_hit")
            assert not found[smac.preamble.id].HasField("time_since_last_hit")

            # a deleted entry is never reported: hit it (so it would be reported 200 ms later), delete it
            before = elapsed()
            s.send(out)
            deadline = time.monotonic() + 5
            while elapsed() >= before and time.monotonic() < deadline:
                time.sleep(0.01)
            c.write(update("DELETE", pb.Entity(table_entry=written)))
            deleted_at = time.time_ns()
            end = time.monotonic() + 0.6
            while (left := end - time.monotonic()) > 0:
                try:
                    late = s.next("idle_timeout_notification", timeout=left)
                except queue.Empty:
                    break
                # only a report made before the DELETE (on a very slow machine) may still arrive
                assert late is not None and late.idle_timeout_notification.timestamp < deleted_at
        finally:
            c.close()


def test_p4info_idle_timeout_needs_support_timeout_in_the_json(idle_program) -> None:
    p4info, device_config = idle_program
    doc = json.loads(device_config)
    check_consistency(p4info, doc)
    for t in doc["pipelines"][0]["tables"]:
        t["support_timeout"] = False
    with pytest.raises(P4RTError) as err:
        check_consistency(p4info, doc)
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT and "support_timeout" in err.value.message
