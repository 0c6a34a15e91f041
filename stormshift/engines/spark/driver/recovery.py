"""Start-up checks that the state server still holds what Spark believes committed.

Spark never re-runs a batch its commit log lists. If Redis lost the commit
record of such a batch (restarted without an append-only file, failed over
to a replica that had not received it), its state changes are gone and a
restart would silently skip them: the one failure exactly-once cannot
repair by replay. So the engine compares both records before it starts and
refuses to run when Redis is behind, naming the fix.
"""

from __future__ import annotations

import os

from stormshift.errors import StateError
from stormshift.state.client import Redis

__all__ = ["check_not_behind", "durability_warning", "last_spark_commit"]


def last_spark_commit(spark_checkpoint: str) -> int | None:
    """The highest batch id in Spark's commit log (``<checkpoint>/commits/<id>``), None if none."""
    folder = os.path.join(spark_checkpoint, "commits")
    try:
        ids = [int(name) for name in os.listdir(folder) if name.isdigit()]
    except FileNotFoundError:
        return None
    return max(ids) if ids else None


def check_not_behind(spark_checkpoint: str, base: int, committed: int, where: str) -> None:
    """Raise StateError if Spark committed a batch whose txid Redis does not have."""
    last = last_spark_commit(spark_checkpoint)
    if last is None or base + last <= committed:
        return
    raise StateError(
        f"the state server {where} has committed txid {committed}, but Spark's checkpoint "
        f"{spark_checkpoint} says batch {last} (txid {base + last}) committed: Redis lost "
        "committed state (restarted without appendonly, or failed over to a replica that "
        "lagged). Resuming would skip those batches. Fix: restore Redis from its backup/AOF, or "
        "rerun from the start with a new --checkpoint and --reset-state."
    )


def durability_warning(r: Redis, where: str) -> str | None:
    """A warning if the server cannot survive its own restart with committed state intact."""
    try:
        conf = r.config_get("appendonly")
        fsync = r.config_get("appendfsync").get("appendfsync", "")
    except Exception:  # noqa: BLE001 - CONFIG may be disabled (managed Redis): cannot tell
        return None
    if conf.get("appendonly") != "yes":
        return (f"state server {where} keeps no append-only file (appendonly no): if it restarts, "
                "committed state is lost and the engine will refuse to resume. Use appendonly yes "
                "(appendfsync always to survive a power loss).")
    if fsync != "always":
        return (f"state server {where} fsyncs its append-only file '{fsync}': a power loss can drop "
                "the last second of commits (a Redis process crash cannot). appendfsync always "
                "closes that window.")
    return None
