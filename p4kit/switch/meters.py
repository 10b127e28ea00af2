"""Two-rate three-colour meters (RFC 2698) as BMv2 runs them.

Rates are given the way BMv2 takes them: ``[(cir, cburst), (pir, pburst)]`` with rates in units
(packets or bytes) per microsecond and bursts in units. Until rates are set a meter says GREEN.
Colours: GREEN 0, YELLOW 1, RED 2.
"""

from __future__ import annotations

GREEN, YELLOW, RED = 0, 1, 2


class Meter:
    __slots__ = ("buckets", "last_us", "rates")

    def __init__(self) -> None:
        self.rates: list[tuple[float, int]] = []
        self.buckets: list[float] = []
        self.last_us = 0.0

    def set_rates(self, rates: list[tuple[float, int]], now_us: float) -> None:
        self.rates = [(float(r), int(b)) for r, b in rates]
        self.buckets = [float(b) for _, b in self.rates]  # buckets start full
        self.last_us = now_us

    def reset(self) -> None:
        self.rates = []
        self.buckets = []

    def execute(self, units: int, now_us: float) -> int:
        if not self.rates:
            return GREEN
        dt = now_us - self.last_us
        if dt > 0:
            self.last_us = now_us
            for i, (rate, burst) in enumerate(self.rates):
                self.buckets[i] = min(float(burst), self.buckets[i] + rate * dt)
        # Rates are ordered committed first, peak last; check from the peak down (RFC 2698).
        n = len(self.rates)
        color = GREEN
        for i in range(n - 1, -1, -1):
            if self.buckets[i] < units:
                color = i + 1  # peak bucket short -> RED (2), committed short -> YELLOW (1)
                break
        # GREEN takes tokens from both buckets, YELLOW from the peak bucket only, RED from none.
        for i in range(color, n):
            self.buckets[i] -= units
        return color
