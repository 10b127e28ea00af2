"""PACKET_RX_RING / PACKET_TX_RING (TPACKET_V2): frames through shared memory, no syscall per frame.

Why: a Python dataplane on this machine is bounded by per-packet overhead, and a `recv` system call per
frame is a large part of it. With the ring, the kernel writes each frame into a slot of a memory area
shared with the switch; the port loop copies frames out of ready slots and hands the slots back, and
only sleeps in epoll when the ring is empty.

Layout (linux/if_packet.h): each slot starts with a 32-byte `tpacket2_hdr` (status, len, snaplen, mac
offset, ...); the frame starts `tp_mac` bytes into the slot. Status bit TP_STATUS_USER means the slot is
ours; writing TP_STATUS_KERNEL (0) returns it. A frame longer than a slot is truncated by the kernel
(snaplen < len): it is counted and dropped rather than forwarded broken.

The transmit ring works the other way round: a frame is copied into a free slot (status
TP_STATUS_AVAILABLE) 32 bytes after its header, the slot is marked TP_STATUS_SEND_REQUEST, and one
`send` after a batch makes the kernel transmit every requested slot. Only one thread may use a TxRing
(the port loop); the link emulator's timer thread transmits with a plain socket.

By default the kernel copies only the Ethernet header of a ring frame into the socket buffer and
attaches the rest as a reference to the ring's page; a veth into another namespace must then copy it
into a freshly allocated page anyway, which costs more than the copy saved. With PACKET_VNET_HDR each
slot's frame is preceded by a virtio_net_hdr whose hdr_len says how much to copy: the whole frame, so
the buffer is one linear copy (measured on veths: about 0.45 us less kernel time per frame). Kernels
that refuse the option get the plain layout.
"""

from __future__ import annotations

import mmap
import socket
import struct

SOL_PACKET = 263
PACKET_RX_RING = 5
PACKET_TX_RING = 13
TP_STATUS_AVAILABLE = 0
TP_STATUS_SEND_REQUEST = 1
TP_STATUS_WRONG_FORMAT = 4
TX_DATA_OFFSET = 32  # TPACKET2_HDRLEN - sizeof(struct sockaddr_ll)
PACKET_VERSION = 10
TPACKET_V2 = 1
TP_STATUS_USER = 1
FRAME_SIZE = 2048  # an MTU-sized (1500) frame plus the ring headers
FRAMES = 512
TX_FRAME_SIZE = 2048
TX_FRAMES = 512

# tpacket2_hdr starts with four 32-bit words: tp_status, tp_len, tp_snaplen, tp_mac | tp_net << 16
RX_HEAD = struct.Struct("=IIII")
TX_HEAD = struct.Struct("=III")  # tp_status, tp_len, tp_snaplen
PACKET_VNET_HDR = 15
VNET_HDR_LEN = 10  # struct virtio_net_hdr: flags, gso_type, hdr_len, gso_size, csum_start, csum_offset
# tpacket2_hdr's status, len, snaplen, 20 bytes the kernel ignores on transmit, then a virtio_net_hdr
# with only hdr_len set (virtio's legacy byte order is the host's)
TX_HEAD_VNET = struct.Struct("=III20xBBHHHH")


class RxRing:
    """The receive ring of one AF_PACKET socket (set it up before binding is fine, or after)."""

    def __init__(self, sock: socket.socket, frame_size: int = FRAME_SIZE, frames: int = FRAMES) -> None:
        sock.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V2)
        per_block = max(1, mmap.PAGESIZE // frame_size) * 4  # blocks are whole pages
        block_size = frame_size * per_block
        blocks = max(1, frames // per_block)
        req = struct.pack("IIII", block_size, blocks, frame_size, blocks * per_block)
        sock.setsockopt(SOL_PACKET, PACKET_RX_RING, req)
        self.frames = blocks * per_block
        self.frame_size = frame_size
        self.mm = mmap.mmap(
            sock.fileno(), block_size * blocks, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE
        )
        # Returning a slot is one 32-bit store: item access on a word view beats a struct call.
        self.words = memoryview(self.mm).cast("I")
        self.slot_at = [i * frame_size for i in range(self.frames)]  # byte offset of each slot
        self.slot = 0
        self.truncated = 0

    def read(self, limit: int) -> list[bytes]:
        """Up to `limit` frames that are ready, in arrival order (empty when none is)."""
        mm = self.mm
        words = self.words
        slot_at = self.slot_at
        head = RX_HEAD.unpack_from
        n = self.frames
        slot = self.slot
        out: list[bytes] = []
        append = out.append
        for _ in range(limit):
            off = slot_at[slot]
            status, length, snaplen, mac = head(mm, off)
            if not status & TP_STATUS_USER:
                break
            if snaplen == length:  # nothing cut off
                start = off + (mac & 0xFFFF)
                append(mm[start : start + snaplen])
            else:
                self.truncated += 1
            words[off >> 2] = 0  # TP_STATUS_KERNEL: the slot goes back to the kernel
            slot += 1
            if slot == n:
                slot = 0
        self.slot = slot
        return out

    def close(self) -> None:
        self.words.release()
        self.mm.close()


class TxRing:
    """The transmit ring of one AF_PACKET socket bound to its interface."""

    def __init__(
        self, sock: socket.socket, frame_size: int = TX_FRAME_SIZE, frames: int = TX_FRAMES, vnet: bool = True
    ) -> None:
        if vnet:
            try:  # must come before the ring exists
                sock.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
            except OSError:
                vnet = False
        self.vnet = vnet
        sock.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V2)
        per_block = mmap.PAGESIZE // frame_size if frame_size < mmap.PAGESIZE else 1
        block_size = frame_size * per_block
        blocks = frames // per_block
        req = struct.pack("IIII", block_size, blocks, frame_size, blocks * per_block)
        sock.setsockopt(SOL_PACKET, PACKET_TX_RING, req)
        self.sock = sock
        self.frames = blocks * per_block
        self.frame_size = frame_size
        self.data_off = TX_DATA_OFFSET + (VNET_HDR_LEN if vnet else 0)  # where a frame starts in its slot
        self.max_len = frame_size - self.data_off
        self.mm = mmap.mmap(
            sock.fileno(), block_size * blocks, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE
        )
        self.words = memoryview(self.mm).cast("I")
        self.halves = memoryview(self.mm).cast("H")
        self.slot_at = [i * frame_size for i in range(self.frames)]
        self._head = TX_HEAD_VNET.pack_into if vnet else TX_HEAD.pack_into
        if vnet:  # every field of each slot's virtio_net_hdr stays 0 but hdr_len (see put)
            for off in self.slot_at:
                TX_HEAD_VNET.pack_into(self.mm, off, TP_STATUS_AVAILABLE, 0, 0, 0, 0, 0, 0, 0, 0)
        self.slot = 0
        self.pending = 0

    def put(self, frame: bytes) -> bool:
        """Queue one frame; False when it does not fit a slot or the ring is full (send it otherwise).

        The header (status, tp_len, tp_snaplen) is written in one call after the data: the kernel
        looks at a slot only during flush's send(), never concurrently, so no ordering is needed."""
        n = len(frame)
        if n > self.max_len:
            return False
        off = self.slot_at[self.slot]
        words = self.words
        status = words[off >> 2]
        if status != TP_STATUS_AVAILABLE:
            if status == TP_STATUS_WRONG_FORMAT:
                words[off >> 2] = TP_STATUS_AVAILABLE
            self.flush()
            if words[off >> 2] != TP_STATUS_AVAILABLE:
                return False
        start = off + self.data_off
        self.mm[start : start + n] = frame
        w = off >> 2
        if self.vnet:
            # hdr_len is the only field of the virtio_net_hdr that changes: three word stores and
            # one half-word store cost less than one struct call with eleven arguments
            m = n + VNET_HDR_LEN
            self.halves[(off + TX_DATA_OFFSET + 2) >> 1] = n
            words[w + 1] = m
            words[w + 2] = m
        else:
            words[w + 1] = n
            words[w + 2] = n
        words[w] = TP_STATUS_SEND_REQUEST
        self.pending += 1
        slot = self.slot + 1
        self.slot = 0 if slot == self.frames else slot
        return True

    def flush(self) -> None:
        """Have the kernel transmit every queued frame (one system call)."""
        if self.pending:
            self.pending = 0
            self.sock.send(b"")

    def close(self) -> None:
        self.words.release()
        self.halves.release()
        self.mm.close()
