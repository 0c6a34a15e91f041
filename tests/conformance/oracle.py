"""What each scenario must produce, computed in plain Python from its input rows.

Nothing here runs an engine or imports a component: each function restates, from the
Storm documentation, what the topology computes (groupings' promises, a fail's replay, a
tumbling window's sum). The harness (``harness.py``) reduces an engine's run to the same
*views* (``VIEWS`` there), so one comparison serves both engines.

Each oracle returns ``{check: expected}`` for the checks its scenario file lists;
``failed_inputs`` is the number of spout tuples that can never succeed (Storm: replayed,
then given up; Spark: dead-lettered once each).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

Rows = list[list[Any]]


def groupings(rows: Rows) -> dict[str, Any]:
    ns = sorted(n for n, _ in rows)
    evens = [n for n in ns if n % 2 == 0]
    odds = [n for n in ns if n % 2]
    keys = sorted({k for _, k in rows})
    return {
        # shuffle / none / local_or_shuffle: every tuple to exactly one task, any task
        "shuffle_seen:seen n": ns,
        "none_seen:seen n": ns,
        "local_seen:seen n": evens,
        # fields: every tuple once, and each key's tuples meet on one task
        "fields_seen:seen n": ns,
        "fields_seen:seen tasks_per_key": dict.fromkeys(keys, 1),
        # all: every task gets every tuple; global: only the lowest task, all of them
        "all_seen:seen n_by_task": {"0": ns, "1": ns},
        "global_seen:seen n_by_task": {"0": ns},
        # a named stream behind a fields grouping on n
        "odd_seen:seen n": odds,
        # direct: the task the emitter named (n % 2)
        "direct_seen:seen n_by_task": {"0": evens, "1": odds},
    }


def ticks(rows: Rows) -> dict[str, Any]:
    count: Counter = Counter()
    total: Counter = Counter()
    for n, key in rows:
        count[key] += 1
        total[key] += n
    # every tuple reaches exactly one flush (BatchingBolt) / one tick's emit (bucket)
    return {
        "buffer:default totals_by_key": {k: [count[k], total[k]] for k in sorted(count)},
        "bucket:default totals_by_key": {k: [total[k]] for k in sorted(total)},
    }


def anchoring(rows: Rows) -> dict[str, Any]:
    good = [[n, "x"] for n, _ in rows] + [[n, "y"] for n, _ in rows if n % 5]
    return {
        # a replayed tree re-emits its good half (Storm is at-least-once): compare as sets
        "checker:default distinct": sorted(good),
        "failed_inputs": sum(1 for n, _ in rows if n % 5 == 0),
    }


def deadletter(rows: Rows) -> dict[str, Any]:
    return {
        "poison:default distinct": sorted([n, k] for n, k in rows if n % 11 != 3),
        "failed_inputs": sum(1 for n, _ in rows if n % 11 == 3),
    }


def _sums(rows: Rows) -> dict[str, int]:
    sums: Counter = Counter()
    for n, key in rows:
        sums[key] += n
    return dict(sorted(sums.items()))


def snapshot_state(rows: Rows) -> dict[str, Any]:
    sums = _sums(rows)
    return {"sums:default latest": {k: [k, v] for k, v in sums.items()},
            "sums attr:sums": sums}


def keyed_maps(rows: Rows) -> dict[str, Any]:
    sums = _sums(rows)
    return {"maps:default latest": {k: [k, v] for k, v in sums.items()},
            "maps map:sums": sums,
            "maps map:counts": dict(sorted(Counter(k for _, k in rows).items())),
            "maps map:last": dict(sorted({k: n for n, k in rows}.items()))}


def windows(rows: Rows, window_ms: int = 10) -> dict[str, Any]:
    panes: dict[tuple[str, int], int] = defaultdict(int)
    for n, key in rows:
        panes[(key, n - n % window_ms)] += n
    sliding: dict[tuple[str, int], int] = defaultdict(int)
    for n, key in rows:  # windows [s, s + 2w) for s a multiple of w: the two holding n
        for start in (n - n % window_ms - window_ms, n - n % window_ms):
            sliding[(key, start)] += n
    return {"windows:default rows": sorted([k, start, start + window_ms, total]
                                           for (k, start), total in panes.items()),
            "sliding:default rows": sorted([k, start, start + 2 * window_ms, total]
                                           for (k, start), total in sliding.items())}


def clean_end(rows: Rows) -> dict[str, Any]:
    """A reliable spout ends once its last tuple is acked: no engine should have to guess
    that it ended (the idle-timeout warning), and every tuple was processed once."""
    return {"end_warnings": [], "sums attr:sums": _sums(rows)}


ORACLES: dict[str, Callable[[Rows], dict[str, Any]]] = {
    "groupings": groupings, "ticks": ticks, "anchoring": anchoring, "deadletter": deadletter,
    "snapshot_state": snapshot_state, "keyed_maps": keyed_maps, "windows": windows,
    "clean_end": clean_end,
}
