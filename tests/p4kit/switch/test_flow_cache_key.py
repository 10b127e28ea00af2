"""The cache's key holds only what the program reads (p4kit/switch/flowkey.py), and it stores one
miss in N (p4kit/switch/flowcache.py): neither may change an output, a drop or a checksum.

The program is the p4lang tutorials' kind of router: Ethernet, IPv4 and TCP or UDP parsed, the IPv4
checksum verified and recomputed after the TTL decrement, an LPM route and an ACL on the layer-4
destination port copied into metadata. Packets of one flow differ in the IPv4 identification,
TCP sequence numbers, checksums, UDP length and payload: none of them is read, so they share one
entry, and the cached output must be what the pipeline writes, byte for byte (a switch without
the cache is the reference).
"""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

from p4kit.compiler.driver import compile_file
from p4kit.switch import flowcache, flowkey
from p4kit.switch.runtime import Switch


@pytest.fixture(autouse=True)
def _python_data_plane(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the Python data plane's own machinery: the native one stays off."""
    monkeypatch.setenv("P4KIT_NATIVE", "0")


ROUTER = (Path(__file__).resolve().parent / "flowcache_router.p4").read_text()

# The same router, but the ACL also reads checksum_error: the verified bytes become part of the key.
ROUTER_CHECKS = ROUTER.replace(
    "if (hdr.ipv4.isValid() && hdr.ipv4.ttl > 1) {",
    "if (hdr.ipv4.isValid() && hdr.ipv4.ttl > 1 && sm.checksum_error == 0) {",
)


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _build(tmp_path_factory.mktemp("router"), ROUTER)


def _build(tmp: Path, source: str) -> dict:
    path = tmp / "router.p4"
    path.write_text(source)
    return compile_file(path).bmv2


def _switches(bmv2: dict, insert_inv_prob: int = 1) -> tuple[Switch, Switch]:
    on, off = Switch(flow_cache=True, seed=7), Switch(flow_cache=False, seed=7)
    for sw in (on, off):
        sw.load_pipeline(bmv2)
        sw.table_add("I.ipv4_lpm", [((10 << 24) | (2 << 8), 24)], "I.ipv4_forward", [0x020000000202, 2])
        sw.table_add("I.ipv4_lpm", [((10 << 24) | (3 << 8), 24)], "I.ipv4_forward", [0x020000000303, 3])
        sw.table_add("I.acl", [53], "I.drop", [])
    on.set_flow_cache(True, insert_inv_prob=insert_inv_prob)
    return on, off


def _csum(b: bytes) -> int:
    n = int.from_bytes(b, "big")
    r = n % 0xFFFF or (0xFFFF if n else 0)
    return 0xFFFF - r


def frame(
    *,
    dst: int = 0x0A000263,
    src: int = 0x0A000101,
    ident: int = 1,
    ttl: int = 64,
    proto: int = 17,
    sport: int = 1234,
    dport: int = 5678,
    seq: int = 0,
    payload: bytes = bytes(18),
    good_checksum: bool = True,
) -> bytes:
    l4 = (
        struct.pack("!HHHH", sport, dport, 8 + len(payload), 0xBEEF)
        if proto == 17
        else struct.pack("!HHIIBBHHH", sport, dport, seq, seq ^ 0x5A5A, 0x50, 0x18, 512, 0xCAFE, 0)
    )
    ip = struct.pack(
        "!BBHHHBBHII", 0x45, 0, 20 + len(l4) + len(payload), ident, 0x4000, ttl, proto, 0, src, dst
    )
    c = _csum(ip) if good_checksum else 0x1234
    ip = ip[:10] + struct.pack("!H", c) + ip[12:]
    eth = bytes.fromhex("0200000000fe0200000001010800")
    return eth + ip + l4 + payload


def _same(on: Switch, off: Switch, port: int, data: bytes) -> list:
    a, b = on.process_packet(port, data), off.process_packet(port, data)
    assert a == b, data.hex()
    assert on.drop_log == off.drop_log, data.hex()
    return a


def test_the_key_leaves_out_what_the_router_never_reads(router: dict) -> None:
    key, why = flowkey.analyse(router)
    assert key is not None, why
    assert key.reach == 14 + 20 + 20  # the longest path: Ethernet, IPv4, TCP
    tcp = key.layouts[("ethernet", "ipv4", "tcp")]
    assert len(tcp.checksums) == 1  # the IPv4 header checksum, updated incrementally

    def bits(offset: int, n: int) -> int:  # bytes [offset, offset + n) of the key integer
        return ((1 << (8 * n)) - 1) << (8 * (key.reach - offset - n))

    ident, checksum, seq, dport = bits(18, 2), bits(24, 2), bits(38, 4), bits(36, 2)
    assert key.read & (ident | checksum | seq) == 0 and tcp.keep & (ident | seq) == ident | seq
    assert key.read & dport == dport and key.read & bits(22, 1)  # the ACL's port, the TTL
    assert tcp.checksums[0].target == 8 * (key.reach - 26)


def test_one_flow_with_changing_unread_fields_is_one_entry_and_every_output_exact(router: dict) -> None:
    on, off = _switches(router)
    for i in range(300):
        out = _same(on, off, 1, frame(ident=i * 7919 & 0xFFFF, payload=bytes([i & 0xFF]) * (18 + i % 40)))
        assert out and out[0][0] == 2
    assert on.flow_cache_entries() == 1
    for i in range(300):  # TCP: the sequence numbers and the ack change too
        _same(on, off, 1, frame(proto=6, ident=i, seq=i * 1_000_003 & 0xFFFFFFFF, payload=bytes(i % 30)))
    assert on.flow_cache_entries() == 2


def test_what_the_router_reads_still_decides(router: dict) -> None:
    """Destination, TTL, port and protocol are in the key: each value is its own entry."""
    on, off = _switches(router)
    cases = [
        frame(),
        frame(dst=0x0A000305),  # another route
        frame(dst=0x0B000001),  # no route: dropped
        frame(dport=53),  # the ACL drops it
        frame(proto=6, dport=53),
        frame(ttl=1),  # dropped by the condition
        frame(ttl=2),
        frame(proto=1),  # neither TCP nor UDP: a shorter path
        frame()[:14] + bytes(30),  # not IPv4 at all (etherType 0): dropped
        frame(good_checksum=False),  # nothing reads checksum_error here: forwarded, checksum fixed
        frame(proto=6)[:40],  # too short for TCP: a parser error, never stored
        frame(proto=1, payload=b""),  # 34 bytes, shorter than the key's 54: padded, its length keyed
        frame(proto=6, sport=0, dport=0, payload=b""),  # TCP with zeros where the short ones end
        frame(proto=6, sport=0, dport=0, payload=b"")[:34],
        frame(proto=6, sport=0, dport=0, payload=b"")[:38],
    ]
    for _ in range(3):
        for data in cases:
            _same(on, off, 1, data)
            _same(on, off, 2, data)


def test_random_variants_of_every_byte(router: dict) -> None:
    on, off = _switches(router)
    rng = random.Random(5)
    base = [frame(), frame(proto=6), frame(dport=53), frame(proto=1), frame(ttl=2)]
    for _ in range(3000):
        b = bytearray(rng.choice(base))
        for _ in range(rng.randrange(1, 4)):
            i = (
                rng.randrange(len(b))
                if rng.random() < 0.3
                else rng.choice((18, 19, 24, 25, 38, 41, 50, 22, 37))
            )
            if i < len(b):
                b[i] ^= 1 << rng.randrange(8)
        if rng.random() < 0.1:
            b = b[: rng.randrange(len(b))]
        _same(on, off, 1, bytes(b))
    frames = [
        bytes(rng.choice(base)[:18]) + bytes([rng.randrange(256), rng.randrange(256)]) + rng.choice(base)[20:]
        for _ in range(500)
    ]
    for i in range(0, len(frames), 32):
        assert on.process_batch(1, frames[i : i + 32]) == off.process_batch(1, frames[i : i + 32])
        assert on.drop_log == off.drop_log


def test_a_checksum_sum_of_0xffff_takes_the_pipeline(router: dict) -> None:
    """0xFFFF and 0 are the same number mod 0xFFFF: the cache cannot tell a checksum of 0 from one
    of 0xFFFF, so that one packet in 65,535 runs the pipeline; its output is still exact."""
    on, off = _switches(router)
    _same(on, off, 1, frame(ident=1))
    zero = next(i for i in range(0x10000) if off.process_packet(1, frame(ident=i))[0][1][24:26] == b"\0\0")
    out = _same(on, off, 1, frame(ident=zero))
    assert out[0][1][24:26] == b"\0\0"
    for i in (zero - 1, zero + 1, 0, 0xFFFF):
        _same(on, off, 1, frame(ident=i & 0xFFFF))


def test_reading_checksum_error_puts_the_verified_bytes_in_the_key(tmp_path: Path) -> None:
    bmv2 = _build(tmp_path, ROUTER_CHECKS)
    key, why = flowkey.analyse(bmv2)
    assert key is not None, why
    udp = key.layouts[("ethernet", "ipv4", "udp")]
    assert all(not c.groups for c in udp.checksums)  # every input of the checksum is in the key
    on, off = _switches(bmv2)
    for i in range(20):
        _same(on, off, 1, frame(ident=i))
        _same(on, off, 1, frame(ident=i, good_checksum=False))  # dropped: checksum_error is 1
    assert on.flow_cache_entries() == 40


def test_one_miss_in_n_is_stored(router: dict) -> None:
    on, off = _switches(router, insert_inv_prob=10)
    frames = [frame(dst=0x0A000200 + (i & 0xFF), sport=i) for i in range(256)]  # 256 flows
    for data in frames:
        _same(on, off, 1, data)
    stored = on.flow_cache_entries()
    assert 10 <= stored <= 50, stored  # binomial(256, 0.1): mean 25.6
    on.set_flow_cache(True, insert_inv_prob=1)
    for data in frames:
        _same(on, off, 1, data)
    assert on.flow_cache_entries() == 256
    with pytest.raises(ValueError):
        on.set_flow_cache(True, insert_inv_prob=0)
    assert Switch().flow_cache_insert_inv_prob == flowcache.DEFAULT_INSERT_INV_PROB == 100


def test_a_batch_of_misses_bypasses_the_cache_then_it_serves_again(router: dict) -> None:
    on, off = _switches(router)
    distinct = [frame(dst=0x0A000200 + (i & 0xFF), src=0x0A010000 + i) for i in range(4000)]
    for i in range(0, flowcache.SAMPLE, 32):  # the sample: every packet looked up and stored
        assert on.process_batch(1, distinct[i : i + 32]) == off.process_batch(1, distinct[i : i + 32])
    assert on.flow_cache_entries() == flowcache.SAMPLE
    rest = distinct[flowcache.SAMPLE : flowcache.SAMPLE + flowcache.BYPASS]
    for i in range(0, len(rest), 32):  # bypassed: nothing looked up, nothing stored
        assert on.process_batch(1, rest[i : i + 32]) == off.process_batch(1, rest[i : i + 32])
    assert on.flow_cache_entries() == flowcache.SAMPLE
    hot = [frame(ident=i) for i in range(256)]  # then one flow: sampled again, it is served
    for i in range(0, len(hot), 32):
        assert on.process_batch(1, hot[i : i + 32]) == off.process_batch(1, hot[i : i + 32])
    assert on.flow_cache_entries() == flowcache.SAMPLE + 1
    assert on._engine.flow_cache.skip == 0


def test_programs_the_key_cannot_prove_keep_every_byte_in_it() -> None:
    root = Path(__file__).resolve().parents[3] / "tests" / "p4kit" / "programs"
    for name, why in (
        ("control_generic_instances", "add_header"),
        ("header_union_parse", "unions"),
        ("controller_packet_io", "deparser"),
    ):
        src = root / f"{name}.p4"
        bmv2 = compile_file(src, include_dirs=[str(src.parent)]).bmv2
        key, reason = flowkey.analyse(bmv2)
        assert key is None and why in reason, reason


# The router as an ECMP: the egress port is a hash of the whole IPv4 header, so every bit of it is
# read, the identification too.
ROUTER_ECMP = ROUTER.replace(
    "struct metadata { bit<16> l4dst; }", "struct metadata { bit<16> l4dst; bit<16> ecmp; }"
).replace(
    "        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;\n    }",
    "        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;\n"
    "        hash(meta.ecmp, HashAlgorithm.crc16, (bit<16>)0, { hdr.ipv4 }, (bit<32>)4);\n"
    "        sm.egress_spec = (bit<9>)meta.ecmp + 2;\n    }",
)


def test_a_hash_over_a_header_reads_all_of_it(tmp_path: Path) -> None:
    assert ROUTER_ECMP != ROUTER and "hash(meta.ecmp" in ROUTER_ECMP
    bmv2 = _build(tmp_path, ROUTER_ECMP)
    key, why = flowkey.analyse(bmv2)
    assert key is not None, why
    ipv4 = ((1 << 160) - 1) << (8 * (key.reach - 34))
    assert key.read & ipv4 == ipv4
    on, off = _switches(bmv2)
    ports = set()
    for i in range(64):
        out = _same(on, off, 1, frame(ident=i))
        ports.add(out[0][0])
    assert len(ports) > 1  # the identification moves packets between ports
    assert on.flow_cache_entries() == 64


def test_a_store_that_fails_leaves_the_packet_its_output(router: dict) -> None:
    on, off = _switches(router)
    fc = on._engine.flow_cache
    fc.order = [(10_000, "ipv4")]  # a header index no packet has: every store raises
    for i in range(20):
        assert _same(on, off, 1, frame(ident=i))
    assert on.flow_cache_entries() == 0 and fc.errors == 20


# Two checksums to update on one path: the IPv4 header's and a UDP checksum over a pseudo header and
# the UDP header (no payload), whose inputs are mostly unread too.
ROUTER_UDP = ROUTER.replace(
    "            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);\n    }\n}\n\ncontrol D(",
    "            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);\n"
    "        update_checksum(hdr.udp.isValid(),\n"
    "            { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, 8w0, hdr.ipv4.protocol, hdr.udp.length_,\n"
    "              hdr.udp.srcPort, hdr.udp.dstPort },\n"
    "            hdr.udp.checksum, HashAlgorithm.csum16);\n    }\n}\n\ncontrol D(",
)


def test_two_checksums_on_one_path(tmp_path: Path) -> None:
    assert "hdr.udp.checksum, HashAlgorithm.csum16" in ROUTER_UDP
    bmv2 = _build(tmp_path, ROUTER_UDP)
    key, why = flowkey.analyse(bmv2)
    assert key is not None, why
    assert len(key.layouts[("ethernet", "ipv4", "udp")].checksums) == 2
    on, off = _switches(bmv2)
    rng = random.Random(11)
    for _ in range(400):
        data = frame(
            ident=rng.randrange(0x10000),
            src=0x0A010000 + rng.randrange(0x10000),
            sport=rng.randrange(0x10000),
            payload=bytes(12 + rng.randrange(40)),  # at least the key's 54 bytes: one entry
        )
        _same(on, off, 1, data)
    assert on.flow_cache_entries() == 1
    # Packets whose UDP sum is 0 mod 0xFFFF take the pipeline; search a few and check them all.
    for sport in range(0x10000):
        if off.process_packet(1, frame(sport=sport))[0][1][40:42] == b"\0\0":
            _same(on, off, 1, frame(sport=sport))
            break
    else:
        raise AssertionError("no UDP checksum of 0 found")
