"""What `tributary allreduce --repeat` calls bit-identical."""

from __future__ import annotations


def test_bit_identical_means_every_worker_of_every_run() -> None:
    from topo.allreduce_run import AlgoResult
    from topo.commands.allreduce import _identical

    def run(*digests: str) -> AlgoResult:
        return AlgoResult("inc", 1.0, 10, True, 0.0, digests=list(digests))

    assert _identical([run("a", "a"), run("a", "a")])
    assert not _identical([run("a", "a"), run("a", "b")])
    assert not _identical([run("a", "a"), run("a")])  # a worker without a result
