"""Minimal pcap writer for `--pcap DIR` (classic libpcap format, Ethernet link type).

Why our own: scapy's PcapWriter parses nothing but costs an import of scapy in the switch process, and
the format is 24 + 16 bytes of headers. Files are named like BMv2's: `<iface>_in.pcap` (what the switch
received on a port) and `<iface>_out.pcap` (what it transmitted, after link emulation).
"""

from __future__ import annotations

import os
import struct
import threading
import time
from typing import BinaryIO

PCAP_MAGIC_US = 0xA1B2C3D4
LINKTYPE_ETHERNET = 1
SNAPLEN = 262144
_GLOBAL = struct.Struct("<IHHiIII")
_RECORD = struct.Struct("<IIII")


class PcapWriter:
    """Appends packets to one pcap file. Thread-safe: a port's output is written by the port loop and
    by the delay line's timer thread."""

    def __init__(self, path: str, linktype: int = LINKTYPE_ETHERNET, flush_every: int = 64) -> None:
        self.path = path
        self._file: BinaryIO = open(path, "wb")  # noqa: SIM115 - lives as long as the writer
        self._file.write(_GLOBAL.pack(PCAP_MAGIC_US, 2, 4, 0, 0, SNAPLEN, linktype))
        self._file.flush()
        self._lock = threading.Lock()
        self._unflushed = 0
        self._flush_every = flush_every

    def write(self, packet: bytes, timestamp: float | None = None) -> None:
        ts = time.time() if timestamp is None else timestamp
        sec = int(ts)
        usec = int((ts - sec) * 1_000_000)
        caplen = min(len(packet), SNAPLEN)
        with self._lock:
            if self._file.closed:
                return
            self._file.write(_RECORD.pack(sec, usec, caplen, len(packet)))
            self._file.write(packet[:caplen])
            self._unflushed += 1
            if self._unflushed >= self._flush_every:
                self._file.flush()
                self._unflushed = 0

    def flush(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.flush()
                self._unflushed = 0

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()


def read_pcap(path: str) -> list[tuple[float, bytes]]:
    """Read a classic pcap file back (for tests and tools): [(timestamp, packet bytes)]."""
    out: list[tuple[float, bytes]] = []
    with open(path, "rb") as f:
        header = f.read(_GLOBAL.size)
        magic = struct.unpack("<I", header[:4])[0]
        endian = "<" if magic == PCAP_MAGIC_US else ">"
        record = struct.Struct(endian + "IIII")
        while True:
            raw = f.read(record.size)
            if len(raw) < record.size:
                break
            sec, usec, caplen, _ = record.unpack(raw)
            out.append((sec + usec / 1e6, f.read(caplen)))
    return out


def pcap_paths(directory: str, iface: str) -> tuple[str, str]:
    """(<dir>/<iface>_in.pcap, <dir>/<iface>_out.pcap), as BMv2 names them."""
    return os.path.join(directory, f"{iface}_in.pcap"), os.path.join(directory, f"{iface}_out.pcap")
