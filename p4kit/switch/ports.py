"""Port I/O: the switch's interfaces as AF_PACKET sockets, one loop thread feeding the dataplane.

Why one thread and an epoll loop rather than a thread per port: the dataplane runs under the GIL anyway,
so more threads only add lock hand-offs. Per-packet system calls are the other big cost of a Python
dataplane, so a port receives through an mmap'd PACKET_RX_RING and (when no timer thread transmits on
it) sends through a PACKET_TX_RING flushed once per batch (see rings.py); without rings it falls back
to recv/send. The loop takes up to `batch` frames from a ready port before it polls again. The receive
socket is promiscuous and sets PACKET_IGNORE_OUTGOING, so the switch never reads back its own
transmissions (as BMv2 ignores them).

Packets that do not come from an interface (P4Runtime packet-out, tests) are queued with `inject` from
any thread and handled by the loop thread, so the dataplane is only ever entered from one thread.

The native port loop. While the switch runs a program on its native data plane (`native` returns
its target), the loop thread hands the ports to native/portio.c: rings, pipeline, link emulation and
delay lines in C, one send() per ring per wake. It comes back to Python for what needs Python -- a
packet-in, a packet-out to inject, a frame from another thread, tables to hand over, a new program,
stop -- and stays in Python where the native loop cannot serve: pcap capture, a port without rings,
a dataplane lock, no C compiler, or the Python data plane (tracing, a rated port, a program the
native one does not cover). The two loops hand each other the rings' positions, the links' clocks
and the frames still on their way, so a switch between them loses and reorders nothing.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import select
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from p4kit.switch.errors import PipelineLoadError
from p4kit.switch.linkemu import GRANULARITY_S, DelayLine, LinkParams, LinkShaper, kernel_rate_bps
from p4kit.switch.pcap import PcapWriter, pcap_paths
from p4kit.switch.rings import FRAMES, RxRing, TxRing

log = logging.getLogger("p4kit.switch.ports")

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_IGNORE_OUTGOING = 23  # Linux >= 4.20
PACKET_OUTGOING = 4  # sll_pkttype of a frame this host transmitted
RECV_SIZE = 65536  # GSO/GRO can hand AF_PACKET frames above the MTU
RCVBUF_BYTES = 8 << 20  # a port's receive buffer (ring or socket): 4,096 MTU-sized frames
MAX_ABSORB_S = 0.005  # at most this much of a packet's time in the switch counts against a link's delay

Output = tuple[int, bytes]
ProcessFn = Callable[[int, bytes], Iterable[Output]]
# (port, frames, on_error, sinks) -> the outputs of the frames in order, except those a sink took
# (sinks: egress port -> put(frame) -> bool); a frame it fails on goes to on_error
BatchFn = Callable[
    [int, list[bytes], Callable[[int], object], dict[int, Callable[[bytes], bool]]], Iterable[Output]
]
SendFn = Callable[[bytes], object]


def ring_frame_size(iface: str) -> int:
    """Receive ring slot size for an interface: a power of two that holds an MTU-sized frame, its
    VLAN tag and the ring's own headers (2048 for the usual 1500-byte MTU)."""
    try:
        with open(f"/sys/class/net/{iface}/mtu") as f:
            mtu = int(f.read())
    except (OSError, ValueError):
        mtu = 1500
    size = 2048
    while size < mtu + 18 + 128:
        size *= 2
    return size


class PortError(OSError):
    """An interface that cannot be opened (missing, no permission)."""


@dataclass
class PortStats:
    rx: int = 0
    tx: int = 0
    tx_errors: int = 0
    truncated: int = 0  # frames too long for a receive ring slot (dropped)
    rx_errors: int = 0  # errors the receive socket reported (ENETDOWN: the interface went down or away)


@dataclass
class Port:
    """One `-i PORT@IFACE`: a receive socket and a transmit socket on the interface."""

    number: int
    iface: str
    rx: socket.socket
    tx: socket.socket
    filter_outgoing: bool  # the kernel lacks PACKET_IGNORE_OUTGOING: drop our own frames by sll_pkttype
    ring: RxRing | None = None  # the mmap'd receive ring, when the kernel gives one
    tx_ring: TxRing | None = None  # the mmap'd transmit ring (on its own socket), see open_tx_ring
    stats: PortStats = field(default_factory=PortStats)
    _tx_ring_sock: socket.socket | None = None

    @classmethod
    def open(cls, number: int, iface: str, use_ring: bool = True) -> Port:
        try:
            ifindex = socket.if_nametoindex(iface)
        except OSError as e:
            raise PortError(f"interface {iface!r} (port {number}) does not exist") from e
        try:
            rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        except PermissionError as e:
            raise PortError(f"opening {iface!r} needs root (CAP_NET_RAW)") from e
        rx.bind((iface, ETH_P_ALL))
        mreq = struct.pack("iHH8s", ifindex, PACKET_MR_PROMISC, 0, b"")
        rx.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
        filter_outgoing = False
        try:
            rx.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        except OSError:
            filter_outgoing = True
        for opt in (33, socket.SO_RCVBUF):  # SO_RCVBUFFORCE (root) first, then the capped one
            with contextlib.suppress(OSError):
                rx.setsockopt(socket.SOL_SOCKET, opt, RCVBUF_BYTES)
                break
        rx.setblocking(False)
        ring = None
        if use_ring and not filter_outgoing:
            try:
                size = ring_frame_size(iface)
                # as much as the plain socket's buffer would hold: a 512-slot ring dropped the bursts
                # of INC workers' windows (thousands of chunks) before the loop could read them
                ring = RxRing(rx, frame_size=size, frames=max(FRAMES, RCVBUF_BYTES // size))
            except OSError:
                ring = None  # e.g. locked-memory limits: plain recv still works
        tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        tx.bind((iface, 0))
        return cls(number, iface, rx, tx, filter_outgoing, ring)

    def open_tx_ring(self) -> None:
        """Add a transmit ring on a socket of its own (a socket with a ring can only send from it)."""
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        try:
            sock.bind((self.iface, 0))
            self.tx_ring = TxRing(sock)
        except OSError:
            sock.close()
            raise
        self._tx_ring_sock = sock

    def close(self) -> None:
        if self.ring is not None:
            self.ring.close()
        if self.tx_ring is not None:
            self.tx_ring.close()
        if self._tx_ring_sock is not None:
            self._tx_ring_sock.close()
        self.rx.close()
        self.tx.close()


class PortLoop:
    """Receives on every port, runs `process(port, frame)` and transmits its outputs.

    `process` returns (egress port, frame) pairs. An output to `cpu_port` goes to `on_cpu` (the
    P4Runtime server turns it into a PacketIn); an output to a port without an interface is dropped, as
    BMv2 does. `links` shapes a port's egress (see linkemu). With `pcap_dir`, every port gets
    <iface>_in.pcap and <iface>_out.pcap. With `process_batch`, a receive batch goes to the dataplane
    in one call (see Switch.process_batch); `process` still serves injected frames.
    """

    def __init__(
        self,
        ports: dict[int, str],
        process: ProcessFn,
        *,
        cpu_port: int | None = None,
        on_cpu: Callable[[bytes], object] | None = None,
        links: dict[int, LinkParams] | None = None,
        pcap_dir: str | None = None,
        batch: int = 256,
        lock: threading.Lock | None = None,
        seed: int | None = None,
        rx_ring: bool = True,
        tx_ring: bool = True,
        process_batch: BatchFn | None = None,
        native: Callable[[], Any] | None = None,
    ) -> None:
        self.process = process
        self.process_batch = process_batch
        # () -> the switch's active native data plane (NativeTarget) or None; see "The native port loop"
        self._native = native if (native is not None and not pcap_dir) else None
        self.native_reason: str | None = None  # why the native port loop does not run, once it is known
        self.native_loop_active = False  # the native port loop holds the ports now
        self.native_entries = 0  # times the native port loop took the ports over
        self._pio: Any = None
        self._pio_module: Any = None  # portio's module (its run() reasons), once the loop is open
        self._native_seen: dict[int, tuple[int, ...]] = {}
        self._native_failures = 0
        self._seed = seed
        self.cpu_port = cpu_port
        self.on_cpu = on_cpu
        self.batch = batch
        self.lock = lock
        self.ports: dict[int, Port] = {}
        self._pcaps: list[PcapWriter] = []
        self._pcap_in: dict[int, PcapWriter] = {}
        self.shapers: dict[int, LinkShaper] = {}
        self._use_tx_ring = tx_ring
        self.failures = 0  # packets the dataplane raised on
        self._tx_rings: list[TxRing] = []
        self._ring_put: dict[int, Callable[[bytes], bool]] = {}  # ports whose sender is just their ring
        self._line: DelayLine | None = None
        self._injected: collections.deque[Output] = collections.deque()
        self._outbound: collections.deque[Output] = collections.deque()  # from other threads
        self._wake_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop_ident = 0
        self._arrival = 0.0  # receive time of the batch being forwarded (see _packet_clock)
        links = links or {}
        self.links = dict(links)
        unknown = set(links) - set(ports)
        if unknown:
            raise PortError(f"--link for port(s) {sorted(unknown)} that no -i option defines")
        try:
            for number, iface in sorted(ports.items()):
                self.ports[number] = Port.open(number, iface, use_ring=rx_ring)
            if pcap_dir:
                os.makedirs(pcap_dir, exist_ok=True)
            self.senders: dict[int, SendFn] = {}
            for number, port in self.ports.items():
                self.senders[number] = self._make_sender(port, links.get(number), pcap_dir, seed)
        except BaseException:
            self.close()
            raise
        if cpu_port is not None and on_cpu is not None:
            self.senders[cpu_port] = on_cpu

    def _make_sender(
        self, port: Port, params: LinkParams | None, pcap_dir: str | None, seed: int | None
    ) -> SendFn:
        send: SendFn = port.tx.send
        delayed = params is not None and params.needs_timer
        if self._use_tx_ring and (not delayed or self._native is not None):
            # A transmit ring saves a syscall per frame, and it is safe where one thread transmits: the
            # loop thread. The Python loop sends a delayed frame from the emulator's timer thread, so a
            # shaped port keeps send() there; the native loop sends it from its own thread, the ring's.
            with contextlib.suppress(OSError):
                port.open_tx_ring()
            if port.tx_ring is not None and not delayed:
                self._tx_rings.append(port.tx_ring)
                send = _ring_sender(port.tx_ring, port.tx.send)
                if not pcap_dir and not (params is not None and params.active):
                    self._ring_put[port.number] = port.tx_ring.put
        if pcap_dir:
            in_path, out_path = pcap_paths(pcap_dir, port.iface)
            pin, pout = PcapWriter(in_path), PcapWriter(out_path)
            self._pcaps += [pin, pout]
            self._pcap_in[port.number] = pin
            raw_send = send

            def send(frame: bytes, _raw: SendFn = raw_send, _w: PcapWriter = pout) -> object:
                _w.write(frame)
                return _raw(frame)

        if params is not None and params.active:
            line = None
            if params.needs_timer:
                if self._line is None:
                    self._line = DelayLine()
                line = self._line
            import random

            rng = random.Random(None if seed is None else seed + port.number)
            shaper = LinkShaper(params, send, line, rng, clock=self._packet_clock)
            self.shapers[port.number] = shaper
            return shaper.submit
        return send

    # -- control --------------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="p4kit-ports", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.close()

    def close(self) -> None:
        if self._pio is not None:
            self._pio.close()  # its views of the rings' mappings go before the mappings
            self._pio = None
        if self._line is not None:
            self._line.close(flush=False)
            self._line = None
        for port in self.ports.values():
            port.close()
        self.ports.clear()
        for w in self._pcaps:
            w.close()
        self._pcaps.clear()
        with contextlib.suppress(OSError):
            os.close(self._wake_fd)
        self._wake_fd = -1

    def inject(self, port: int, frame: bytes) -> None:
        """Queue a frame as if it had arrived on `port` (used for P4Runtime packet-out); any thread."""
        self._injected.append((port, frame))
        self._wake()

    def deliver(self, port: int, frame: bytes) -> None:
        """Send a frame out of `port` from any thread (the traffic manager's egress thread): the loop
        thread transmits it, since only that thread may touch the transmit rings."""
        self._outbound.append((port, frame))
        self._wake()

    def link_rates(self) -> dict[int, float]:
        """Each port's link rate in bit/s where it has one: `--link rate=` or, failing that, the
        kernel's htb/tbf shaping of its interface (queues.py paces the port's queue with it)."""
        rates: dict[int, float] = {}
        for number, port in self.ports.items():
            params = self.links.get(number)
            bps = (
                params.rate_mbit * 1e6
                if params is not None and params.rate_mbit
                else kernel_rate_bps(port.iface)
            )
            if bps:
                rates[number] = bps
        return rates

    def transmit(self, port: int, frame: bytes) -> bool:
        """Send a frame out of `port` directly (shaped, captured); False when the port is unknown."""
        send = self.senders.get(port)
        if send is None:
            return False
        send(frame)
        return True

    def flush_pcaps(self) -> None:
        for w in self._pcaps:
            w.flush()

    def _wake(self) -> None:
        pio = self._pio
        if pio is not None:
            pio.interrupt()  # the native loop sees this between two batches, the eventfd while it sleeps
        with contextlib.suppress(OSError):
            os.eventfd_write(self._wake_fd, 1)

    def _packet_clock(self) -> float:
        """When the packet being forwarded reached the switch: the receive time of its batch on the
        loop thread (at most MAX_ABSORB_S ago), otherwise now."""
        now = time.monotonic()
        if threading.get_ident() == self._loop_ident and now - self._arrival < MAX_ABSORB_S:
            return self._arrival
        return now

    # -- the loop --------------------------------------------------------------------------------------
    def _run(self) -> None:
        self._loop_ident = threading.get_ident()
        poller = select.epoll()
        by_fd: dict[int, Port] = {}
        for port in self.ports.values():
            poller.register(port.rx.fileno(), select.EPOLLIN)
            by_fd[port.rx.fileno()] = port
        poller.register(self._wake_fd, select.EPOLLIN)
        last_flush = time.monotonic()
        rings = self._tx_rings
        pio = self._open_native()
        try:
            while not self._stop.is_set():
                target = self._native() if pio is not None else None  # type: ignore[misc]
                if target is not None:
                    if not self.native_loop_active:
                        self._enter_native(pio)
                    self._native_step(pio, target)
                    continue
                if self.native_loop_active:
                    self._leave_native(pio)
                events = poller.poll(0.2)
                for fd, mask in events:
                    if fd == self._wake_fd:
                        with contextlib.suppress(BlockingIOError):
                            os.eventfd_read(self._wake_fd)
                        self._drain_injected()
                        continue
                    if mask & (select.EPOLLERR | select.EPOLLHUP):
                        self._take_error(by_fd[fd])
                    self._drain_port(by_fd[fd])
                for ring in rings:
                    if ring.pending:
                        ring.flush()
                if self._pcaps and time.monotonic() - last_flush > 0.5:
                    self.flush_pcaps()
                    last_flush = time.monotonic()
        finally:
            if self.native_loop_active:
                self._native_stats(pio)
            poller.close()

    # -- the native port loop -------------------------------------------------------------------------
    def _open_native(self) -> Any:
        """The native port loop over these ports, or None (with the reason in native_reason)."""
        if self._native is None:
            return None
        why = None
        if self.lock is not None:
            why = "the port loop was given a dataplane lock"
        elif any(p.ring is None or p.tx_ring is None for p in self.ports.values()):
            why = "a port without receive and transmit rings"
        if why is None:
            from p4kit.switch.native import portio

            try:
                module = portio.load()
            except (PipelineLoadError, OSError) as exc:
                why = f"the native port loop did not build: {exc}"
        if why is not None:
            self.native_reason = why
            log.info("port loop: Python (%s)", why)
            return None
        pio = module.PortIO(self._wake_fd, GRANULARITY_S)
        for number, port in self.ports.items():
            rx, tx = port.ring, port.tx_ring
            assert rx is not None and tx is not None
            pio.add_port(
                number, port.rx.fileno(), rx.mm, rx.frames, rx.frame_size,
                tx.sock.fileno(), tx.mm, tx.frames, tx.frame_size, tx.vnet, port.tx.fileno(),
            )  # fmt: skip
        self._pio = pio
        self._pio_module = module
        return pio

    def _enter_native(self, pio: Any) -> None:
        """Hand the ports to the native loop: the rings' positions and the links' clocks."""
        for ring in self._tx_rings:
            ring.flush()
        for number, port in self.ports.items():
            assert port.ring is not None and port.tx_ring is not None
            pio.set_slots(number, port.ring.slot, port.tx_ring.slot)
        for number, shaper in self.shapers.items():
            p = shaper.params
            busy, last = shaper.clock_state()
            seed = (
                (self._seed + number) if self._seed is not None else int.from_bytes(os.urandom(8), "little")
            )
            pio.set_link(
                number, p.delay_ms / 1e3, p.jitter_ms / 1e3, p.rate_mbit * 1e6 / 8.0, p.loss_pct / 100.0,
                p.queue_pkts, busy, last, seed & 0xFFFFFFFFFFFFFFFF,
            )  # fmt: skip
        self.native_loop_active = True
        self.native_entries += 1
        self.native_reason = None
        log.info("port loop: native")

    def _leave_native(self, pio: Any) -> None:
        """Take the ports back: the rings' positions, the links' clocks and what is on its way."""
        self._native_stats(pio)
        for number, port in self.ports.items():
            assert port.ring is not None and port.tx_ring is not None
            port.ring.slot, port.tx_ring.slot = pio.slots(number)
        for number, shaper in self.shapers.items():
            shaper.set_clock_state(*pio.link_state(number))
        for number, depart, frame in pio.take_pending():
            shaper = self.shapers[number]
            if self._line is not None:
                self._line.schedule(depart, shaper.send, frame)
        self.native_loop_active = False
        log.info("port loop: Python (the native data plane is not active)")

    def _native_step(self, pio: Any, target: Any) -> None:
        """One stretch of the native loop, and what it came back for."""
        mod = self._pio_module
        target.sync()
        cpu_port = -1 if self.cpu_port is None else self.cpu_port
        reason, to_cpu = pio.run(target.entry, cpu_port, 0.2, target.t0_ns)
        if to_cpu:
            target.packet_in(to_cpu)
        if reason == mod.STALE:
            target.sync(force=True)
        elif reason == mod.WAKE:
            with contextlib.suppress(BlockingIOError):
                os.eventfd_read(self._wake_fd)
            injected = self._injected
            while injected:
                port, frame = injected.popleft()
                to_cpu = pio.process(target.entry, cpu_port, port, [frame], target.t0_ns)
                if to_cpu:
                    target.packet_in(to_cpu)
            outbound = self._outbound
            while outbound:
                port, frame = outbound.popleft()
                pio.send(port, frame)
        self._native_stats(pio)

    def _native_stats(self, pio: Any) -> None:
        """Add what the native loop counted since the last look to the ports' and links' statistics."""
        seen = self._native_seen
        for row in pio.stats():
            number, now = row[0], row[1:9]
            before = seen.get(number, (0,) * 8)
            d = [a - b for a, b in zip(now, before, strict=True)]
            seen[number] = now
            if row[10] != self.ports[number].stats.rx_errors:
                self._port_errors(self.ports[number], row[10], row[11])
            if not any(d):
                continue
            st = self.ports[number].stats
            st.rx += d[0]
            st.tx += d[1]
            st.tx_errors += d[2]
            st.truncated += d[3]
            shaper = self.shapers.get(number)
            if shaper is not None:
                ls = shaper.stats
                ls.submitted += d[4]
                ls.sent += d[5]
                ls.lost += d[6]
                ls.tail_dropped += d[7]
        failures = pio.counts()[0]
        if failures != self._native_failures:
            new = failures - self._native_failures
            self._native_failures = failures
            self.failures += new
            if self.failures <= 10:
                log.error("the native data plane failed on %d packet(s) (dropped)", new)

    def _drain_injected(self) -> None:
        injected = self._injected
        while injected:
            port, frame = injected.popleft()
            self._forward(port, frame)
        outbound = self._outbound
        if outbound:
            batch = []
            while outbound:
                batch.append(outbound.popleft())
            # these left an egress queue just now: the link emulator's clock is now, not the receive
            # time of the last batch (see _packet_clock)
            self._arrival = 0.0
            self._transmit(batch, PortStats())

    def _forward(self, port: int, frame: bytes) -> None:
        senders = self.senders
        lock = self.lock
        try:
            if lock is not None:
                with lock:
                    outputs = self.process(port, frame)
            else:
                outputs = self.process(port, frame)
        except Exception:
            self._report_failure(port)
            return
        for out_port, out_frame in outputs:
            send = senders.get(out_port)
            if send is not None:
                with contextlib.suppress(OSError):
                    send(out_frame)

    def _take_error(self, port: Port) -> None:
        """Read (and so clear) the receive socket's pending error. Until someone reads it, epoll reports
        it on every call: a switch whose interface went down (Mininet removing its veths) would spin."""
        err = port.rx.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            self._port_errors(port, port.stats.rx_errors + 1, err)

    def _port_errors(self, port: Port, total: int, err: int) -> None:
        """Count the receive socket's errors; the first few are logged with the latest one's reason."""
        before, port.stats.rx_errors = port.stats.rx_errors, total
        if before < 3:
            log.warning("port %d (%s): %s", port.number, port.iface, os.strerror(err))

    def _drain_port(self, port: Port) -> None:
        """The hot path: up to `batch` frames from one port, each through the dataplane and out."""
        ring = port.ring
        if ring is not None:
            frames = ring.read(self.batch)
            if ring.truncated != port.stats.truncated:
                port.stats.truncated = ring.truncated
                if ring.truncated == 1:
                    log.warning(
                        "%s: a frame larger than the receive ring's slots was dropped "
                        "(raise the MTU before starting the switch, or turn off GRO/TSO offloads)",
                        port.iface,
                    )
        else:
            frames = self._recv_frames(port)
        if not frames:
            return
        self._arrival = time.monotonic()
        number = port.number
        pcap_in = self._pcap_in.get(number)
        lock = self.lock
        stats = port.stats
        stats.rx += len(frames)
        if self.process_batch is not None:
            if pcap_in is not None:
                for frame in frames:
                    pcap_in.write(frame)
            try:
                if lock is not None:
                    with lock:
                        outputs = self.process_batch(number, frames, self._report_failure, self._ring_put)
                else:
                    outputs = self.process_batch(number, frames, self._report_failure, self._ring_put)
            except Exception:  # the batch as a whole failed (e.g. no pipeline): it is dropped
                self._report_failure(number)
                return
            self._transmit(outputs, stats)
            return
        process = self.process
        for frame in frames:
            if pcap_in is not None:
                pcap_in.write(frame)
            try:
                if lock is not None:
                    with lock:
                        outputs = process(number, frame)
                else:
                    outputs = process(number, frame)
            except Exception:  # a dataplane bug drops this packet, never the port loop
                self._report_failure(number)
                continue
            self._transmit(outputs, stats)

    def _transmit(self, outputs: Iterable[Output], stats: PortStats) -> None:
        """Each (port, frame) out of its port: straight into the port's transmit ring when that is
        all its sender does, else through the sender (pcap, shaping, fallback send)."""
        ring_put = self._ring_put
        senders = self.senders
        for out_port, out_frame in outputs:
            put = ring_put.get(out_port)
            if put is not None and put(out_frame):
                continue  # queued in the port's transmit ring (the usual case)
            send = senders.get(out_port)
            if send is not None:
                try:
                    send(out_frame)
                except OSError:
                    stats.tx_errors += 1

    def _report_failure(self, port: int) -> None:
        self.failures += 1
        if self.failures <= 10:
            log.exception("dataplane failed on a packet from port %d (packet dropped)", port)

    def _recv_frames(self, port: Port) -> list[bytes]:
        """Without a ring: non-blocking recv until the socket is empty or `batch` frames are read."""
        frames: list[bytes] = []
        sock = port.rx
        if port.filter_outgoing:
            for _ in range(self.batch):
                try:
                    frame, addr = sock.recvfrom(RECV_SIZE)
                except OSError:
                    break
                if addr[2] != PACKET_OUTGOING:
                    frames.append(frame)
            return frames
        recv = sock.recv
        for _ in range(self.batch):
            try:
                frames.append(recv(RECV_SIZE))
            except OSError:
                break
        return frames


def _ring_sender(ring: TxRing, fallback: SendFn) -> SendFn:
    """Queue into the transmit ring; a frame too big for a slot (or a jammed ring) goes out by send(),
    after what the ring holds, so frames keep their order."""
    put = ring.put

    def send(frame: bytes) -> object:
        if not put(frame):
            ring.flush()
            return fallback(frame)
        return None

    return send


def parse_interface(spec: str) -> tuple[int, str]:
    """`PORT@IFACE` as simple_switch takes it after -i."""
    number, sep, iface = spec.partition("@")
    if not sep or not iface:
        raise ValueError(f"-i {spec!r}: expected PORT@IFACE")
    try:
        return int(number), iface
    except ValueError:
        raise ValueError(f"-i {spec!r}: port {number!r} is not a number") from None
