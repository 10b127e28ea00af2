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
    from edge.runner import expected_sum

    seed = 1 + 1  # run_inc's tenant 1
    base = _run(wan3_lossy, "int32")
    moved = {"int32": base.extra["bytes"]}
    for mode, share in (("int8", 4), ("int4", 8)):
        res = _run(wan3_lossy, mode)
        total = expected_sum(seed, list(range(6)), ELEMENTS, mode)
        lo = -(1 << (7 if mode == "int8" else 3))
        assert total.min() < lo and total.max() > -lo - 1, "the inputs' sums must overflow the narrow type"
        moved[mode] = res.extra["bytes"]
        # retransmissions add a little to both runs (2 % loss on the WAN, none on host links)
        assert moved[mode]["host_up"] <= moved["int32"]["host_up"] / share * 1.05, moved
        assert moved[mode]["wan"] < moved["int32"]["wan"], moved
    print(moved)
