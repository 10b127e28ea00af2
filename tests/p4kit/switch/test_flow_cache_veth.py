"""The cache of results in the real switch between veths: one flow whose IPv4 identification,
payload and checksum change per packet goes through the port loop's batches, rings and the cache's
hits, and every frame that arrives is the one the pipeline writes without the cache (the IPv4
checksum updated from the cached one by the identification's difference)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from p4kit.compiler.driver import compile_file
from p4kit.switch.cli import start
from p4kit.switch.cli_args import SwitchOptions
from p4kit.switch.runtime import Switch
from tests.localports import free_port

from ._switch_testnet import have_root_net, hosts_net, sh
from .test_flow_cache_key import ROUTER, frame
from .test_queues_veth import sniff


@pytest.fixture(autouse=True)
def _python_data_plane(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the Python data plane's own machinery: the native one stays off."""
    monkeypatch.setenv("P4KIT_NATIVE", "0")


COUNT = 600


@pytest.mark.root
def test_a_flow_with_changing_identification_is_served_exactly_between_veths(tmp_path: Path) -> None:
    if not have_root_net():
        pytest.skip("needs root and iproute2")
    src = tmp_path / "router.p4"
    src.write_text(ROUTER)
    doc = compile_file(src).bmv2
    (tmp_path / "router.json").write_text(json.dumps(doc))
    frames = [frame(ident=i * 40503 & 0xFFFF, payload=bytes([i & 0xFF]) * (18 + i % 7)) for i in range(COUNT)]
    reference = Switch(flow_cache=False)
    reference.load_pipeline(doc)
    entry = ([((10 << 24) | (2 << 8), 24)], "I.ipv4_forward", [0x020000000202, 2])
    reference.table_add("I.ipv4_lpm", *entry)
    expected = []
    for f in frames:
        out = reference.process_packet(1, f)
        assert len(out) == 1 and out[0][0] == 2
        expected.append(out[0][1])
    with hosts_net(2, subnet="10.84.0") as net:
        h1, h2 = net.hosts
        opts = SwitchOptions(
            interfaces=net.ports(),
            json_path=str(tmp_path / "router.json"),
            grpc_addr=f"127.0.0.1:{free_port()}",
            flow_cache_insert_inv_prob=10,
        )
        running = start(opts)
        proc, got, reader, _ = sniff(h2.ns, h2.iface, COUNT, timeout=5)
        try:
            running.switch.table_add("I.ipv4_lpm", *entry)
            blob = tmp_path / "frames.hex"
            blob.write_text("\n".join(f.hex() for f in frames))
            send = (  # paced: the sniffer prints every frame, and its socket must not overflow
                "import socket, time\n"
                f"s=socket.socket(socket.AF_PACKET,socket.SOCK_RAW); s.bind(({h1.iface!r},0))\n"
                f"for i, h in enumerate(open({str(blob)!r}).read().split()):\n"
                "    s.send(bytes.fromhex(h))\n"
                "    if i % 20 == 19: time.sleep(0.01)\n"
            )
            sh(sys.executable, "-c", send, ns=h1.ns)
            proc.wait(timeout=30)
            reader.join(timeout=5)
            entries = running.switch.flow_cache_entries()
        finally:
            proc.kill()
            running.close()
    mine = [g for g in got if g[:6] == bytes.fromhex("020000000202")]  # the router's output only
    assert len(mine) >= COUNT * 0.95, f"{len(mine)} of {COUNT} frames arrived"
    wanted = set(expected)
    assert all(g in wanted for g in mine)  # each one exactly as the pipeline writes it
    assert [g for g in expected if g in set(mine)] == mine  # in order
    assert entries == 1  # one flow, one entry: the others were hits
