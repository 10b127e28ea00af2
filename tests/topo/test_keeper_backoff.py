"""The keeper's restart pacing: a switch that dies soon after each restart waits 1, 2, 4 ... 30 s; one
that ran for a while comes back at once."""

from __future__ import annotations

from topo.keeper import MAX_BACKOFF_S, Backoff


def test_a_crash_loop_backs_off_and_a_stable_switch_does_not() -> None:
    b = Backoff()
    now = 100.0
    assert b.may_start("NYC", now)
    b.started("NYC", now)  # first restart: no delay
    assert b.may_start("NYC", now)
    waits = []
    for _ in range(8):  # dies again each time right after its restart, and is seen dead at once
        died = now + 0.1
        wait = b.not_before["NYC"] - died
        assert not b.may_start("NYC", died) or wait <= 0
        now = max(died, b.not_before["NYC"])
        assert b.may_start("NYC", now)
        b.started("NYC", now)
        waits.append(b.not_before["NYC"] - now)
    assert waits == [1.0, 2.0, 4.0, 8.0, 16.0, MAX_BACKOFF_S, MAX_BACKOFF_S, MAX_BACKOFF_S], waits
    now += 60.0  # it ran for a minute, then died: straight back
    assert b.may_start("NYC", now)
    b.started("NYC", now)
    assert b.not_before["NYC"] == now
    assert b.may_start("TYO", 0.0)  # switches are paced one by one
