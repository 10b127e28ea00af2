"""Packed int8 and int4 through the switches of the emulated 3-site WAN with 2 % loss (two workers per
site): exact sums that overflow the narrow type, and the host-to-switch bytes - measured at the
switches' interfaces - at most a quarter (int8) and an eighth (int4) of the same run in int32."""

from __future__ import annotations

import pytest

from topo.allreduce_run import AllreduceSpec, run_inc

pytestmark = [pytest.mark.mininet, pytest.mark.root]
ELEMENTS = 16384


def _log(msg: str) -> None:
    print(msg)


def _run(running, mode: str):  # type: ignore[no-untyped-def]
    [res] = run_inc(running, AllreduceSpec(elements=ELEMENTS, mode=mode, nslots=256), _log)
    assert res.errors == [] and res.exact and res.max_abs_error == 0.0, (res.errors, res.max_abs_error)
    assert len(set(res.digests)) == 1
    return res


def test_int8_and_int4_sums_are_exact_with_a_quarter_and_an_eighth_of_the_host_bytes(wan3_lossy) -> None:  # type: ignore[no-untyped-def]
    """Bytes as the switches' interfaces count them, less the retransmissions and the copies of the
    tail's repairs and last chunks (every one a 322-byte frame, in all three modes; their number depends
    on the run's losses and queues, not on the format: int4's 32 packets a worker carry 3 tail copies)."""
    from edge.protocol import FRAME_LEN
    from edge.runner import expected_sum

    seed = 1 + 1  # run_inc's tenant 1
    first: dict[str, float] = {}
    moved = {}
    for mode in ("int32", "int8", "int4"):
        res = _run(wan3_lossy, mode)
        moved[mode] = res.extra["bytes"]
        repeats = res.stats["retransmissions"] + res.stats["repair_copies"]
        first[mode] = moved[mode]["host_up"] - repeats * FRAME_LEN
        if mode != "int32":
            total = expected_sum(seed, list(range(6)), ELEMENTS, mode)
            lo = -(1 << (7 if mode == "int8" else 3))
            assert total.min() < lo and total.max() > -lo - 1, "the sums must overflow the narrow type"
            assert moved[mode]["wan"] < moved["int32"]["wan"], moved
    # a little other traffic (neighbour discovery) shares the host links: 2 % of int32's bytes
    slack = 0.02 * first["int32"]
    assert first["int8"] <= first["int32"] / 4 + slack, (first, moved)
    assert first["int4"] <= first["int32"] / 8 + slack, (first, moved)
    print(moved)
