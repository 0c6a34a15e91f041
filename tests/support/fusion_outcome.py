"""What the fused plan and ``-o stormshift.fuse=false`` must agree on, for the ``fusedchain``
project (``tests/fixtures/topologies/fusedchain``): its input, its results normalised from a
run's sink rows and bolt state, a key-by-key comparison and the expected values.

Shared by ``test_spark_fusion.py`` (both plans in-process, several batch cuts) and
``test_faults_fusion.py`` (a worker killed in the middle of a fused chain). What a shuffle
grouping leaves open (which task gets a tuple) differs between the plans, so per-task state
of a shuffle-fed bolt is compared summed over its tasks; the fields-grouped ``spend`` per
task. Float sums are added in arrival order, which a shuffle upstream may change: they are
compared to 1e-12 relative; every count and integer sum exactly. ``buckets`` flushes on
ticks (batch time), so its rows are compared as totals per ad.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[1] / "fixtures" / "topologies" / "fusedchain"
ADS = ["Ad1", " ad2", "AD3 ", "ad4", "Ad5", "ad6 ", "aD7"]
FILES = {"part-000.jsonl": 150, "part-001.jsonl": 90}  # uneven on purpose: spout task i, file i


def write_input(folder: Path, seed: int = 11) -> list[dict[str, Any]]:
    """The spout's two files (about 10% free events); the events in file order."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    events, n = [], 0
    for name, count in FILES.items():
        lines = []
        for _ in range(count):
            cents = 0 if rng.random() < 0.1 else rng.randrange(1, 1000)
            event = {"n": n, "ad": rng.choice(ADS), "price": cents / 100}
            events.append(event)
            lines.append(json.dumps(event))
            n += 1
        (folder / name).write_text("\n".join(lines) + "\n")
    return events


def outcome(outputs: Mapping[tuple[str, str], Sequence[Sequence[Any]]],
            tasks: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Sink results per key and bolt state (``tasks``: bolt -> each task's attributes)."""
    report: dict[str, Any] = {}
    emits: Counter[str] = Counter()
    for ad, spend, events, line in outputs.get(("report", "default"), []):
        # the final totals: the emit with the most events (a shuffle-fed report runs on two
        # tasks, so the sink's last row of an ad need not be its last running total)
        if events > report.get(ad, (0, 0))[1]:
            report[ad] = (spend, events, line)
        emits[ad] += 1
    rank: dict[str, Any] = {}
    for ad, updates, top in outputs.get(("rank", "default"), []):
        rank[ad] = max(rank.get(ad, (0, 0.0)), (updates, top))
    buckets: dict[str, list[int]] = {}
    for ad, count, cents in outputs.get(("buckets", "default"), []):
        got = buckets.setdefault(ad, [0, 0])
        got[0] += count
        got[1] += cents

    def summed(bolt: str, attr: str) -> Any:
        values = [t[attr] for t in tasks[bolt]]
        return sum(values, Counter()) if isinstance(values[0], Counter) else sum(values)

    return {
        "report": report, "report_emits": dict(emits), "buckets": buckets,
        "parsed": summed("parse", "parsed"), "enrich_by_ad": dict(summed("enrich", "by_ad")),
        "dropped": summed("drop", "dropped"), "lines": summed("report", "lines"),
        "spend_tasks": [dict(t["spend"]) for t in tasks["spend"]],  # fields-grouped: per task
        "events_tasks": [dict(t["events"]) for t in tasks["spend"]],
        "rank": rank, "rank_tasks": [(dict(t["updates"]), t["top"]) for t in tasks["rank"]],
    }


def differences(a: Any, b: Any, where: str = "") -> list[str]:
    """Where two outcomes differ, key by key (floats to 1e-12 relative)."""
    if isinstance(a, float) or isinstance(b, float):
        ok = isinstance(a, (int, float)) and isinstance(b, (int, float)) and \
            math.isclose(a, b, rel_tol=1e-12)
        return [] if ok else [f"{where}: {a!r} != {b!r}"]
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{where}: keys {sorted(set(a) ^ set(b), key=str)} in one only"]
        return [d for k in sorted(a, key=str) for d in differences(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def check_expected(got: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> None:
    """``got`` (an ``outcome``) holds what the input says, so two runs that agree do not
    agree on nothing."""
    paid: dict[str, list[Any]] = {}
    for e in events:
        cents = round(e["price"] * 100)
        if cents:
            p = paid.setdefault(e["ad"].strip().lower(), [0, 0, []])
            p[0] += 1
            p[1] += cents
            p[2].append(e["price"])
    assert got["parsed"] == len(events) == sum(FILES.values())
    assert got["dropped"] == len(events) - sum(p[0] for p in paid.values()) > 0
    assert sum(got["enrich_by_ad"].values()) == len(events)
    assert differences({ad: list(v[:2]) for ad, v in got["report"].items()},
                       {ad: [math.fsum(p[2]), p[0]] for ad, p in paid.items()}) == []
    per_task = got["events_tasks"]  # fields-grouped: each ad on one task
    assert not set(per_task[0]) & set(per_task[1])
    assert got["report_emits"] == {ad: p[0] for ad, p in paid.items()} == \
        dict(sum((Counter(t) for t in per_task), Counter()))
    assert got["lines"] == sum(p[0] for p in paid.values())
    assert differences(got["rank"], {ad: (p[0], math.fsum(p[2])) for ad, p in paid.items()}) == []
    assert got["buckets"] == {ad: [p[0], p[1]] for ad, p in paid.items()}
