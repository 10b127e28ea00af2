"""`p4kit-switch`: simple_switch_grpc's command line over p4kit's switch.

Why it is small: options live in cli_args, P4Runtime in p4runtime_server, port I/O in ports. This
module wires them: load the program (if one is given), open the ports, start the gRPC server, print the
line BMv2 prints when it listens, and shut everything down cleanly on SIGINT/SIGTERM. The switch is
ready when the gRPC port accepts connections (as with simple_switch_grpc).
"""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

from p4kit.cli import thrift_ports
from p4kit.switch.cli_args import SwitchOptions, UsageError, parse_args
from p4kit.switch.control_service import SwitchControl
from p4kit.switch.errors import SwitchError
from p4kit.switch.p4runtime_server import P4RuntimeServer, P4RuntimeService
from p4kit.switch.ports import PortError, PortLoop
from p4kit.switch.runtime import Switch

log = logging.getLogger("p4kit.switch")
TRACE_LOGGER = "p4kit.switch.trace"


def setup_logging(opts: SwitchOptions) -> logging.Logger | None:
    """The per-packet trace goes to stdout (--log-console) and/or a file (--log-file); with neither,
    tracing stays off and the pipeline is generated without trace code."""
    logging.basicConfig(level=logging.WARNING, format="p4kit-switch: %(message)s", stream=sys.stderr)
    logging.getLogger("p4kit.switch.dataplane").setLevel(logging.INFO)  # "data plane: native (...)"
    if not (opts.log_console or opts.log_file) or opts.log_level == "off":
        return None
    trace = logging.getLogger(TRACE_LOGGER)
    trace.setLevel(logging.DEBUG)
    trace.propagate = False
    fmt = logging.Formatter("[%(asctime)s.%(msecs)03d] [p4kit] %(message)s", "%H:%M:%S")
    handlers: list[logging.Handler] = []
    if opts.log_console:
        handlers.append(logging.StreamHandler(sys.stdout))
    if opts.log_file:
        handlers.append(logging.FileHandler(opts.log_file, mode="w"))
    for h in handlers:
        h.setFormatter(fmt)
        trace.addHandler(h)
    for name in ("p4kit.switch", "p4kit.switch.p4runtime"):
        logging.getLogger(name).setLevel(logging.INFO)
        for h in handlers:
            logging.getLogger(name).addHandler(h)
    return trace


def _flush_handlers(logger: logging.Logger) -> None:
    for h in logger.handlers:
        h.flush()


@dataclass
class RunningSwitch:
    """Everything one p4kit-switch process runs; `close` releases it all."""

    switch: Switch
    ports: PortLoop
    server: P4RuntimeServer

    def close(self) -> None:
        self.server.stop()
        self.ports.stop()


def start(opts: SwitchOptions) -> RunningSwitch:
    """Build and start the switch described by `opts` (used by main() and by tests in-process)."""
    trace = setup_logging(opts)
    switch = Switch(
        drop_port=opts.drop_port,
        cpu_port=opts.cpu_port,
        seed=opts.seed,
        egress_spec_init_to_drop=opts.egress_spec_init_to_drop,
        flow_cache=opts.flow_cache,
        native=None if opts.native else False,  # None: P4KIT_NATIVE decides (default on)
    )
    switch.set_flow_cache(opts.flow_cache, insert_inv_prob=opts.flow_cache_insert_inv_prob)
    if opts.priority_queues != 1:
        switch.set_priority_queues(opts.priority_queues)
    if trace is not None:
        switch.set_trace(trace.info)
    if opts.json_path:
        with open(opts.json_path, "rb") as f:
            doc = json.load(f)
        switch.load_pipeline(doc)

    def process(port: int, frame: bytes) -> list[tuple[int, bytes]]:
        try:
            return switch.process_packet(port, frame)
        except SwitchError:  # no pipeline yet: BMv2 drops what arrives before a program is set
            return []

    def process_batch(
        port: int, frames: list[bytes], on_error: Callable[[int], object], sinks: dict
    ) -> list[tuple[int, bytes]]:
        try:
            return switch.process_batch(port, frames, on_error, sinks)
        except SwitchError:
            return []

    if trace is not None:
        plain, plain_batch, known = process, process_batch, set(opts.interfaces)

        def dropped(outputs: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
            for out_port, _ in outputs:
                if out_port not in known and out_port != opts.cpu_port:
                    trace.info(f"port {out_port} has no interface: packet dropped")
            return outputs

        def process(port: int, frame: bytes) -> list[tuple[int, bytes]]:
            return dropped(plain(port, frame))

        def process_batch(
            port: int, frames: list[bytes], on_error: Callable[[int], object], sinks: dict
        ) -> list[tuple[int, bytes]]:
            return dropped(plain_batch(port, frames, on_error, sinks))

    ports = PortLoop(
        opts.interfaces,
        process,
        process_batch=process_batch,
        cpu_port=opts.cpu_port,
        links=opts.links,
        pcap_dir=opts.pcap_dir,
        seed=opts.seed,
        native=switch.port_target,  # the native port loop while the native data plane is active
    )
    # Packets that wait in an egress queue (queues.py) leave from the queue thread, through the loop.
    switch.set_output_callback(ports.deliver)
    for port, bits_per_s in ports.link_rates().items():
        switch.set_link_rate(port, bits_per_s)
    try:
        service = P4RuntimeService(
            switch, opts.device_id, opts.cpu_port, inject=ports.inject, allow_swap=not opts.disable_swap
        )
        server = P4RuntimeServer(service, opts.grpc_addr)
        info = {
            "grpc_server_addr": opts.grpc_addr,
            "thrift_port": opts.thrift_port,
            "cpu_port": opts.cpu_port,
            "drop_port": opts.drop_port,
            "priority_queues": opts.priority_queues,
        }
        control = SwitchControl(switch, service, opts.interfaces, opts.device_id, info)
        server.add_handlers(control.handlers())
    except BaseException:
        ports.close()
        raise
    ports.start()
    server.start()
    return RunningSwitch(switch, ports, server)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        opts = parse_args(argv)
    except UsageError as e:
        print(f"p4kit-switch: error: {e}", file=sys.stderr)
        return 1
    # Handlers first: a SIGTERM that arrives as soon as the server listens (before the loop below)
    # must still mean "stop cleanly", not the default "die".
    done = threading.Event()

    def stop(signum: int, frame: object) -> None:
        done.set()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    registration = None
    if opts.thrift_port is not None:
        # simple_switch_CLI --thrift-port N finds this switch through p4kit-cli's port map (recorded
        # before the server listens, so whoever sees it listening also finds the entry)
        registration = thrift_ports.register(opts.thrift_port, opts.grpc_addr, opts.device_id)
    try:
        running = start(opts)
    except (OSError, PortError, SwitchError, ValueError) as e:
        if registration is not None:
            thrift_ports.unregister(registration)
        print(f"p4kit-switch: error: {e}", file=sys.stderr)
        return 1
    if opts.thrift_port is not None and registration is None:
        print(f"Note: thrift port {opts.thrift_port} is already another switch's", flush=True)
    for port, iface in sorted(opts.interfaces.items()):
        shaping = f" ({opts.links[port]})" if port in opts.links else ""
        print(f"Adding interface {iface} as port {port}{shaping}", flush=True)
    for note in opts.notes:
        print(f"Note: {note}", flush=True)
    print(f"Server listening on {opts.grpc_addr}", flush=True)
    try:
        while not done.wait(1.0):
            pass
    finally:
        if registration is not None:
            thrift_ports.unregister(registration)
        running.close()
        trace = logging.getLogger(TRACE_LOGGER)
        _flush_handlers(trace)
    return 0


if __name__ == "__main__":
    sys.exit(main())
