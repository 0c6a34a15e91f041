"""The Redis side of what Spark tasks report to the driver: batch counters and attempt counts.

Task side, a member's counters record goes in with its task transaction
(``state/task_txn.py`` step 7, fenced with the rest of its writes); the driver reads every record of a
batch after its last stage (``read_records``) and drops them (``drop``). The
record's own layout (msgpack of the counters) is the engine's:
``engines/spark/task/counters.py``. Attempt counts are for reporting only:
``count_attempt`` says whether a task of a batch started before (Spark's
attempt number restarts at 0 after a stage re-attempt or a driver restart),
``note`` counts ``retried`` / ``fenced`` attempts of the run.
"""

from __future__ import annotations

from stormshift.engines.spark.records import keys as RK
from stormshift.state import keys as K
from stormshift.state.client import Redis
from stormshift.state.connection import retrying

__all__ = ["ATTEMPTS_TTL_SECS", "count_attempt", "drop", "note", "read_records"]

ATTEMPTS_TTL_SECS = 7 * 86400


@retrying
def read_records(r: Redis, namespace: str, txid: int) -> list[tuple[str, bytes]]:
    """Every ``(member:task, record)`` of batch ``txid``, in field order."""
    raw = r.hgetall(K.stats_key(namespace, txid))
    return sorted(((k.decode() if isinstance(k, bytes) else k), v) for k, v in raw.items())


@retrying
def drop(r: Redis, namespace: str, txid: int) -> None:
    """The driver has read batch ``txid``'s records."""
    r.delete(K.stats_key(namespace, txid))


@retrying
def count_attempt(r: Redis, namespace: str, txid: int, head: str, task: int) -> int:
    """How many times task ``task`` of ``head`` in batch ``txid`` has started (this time
    included)."""
    key = RK.batch_attempts_key(namespace, txid)
    pipe = r.pipeline(transaction=False)
    pipe.hincrby(key, f"{head}:{task}", 1)
    pipe.expire(key, ATTEMPTS_TTL_SECS)
    return int(pipe.execute()[0])


@retrying
def note(r: Redis, namespace: str, what: str) -> None:
    """Count one ``retried`` or ``fenced`` task attempt of the namespace."""
    if what not in ("retried", "fenced"):
        raise ValueError(f"batchstats.note: {what!r} is not 'retried' or 'fenced'")
    r.hincrby(RK.attempts_key(namespace), what, 1)
