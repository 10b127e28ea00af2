"""The host path's bound under --secure counts the agreement a masked float32 or mxint8 sum makes first:
the bytes it assumes are the bytes the formats hand the host algorithm, measured by running them."""

from __future__ import annotations

import numpy as np
import pytest

from edge.runner import worker_data
from edge.secure import host_allreduce
from topo.allreduce_run import AllreduceSpec, masked_agreement_bytes


def bytes_per_call(mode: str, elements: int) -> list[tuple[str, int]]:
    """What one worker hands its host algorithm, call by call, in a masked-format allreduce."""
    calls: list[tuple[str, int]] = []

    def alone(values: np.ndarray, op: str) -> np.ndarray:  # a job of one worker: the reduction is itself
        calls.append((op, values.nbytes))
        return values

    host_allreduce(alone, worker_data(1, 0, elements, mode), mode, 1, None)
    return calls


@pytest.mark.parametrize("mode", ["float32", "mxint8", "int32", "int8"])
@pytest.mark.parametrize("elements", [1, 100, 65536, 262145])
def test_the_agreement_in_the_bound_is_the_one_the_formats_make(mode: str, elements: int) -> None:
    calls = bytes_per_call(mode, elements)
    agreed = sum(n for op, n in calls if op == "max")
    assert masked_agreement_bytes(AllreduceSpec(elements, mode, secure=True)) == agreed
    assert masked_agreement_bytes(AllreduceSpec(elements, mode, secure=False)) == 0
    assert (agreed > 0) == (mode in ("float32", "mxint8"))
    # and the values: one sum of whole 64-value rows
    assert [n for op, n in calls if op == "sum"] == [4 * 64 * -(-elements // 64)]
