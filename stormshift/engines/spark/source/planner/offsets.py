"""The offsets both planners return (their format: ``source.py``), as pure functions.

End of input and the ``fin`` batch (``after_done``), the next offset (``next_offset``),
and the ``--max-tuples`` budget (``stormshift.engines.budget``): the count per spout task
carried in ``n``, each task's limit for this batch, and going on from a capped offset.
"""

from __future__ import annotations

from typing import Any

from stormshift.engines.spark.source.options import Opts, now_ms

__all__ = ["after_done", "counts_of", "limits", "next_offset", "over_budget", "resume"]


def _clock(opts: Opts, start: dict) -> int:
    return now_ms() // opts.tick_ms if opts.tick_ms > 0 else 0


def after_done(opts: Opts, start: dict) -> dict:
    """End of input is in a batch: drain ticks, then the ``fin`` batch.

    Without ticking bolts ``fin`` comes at once. Otherwise the tick clock ``k``
    keeps moving for ``opts.drain_ticks`` intervals (``ticks.drain_ticks``: what the
    ticking bolts need to flush what they hold before ``--until-done`` stops the
    query); an unchanged offset plans no batch.
    """
    drained = int(start.get("drain", 0))
    if opts.tick_ms <= 0 or drained >= opts.drain_ticks:
        return {**start, "fin": True}
    k = _clock(opts, start)
    if k == start.get("k"):
        return start
    return {**start, "k": k, "drain": drained + 1}


def next_offset(opts: Opts, start: dict, name: str, position: Any, done: bool, empty: bool,
                counts: list[int], capped: bool, in_flight: bool = False) -> dict:
    """The next offset. End of input (or of the budget) found with nothing new to read
    and no ticks to drain: this empty batch is the ``fin`` batch itself (planning it
    commits, and so acks, the last data batch), rather than one more empty batch after it.

    Nothing new while planned tuples wait for their acks (``in_flight``): the ack count
    ``a`` moves, so Spark plans one empty batch, and planning it commits the last data
    batch, whose acks then reach the spout (Spark commits a source's batch only when it
    plans the next one; a spout that ends once its tuples are acked would otherwise
    wait for acks that never come)."""
    fin = done and empty and opts.tick_ms <= 0
    k = start.get("k", 0) if done else _clock(opts, start)
    a = int(start.get("a", 0)) + (1 if in_flight and empty and not done else 0)
    return {name: position, "n": counts, "done": done, "fin": fin, "k": k, "capped": capped, "a": a}


def counts_of(start: dict, par: int) -> list[int]:
    """Tuples per spout task in batches up to ``start`` (an offset without ``n``, from
    an older stormshift, or written for another ``par``, counts from zero)."""
    n = start.get("n")
    return [int(x) for x in n] if isinstance(n, list) and len(n) == par else [0] * par


def over_budget(opts: Opts, counts: list[int]) -> bool:
    return 0 <= opts.max_total <= sum(counts)


def limits(opts: Opts, counts: list[int], ended: list[bool]) -> list[int]:
    """Tuples each task may add in this batch: ``batch_max``, cut at its target."""
    if opts.max_total < 0:
        return [opts.batch_max] * len(counts)
    from stormshift.engines.budget import task_targets

    targets = task_targets(opts.max_total, counts, ended)
    return [max(0, min(opts.batch_max, t - c)) for t, c in zip(targets, counts)]


def resume(opts: Opts, start: dict) -> dict:
    """An offset that ended a run at its budget (``capped``) ends this run too, unless
    this run's budget is larger (or none): then reading goes on from it. The counts
    come from the offset Spark logged, never from this process's memory."""
    if not (start.get("done") and start.get("capped")) or over_budget(opts, list(start.get("n") or [])):
        return start
    resumed = {k: v for k, v in start.items() if k != "drain"}
    resumed.update(done=False, fin=False, capped=False)
    return resumed
