"""``--max-tuples N``: which spout tuples a bounded run takes (both engines, pure logic).

Words:

- *budget* ``N``: spout tuples per run, in total over every spout and every spout
  task. A tuple counts once: a replay of a tuple already taken (same msg id) does
  not count again. On the Spark engine a replayable source counts records (a
  line, a stream entry: a blank or bad one too, the cut being in its offsets).
- *share*: ``N`` split evenly over items in a fixed order -- item ``i`` of ``k``
  gets ``N // k``, plus one when ``i < N % k``. Spouts split the run's budget in
  declaration order; each spout's tasks split its share by task index.
- *consumed*: tuples a spout task has put in the run so far. Spark engine: kept in
  the source's offsets (``n``, one count per task), so Spark's offset log makes it
  durable and a restart from the same checkpoint continues the count. Local
  engine: new tuples the task emitted.
- *ended*: a task whose input ended (a bounded source read to its end, a task
  with no partition, a spout that raised ``StopIteration``). It takes nothing more
  and leaves what its share has not used to the spout's other tasks.
- *target*: how many tuples a task takes in all -- the even split of what the
  ended tasks left, never below what the task already consumed.

A task takes its *first* ``target`` tuples in its own order (a replayable task:
its partitions in sorted order, each in offset order). Targets depend only on
``N``, the task count and how much input the ended tasks had -- not on timing nor
on where batches were cut -- so both engines and any ``--batch-max-tuples`` take
the same tuples. A task whose (unbounded) input has nothing new waits for its
share; ``--duration`` bounds that wait. Shares are not moved between spouts:
each spout's source is planned on its own.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["even_split", "spout_budgets", "task_targets"]


def even_split(total: int, k: int) -> list[int]:
    """``total`` over ``k`` items in order: ``total // k`` each, the first ``total % k`` one more."""
    if k <= 0:
        return []
    base, extra = divmod(max(total, 0), k)
    return [base + (1 if i < extra else 0) for i in range(k)]


def spout_budgets(total: int | None, spouts: Sequence[str]) -> dict[str, int | None]:
    """Each spout's share of the run's budget (``None``: no budget), in declaration order."""
    if total is None:
        return {s: None for s in spouts}
    return dict(zip(spouts, even_split(total, len(spouts))))


def task_targets(total: int, consumed: Sequence[int], ended: Sequence[bool]) -> list[int]:
    """How many tuples each task of one spout takes in all (module doc, *target*).

    Water-filling: ended tasks keep what they consumed; the rest of ``total`` is
    split evenly over the open tasks, except that a task already past its split
    keeps its count and the others split what remains. The sum is ``total``
    while a task is open and no task consumed more than its split.
    """
    k = len(consumed)
    target = list(consumed)
    open_tasks = [i for i in range(k) if not ended[i]]
    rest = total - sum(consumed[i] for i in range(k) if ended[i])
    while open_tasks:
        split = dict(zip(open_tasks, even_split(rest, len(open_tasks))))
        over = [i for i in open_tasks if consumed[i] > split[i]]
        if not over:
            for i in open_tasks:
                target[i] = split[i]
            break
        rest -= sum(consumed[i] for i in over)
        open_tasks = [i for i in open_tasks if i not in over]
    return target
