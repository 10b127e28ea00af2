"""What a sparse allreduce did at each level of its tree, read from the switches' own counters.

Why counters: the density of what leaves a switch (fill-in: the union of the supports below it) is the
sparse mode's price, and the switch counts it itself (`inc_stats` 6, completed aggregates, and 12, those
that left empty). Reading them over P4Runtime before and after the run measures it, rather than
computing it from the inputs. The counters are switch-wide, so the figures are exact for a run with one
tenant (what the CLI reports); with several tenants they mix everyone's chunks.
"""

from __future__ import annotations

from controller.inc.trees import Tree
from controller.p4rt import P4InfoIndex
from controller.service.counters import switch_stats
from edge.protocol import FRAME_LEN, INC_LANES
from edge.sparse import FLOAT_EXPONENT_LANES, MODES, agreement_chunks
from topo.session import RunningWan


def exponent_chunks(mode: str, path: str, blocks: int, union_blocks: int | None) -> int:
    """Chunks of the exponent call a float32 sparse run makes before its values (all with values): over
    the union on the sparse path, over every block when it went dense (the float32 mode's own call)."""
    if MODES.get(mode) != "float32":
        return 0
    n = blocks if path == "dense" else (union_blocks or 0)
    return -(-FLOAT_EXPONENT_LANES * n // INC_LANES)


def snapshot(running: RunningWan) -> dict[str, dict[str, int]]:
    """Per switch: completed aggregates and those that left empty, so far."""
    index = P4InfoIndex(running.pipeline.p4info)
    out: dict[str, dict[str, int]] = {}
    for name, conn in running.conns.items():
        stats = switch_stats(conn, index, timeout=10.0)
        out[name] = {k: stats.get(k, (0, 0))[0] for k in ("completed", "empty_out", "empty_in")}
    return out


def dense_wan_floor(tree: Tree, blocks: int, mode: str = "sparse") -> int:
    """The least the dense path moves over the tree's links between switches: every chunk once up and
    once down each of them, in 322-byte frames, with no loss (float32: its exponent call's chunks too).
    A floor for dense, not a measurement."""
    chunks = blocks + exponent_chunks(mode, "dense", blocks, None)
    return 2 * sum(n.parent is not None for n in tree.nodes.values()) * chunks * FRAME_LEN


def levels(tree: Tree) -> dict[str, int]:
    """Each switch's depth in the tree: 0 at the root."""
    depth: dict[str, int] = {}

    def of(switch: str) -> int:
        if switch not in depth:
            parent = tree.nodes[switch].parent
            depth[switch] = 0 if parent is None else of(parent) + 1
        return depth[switch]

    for s in tree.nodes:
        of(s)
    return depth


def fill_in(
    tree: Tree,
    before: dict[str, dict[str, int]],
    after: dict[str, dict[str, int]],
    blocks: int,
    path: str = "sparse",
    other_chunks: int = 0,
) -> dict[str, object]:
    """Per switch of the tree: its level, the chunks it completed in the data call and the fraction of
    the vector's blocks it sent on with values (the union of the supports below it); per level the
    mean of those fractions. The block agreement's chunks (all with values) are counted too and taken
    off, as are `other_chunks` (float32's exponent call: exponent_chunks); a run that went dense has no
    agreement, and every block leaves every switch with values."""
    depth = levels(tree)
    agreement = agreement_chunks(blocks, len(tree.workers)) if path == "sparse" else 0
    agreement += other_chunks
    switches: dict[str, dict[str, object]] = {}
    for s, d in sorted(depth.items(), key=lambda kv: (kv[1], kv[0])):
        done = after[s]["completed"] - before[s]["completed"]
        done -= agreement
        empty = after[s]["empty_out"] - before[s]["empty_out"]
        switches[s] = {
            "level": d,
            "completed": done,
            "left_empty": empty,
            "density": round((done - empty) / blocks, 6) if blocks else 0.0,
        }
    by_level: dict[int, list[float]] = {}
    for v in switches.values():
        by_level.setdefault(int(v["level"]), []).append(float(v["density"]))  # type: ignore[arg-type]
    return {
        "switches": switches,
        "density_by_level": {str(k): round(sum(v) / len(v), 6) for k, v in sorted(by_level.items())},
    }
