"""Per-job traffic, read from the switches' aggregation registers.

The switch program has no per-tenant counter (only the switch-wide `inc_stats`), but a job's cells say
exactly how much it aggregated: chunk k of a tenant with S slots uses cell 2(k mod S) + (k div S) mod 2,
a cell is reused only after its previous chunk completed everywhere, and `cell_chunk` / `cell_arrivals`
hold the last chunk and how many children gave it. So per cell the completed uses and the contributions
follow, and their sums are the job's chunks and packets at that switch (duplicates excluded).
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.inc.jobs import SwitchRound
from controller.p4rt import P4InfoIndex, SwitchConnection
from controller.p4rt.entities import decode_value
from edge.protocol import PACKET_LEN

# A view reads the switches while the caller waits: a switch that does not answer (stopped, overloaded)
# costs at most this per call, and is then taken as down until it answers again
VIEW_TIMEOUT_S = 10.0

WIRE_BYTES = PACKET_LEN + 14 + 20 + 8  # Ethernet + IPv4 + UDP + INC payload: 318

STAT_NAMES = (
    "malformed",
    "unknown_tenant",
    "not_a_child",
    "stale",
    "duplicate",
    "absorbed",
    "completed",
    "resent",
    "result_down",
    "wrong_epoch",
    "bad_checksum",
    "empty_in",  # empty contributions (sparse mode: a sender's all-zero chunk)
    "empty_out",  # aggregates that left without values (no contribution below had any)
)


@dataclass
class RoundTraffic:
    switch: str
    round: int
    chunks: int  # chunks whose aggregation finished at this switch
    packets: int  # contributions added (each child's packet once)

    @property
    def bytes(self) -> int:
        return self.packets * WIRE_BYTES


def cell_usage(
    slot: int, copy: int, nslots: int, last_chunk: int, arrivals: int, fan_in: int
) -> tuple[int, int]:
    """(completed uses, contributions) of one cell from its registers."""
    if arrivals == 0 and last_chunk == 0:
        return 0, 0
    earlier = max(0, (last_chunk - slot - nslots * copy) // (2 * nslots))
    done = earlier + (1 if arrivals >= fan_in else 0)
    return done, earlier * fan_in + arrivals


def round_traffic(
    conn: SwitchConnection, index: P4InfoIndex, sr: SwitchRound, timeout: float | None = None
) -> RoundTraffic:
    cells = range(sr.cells.base, sr.cells.base + sr.cells.cells)
    probes = [index.register_entry("cell_chunk", c) for c in cells]
    probes += [index.register_entry("cell_arrivals", c) for c in cells]
    chunk_id = index.register("cell_chunk").preamble.id
    values: dict[tuple[int, int], int] = {}
    for e in conn.read(probes, timeout=timeout):
        re = e.register_entry
        values[(re.register_id, re.index.index)] = decode_value(re.data.bitstring)
    nslots = sr.cells.cells // 2
    chunks = packets = 0
    arrivals_id = index.register("cell_arrivals").preamble.id
    for i, c in enumerate(cells):
        done, contrib = cell_usage(
            i // 2, i % 2, nslots, values.get((chunk_id, c), 0), values.get((arrivals_id, c), 0), sr.fan_in
        )
        chunks += done
        packets += contrib
    return RoundTraffic(sr.switch, sr.round, chunks, packets)


def switch_stats(
    conn: SwitchConnection, index: P4InfoIndex, timeout: float | None = None, counter: str = "inc_stats"
) -> dict[str, tuple[int, int]]:
    """A switch-wide counter of the INC program, by default the int32 path's `inc_stats` (`wide_stats`:
    the packed and wide path's, same reasons): reason -> (packets, bytes)."""
    out: dict[str, tuple[int, int]] = {}
    for e in conn.read([index.counter_entry(counter)], timeout=timeout):
        ce = e.counter_entry
        i = ce.index.index
        if i < len(STAT_NAMES):
            out[STAT_NAMES[i]] = (ce.data.packet_count, ce.data.byte_count)
    return out
