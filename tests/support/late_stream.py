"""A seeded stream of keyed elements that arrive out of order, by at most a lag
(tests/test_windows_scenarios.py, tests/test_spark_windows.py).
"""

from __future__ import annotations

import random
from typing import Any


def late_stream(seed: int, n: int, lag_ms: int) -> list[dict[str, Any]]:
    """Elements in event-time order, then shuffled within blocks of ``lag_ms``:
    every element arrives at most ``lag_ms - 1`` behind the largest seen so far."""
    rng = random.Random(seed)
    t, elements = 0, []
    for i in range(n):
        t += rng.randrange(0, 7)
        elements.append({"element": {"key": rng.choice("abc"), "t": t, "v": i}})
    blocks: dict[int, list[dict[str, Any]]] = {}
    for e in elements:
        blocks.setdefault(e["element"]["t"] // lag_ms, []).append(e)
    shuffled = []
    for k in sorted(blocks):
        block = blocks[k]
        rng.shuffle(block)
        shuffled += block
    return shuffled
