"""Execute latency as a small fixed-bucket histogram (Prometheus' own shape).

Tasks time one tuple in every ``SAMPLE_EVERY`` (the same positions in every
batch, so the cost is a bit test per tuple) and count it in a bucket; the driver
adds histograms bucket by bucket, so merging is exact and order-free, and the
quantiles (p50, p99) are read off the buckets as ``histogram_quantile`` does:
linear within the bucket that holds the rank.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field

from stormshift.adapters.sampling import SAMPLE_EVERY  # the kernel's rate, defined where it samples

__all__ = ["BOUNDS_US", "SAMPLE_EVERY", "LatencyHistogram"]

# Upper bounds in microseconds; one more bucket past the last (+Inf).
BOUNDS_US: tuple[int, ...] = (10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000,
                              50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000)


@dataclass
class LatencyHistogram:
    """Counts per bucket (``len(BOUNDS_US) + 1``) and the sum of the samples, in µs."""

    counts: list[int] = field(default_factory=lambda: [0] * (len(BOUNDS_US) + 1))
    sum_us: int = 0

    def observe_ns(self, elapsed_ns: int) -> None:
        us = elapsed_ns // 1000
        self.counts[bisect_left(BOUNDS_US, us)] += 1
        self.sum_us += us

    def merge(self, other: LatencyHistogram | Sequence[int]) -> None:
        """Add another histogram (or its ``to_list()`` form)."""
        counts, total = (other.counts, other.sum_us) if isinstance(other, LatencyHistogram) \
            else (list(other[:-1]), int(other[-1]))
        for i, n in enumerate(counts[:len(self.counts)]):
            self.counts[i] += int(n)
        self.sum_us += total

    @property
    def count(self) -> int:
        return sum(self.counts)

    def quantile_ms(self, q: float) -> float:
        """The ``q`` quantile (0..1) in ms, linear within its bucket; 0.0 with no sample.
        A rank in the +Inf bucket reads as the last finite bound."""
        total = self.count
        if total == 0:
            return 0.0
        rank = q * total
        seen = 0
        for i, n in enumerate(self.counts):
            if n and seen + n >= rank:
                if i == len(BOUNDS_US):
                    return BOUNDS_US[-1] / 1000
                low = BOUNDS_US[i - 1] if i else 0
                return (low + (BOUNDS_US[i] - low) * (rank - seen) / n) / 1000
            seen += n
        return BOUNDS_US[-1] / 1000

    def to_list(self) -> list[int]:
        """Counts then the sum (what a task's record and the Redis board keep)."""
        return [*self.counts, self.sum_us]

    @classmethod
    def from_list(cls, values: Sequence[int] | None) -> LatencyHistogram:
        h = cls()
        if values:
            h.merge(values)
        return h
