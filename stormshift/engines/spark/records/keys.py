"""The Spark engine's record key names, beside the records (``state/keys.py`` keeps the state's).

Each name is built on the state's layout (``state/keys.py``: the ``ss:`` prefix, the
namespace's hash tag, a task's key group), so the records live in the state's server and
slot and a namespace's keys are still found by ``keys.all_keys_pattern``; the state never
reads them. Namespace-wide records are ``ss:{ns}:spark:...``; a spout task's logs are in
its task's group, ``ss:{ns:g}:t:C:T:...``, so a fenced script reaches them with the
task's fence. Their writers and readers are this folder's modules (said per key).
"""

from __future__ import annotations

from stormshift.state import keys as K

__all__ = [
    "attempts_key",
    "batch_attempts_key",
    "chunk_key",
    "query_start_key",
    "source_lag_key",
    "spout_report_key",
    "stop_key",
    "ticks_key",
    "wal_key",
    "wal_seen_key",
    "window_times_key",
    "window_trackers_key",
]


def stop_key(ns: str) -> str:
    """Set by the driver while it stops its query (``--duration``): sources plan no new batch."""
    return K.ns_key(ns, "spark:stop")


def ticks_key(ns: str) -> str:
    """The tick times the Spark driver recorded per batch (``engines/spark/driver/ticks.py``)."""
    return K.ns_key(ns, "spark:ticks")


def spout_report_key(ns: str, spout: str, part: str) -> str:
    """What a spout's planner process reports to the driver: ``errors`` (a hash of error
    kinds), ``warnings`` (a set) and ``logs`` (a list of log lines); the driver reads them."""
    return K.ns_key(ns, f"spark:spout-{part}:{spout}")


def source_lag_key(ns: str) -> str:
    """Replayable sources' lag behind their head (hash spout -> JSON ``SourceLag``),
    written by each source's planner after it plans a batch, read by the driver with the
    batch (``engines/spark/records/runrecords.py``); a report, not state."""
    return K.ns_key(ns, "spark:source-lag")


def attempts_key(ns: str) -> str:
    """Counters of Spark task attempts: ``retried`` (a task of a batch started again: Spark
    retry, speculative copy, stage re-attempt, re-run after a driver restart) and ``fenced``
    (a zombie's writes refused)."""
    return K.ns_key(ns, "spark:attempts")


def batch_attempts_key(ns: str, txid: int) -> str:
    """Hash ``head:task`` -> how many times that task of batch ``txid`` started."""
    return f"{attempts_key(ns)}:{txid}"


def window_times_key(ns: str) -> str:
    """Hash txid -> the time and watermarks the Spark driver recorded for that batch
    (``engines/spark/driver/windows.py``; ``engines/spark/records/watermarks.py``)."""
    return K.ns_key(ns, "spark:window-times")


def window_trackers_key(ns: str) -> str:
    """Hash txid -> the windowed bolts' watermark trackers as of that batch (same modules)."""
    return K.ns_key(ns, "spark:window-trackers")


def wal_key(ns: str, component: str, task_index: int) -> str:
    """Stream: the write-ahead log of one spout task (``engines/spark/records/wal.py``)."""
    return K.task_key(ns, component, task_index, "wal")


def wal_seen_key(ns: str, component: str, task_index: int, bucket: int | str) -> str:
    """Hash msg key -> [seq, digest] of one window bucket of a spout task's log (``*``: all)."""
    return K.task_key(ns, component, task_index, f"wal-seen:{bucket}")


def chunk_key(ns: str, component: str, task_index: int, part: str) -> str:
    """An executor-side spout task's chunk log (``engines/spark/records/chunks.py``): ``heads`` (hash chunk
    number -> header), ``data`` (hash chunk number -> tuples) and ``acked`` (the ack mark)."""
    return K.task_key(ns, component, task_index, f"chunk-{part}")


def query_start_key(ns: str, checkpoint_id: str, spout: str) -> str:
    """Where a replayable spout's query started for one checkpoint (JSON offsets, written
    once: ``engines/spark/records/starts.py``)."""
    return K.ns_key(ns, f"spark:start:{K.check_name('checkpoint id', checkpoint_id)}:{spout}")
