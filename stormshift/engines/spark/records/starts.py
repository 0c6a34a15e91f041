"""Where a replayable spout's query started, resolved once per checkpoint.

Spark asks a new query's source for its initial offset again when the driver restarts
before batch 0 committed (batch 0 has no earlier batch in the offset log to start from).
A start resolved against a moving source -- Kafka's ``latest``, a timestamp, a consumer
group's committed offsets, which the legacy topology may still be advancing -- would then
differ from the start batch 0 was planned with, and the re-run batch would read another
range. Spark's own Kafka connector keeps its first answer in the checkpoint for this
reason; here it is kept in Redis beside the state, under the checkpoint's id, and every
later call returns the first answer (``SET NX``: two planners racing agree too).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from stormshift.engines.spark.records import keys as RK
from stormshift.state.client import Redis
from stormshift.state.connection import retrying

__all__ = ["query_start"]


def query_start(r: Redis, namespace: str, checkpoint_id: str, spout: str,
                resolve: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The offsets ``spout``'s query started from in checkpoint ``checkpoint_id``:
    ``resolve()`` the first time, what that call returned every time after."""
    key = RK.query_start_key(namespace, checkpoint_id, spout)

    @retrying
    def stored() -> bytes | None:
        return r.get(key)

    @retrying
    def keep(offsets: dict[str, Any]) -> None:
        r.set(key, json.dumps(offsets, sort_keys=True), nx=True)

    found = stored()
    if found is None:
        keep(resolve())
        found = stored()
    if found is None:  # deleted in between (a `state reset` racing a start): resolve again
        return query_start(r, namespace, checkpoint_id, spout, resolve)
    return dict(json.loads(found))
