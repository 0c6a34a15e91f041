"""The read of an executor-side spout's chunk: its first read logs it, every later one re-reads it.

Executor mode (``stormshift.spout.executor``, ``../planner/chunk_planner.py``): the
planner only numbers chunks; the read of task *i*'s partition for chunk *k*
(``chunk_entries``) runs here, in a Spark Python worker:

1. take a new epoch for the task (a zombie attempt's write is refused);
2. chunk *k* is logged (a retried task, a batch re-run after a crash): re-read it;
3. else the task's live instance (``../live_spout.py``) emits the chunk -- in a
   spout host that every Python worker of the executor asks (``host_client.py``,
   the default), else (``stormshift.spout.host`` false) in this worker -- and this
   worker logs it (first writer wins).
"""

from __future__ import annotations

from typing import Any

from stormshift.engines.spark.diagnostics import faults
from stormshift.engines.spark.records.chunks import ChunkLog
from stormshift.engines.spark.source.live_registry import LIVE, live_key
from stormshift.engines.spark.source.live_spout import emit_chunk, keep
from stormshift.errors import SpoutReadError

__all__ = ["HOST_KEY", "chunk_entries", "drain_acks", "host_mode"]

HOST_KEY = "stormshift.spout.host"


def chunk_entries(opts: Any, task: int, number: int, limit: int) -> list[Any]:
    """The entries of chunk ``number`` of spout task ``task``: logged by this read if it is
    the first, else re-read (module doc). With a spout host (``host_client.py`` /
    ``../spouthost/spout_host.py``, the default) the live instance lives there, else in this worker."""
    from stormshift.engines.spark.runtime.worker import redis_for

    log = ChunkLog(redis_for(opts.redis_url), opts.namespace, opts.spout, task)
    log.take_epoch()
    got = log.payload(number)
    if got is not None:
        return got[0]
    if host_mode(opts):
        from stormshift.engines.spark.source.read.host_client import chunk_from_host

        entries = chunk_from_host(opts, task, number, limit, log)
    else:
        entries = _chunk_here(opts, task, number, limit, log)
    faults.hit("source.after_chunk_log", spout=opts.spout, task=task, chunk=number)
    return entries


def _chunk_here(opts: Any, task: int, number: int, limit: int, log: ChunkLog) -> list[Any]:
    live, entries, msg_ids, head = emit_chunk(opts, task, number, limit, log.acked(), log)
    # an instance whose emits did not reach the log (another attempt logged the chunk
    # first, or the put raised) is off the log: it stays out of the cache
    if not log.put(number, head, entries, msg_ids):
        got = log.payload(number)
        if got is None:
            raise SpoutReadError(f"spout {opts.spout!r} task {task}: chunk {number} vanished")
        return got[0]
    keep(opts, task, live, number, msg_ids)
    return entries


def host_mode(opts: Any) -> bool:
    """Whether the task's live instance runs in a spout host process (``../spouthost/spout_host.py``):
    ``stormshift.spout.host``, the spout's config else the topology's (default yes); not
    for options built in-process (no string form to send the host)."""
    if not getattr(opts, "raw", None):
        return False
    comp = opts.graph.component(opts.spout)
    value = comp.config.get(HOST_KEY, opts.graph.config.get(HOST_KEY, True))
    return value is True or str(value).lower() in ("true", "1", "yes")


def drain_acks(opts: Any, task: int) -> None:
    """A read with no chunk (the task ended, or the batch that ends the run): the task's
    instance on this worker, if any, still gets the acks of committed chunks."""
    if host_mode(opts):
        from stormshift.engines.spark.source.read.host_client import acks_to_host

        acks_to_host(opts, task)
        return
    live = LIVE.get(live_key(opts, task))
    if live is not None and live.unacked:
        from stormshift.engines.spark.runtime.worker import redis_for

        live.drain_acks(ChunkLog(redis_for(opts.redis_url), opts.namespace, opts.spout, task).acked())
