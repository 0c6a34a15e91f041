"""How often a hosted task times a tuple: one in ``SAMPLE_EVERY``.

Here, beside the kernel that samples, rather than in ``metrics/latency.py`` that folds the
samples: the adapters layer sits below metrics (metrics' records know state, which knows
the adapters), so the kernel importing metrics made the folders a loop.
"""

from __future__ import annotations

__all__ = ["SAMPLE_EVERY"]

SAMPLE_EVERY = 16  # a power of two: tuple n is timed when ``n & (SAMPLE_EVERY - 1) == 1``
