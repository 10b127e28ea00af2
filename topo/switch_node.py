"""A Mininet switch node that runs a P4Runtime software switch: p4kit-switch, or BMv2's
simple_switch_grpc when the user asks for it (both take the same command line)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from mininet.node import Switch

from p4kit.switch.offloads import offloads_off_command
from topo.ledger import Record
from topo.secrets_env import without_secrets

START_TIMEOUT_S = 30.0


def default_switch_binary() -> str:
    """p4kit-switch from this Python environment."""
    here = Path(sys.executable).parent / "p4kit-switch"
    if here.exists():
        return str(here)
    found = shutil.which("p4kit-switch")
    if not found:
        raise RuntimeError("p4kit-switch not found: run 'make install'")
    return found


def _listening(addr: str) -> bool:
    host, port = addr.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=0.2):
            return True
    except OSError:
        return False


class P4RuntimeSwitch(Switch):
    """Runs the switch binary in the root namespace with one `-i PORT@IFACE` per data port.

    The switch starts without a pipeline (`--no-p4`); the controller pushes it over P4Runtime.
    `link_specs` maps a port to an egress shaping spec `delay=..,rate=..,loss=..` (p4kit's --link).
    """

    def __init__(
        self,
        name: str,
        *,
        binary: str,
        device_id: int,
        grpc_addr: str,
        log_path: Path,
        pcap_dir: Path | None = None,
        link_specs: dict[int, str] | None = None,
        cpu_port: int | None = None,
        trace: bool = False,
        record: Record | None = None,
        **params: object,
    ) -> None:
        params.setdefault("dpid", f"{device_id:016x}")
        super().__init__(name, **params)
        self.binary = binary
        self.device_id = device_id
        self.grpc_addr = grpc_addr
        self.log_path = log_path
        self.pcap_dir = pcap_dir
        self.link_specs = link_specs or {}
        self.cpu_port = cpu_port
        self.trace = trace
        self.record = record  # the run's ledger: every switch process started is written down
        self.proc: subprocess.Popen[bytes] | None = None

    def command_line(self) -> list[str]:
        args = [self.binary, "--device-id", str(self.device_id), "--no-p4"]
        if self.trace:  # a per-packet trace: precious for debugging, far too slow for experiments
            args += ["--log-file", str(self.log_path)]
        for port, intf in sorted(self.intfs.items()):
            if port == 0 or intf.name == "lo":
                continue
            args += ["-i", f"{port}@{intf.name}"]
        if self.pcap_dir is not None:
            args += ["--pcap", str(self.pcap_dir)]
        is_p4kit = "p4kit" in Path(self.binary).name
        if is_p4kit:
            for port, spec in sorted(self.link_specs.items()):
                args += ["--link", f"{port}:{spec}"]
        args += ["--", "--grpc-server-addr", self.grpc_addr]
        if self.cpu_port is not None:
            args += ["--cpu-port", str(self.cpu_port)]
        return args

    def start(self, controllers: list[object]) -> None:
        for intf in self.intfList():
            if intf.name != "lo":
                # Offloads would hand the switch oversized or unchecksummed frames.
                subprocess.run(offloads_off_command(intf.name), capture_output=True)
        if _listening(self.grpc_addr):
            # another switch (a crashed run's, say) still serves this address: waiting for "ours" to
            # listen would mistake it for ours and drive a switch whose ports are not this network's
            raise RuntimeError(
                f"switch {self.name}: {self.grpc_addr} is already in use by another process "
                "(a switch left by an earlier run? 'sudo tributary clean' removes what crashed runs left)"
            )
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        out = (self.log_path.parent / f"{self.name}.stdout").open("ab")  # a restart keeps the last words
        self.proc = subprocess.Popen(
            self.command_line(),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=without_secrets(),
        )
        if self.record is not None:
            self.record.add_process(self.proc.pid, f"switch {self.name}")
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _listening(self.grpc_addr):
            if self.proc.poll() is not None:
                tail = (self.log_path.parent / f"{self.name}.stdout").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"switch {self.name} exited with status {self.proc.returncode}:\n{tail}")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"switch {self.name} did not open {self.grpc_addr} in {START_TIMEOUT_S:.0f} s"
                )
            time.sleep(0.05)

    def exited(self) -> int | None:
        """The exit status of a switch process that ended on its own (None while it runs)."""
        return self.proc.poll() if self.proc is not None else None

    def stop(self, deleteIntfs: bool = True) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None
        super().stop(deleteIntfs)
