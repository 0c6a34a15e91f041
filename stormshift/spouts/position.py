"""Where a replayable spout writes its acked position (``<prefix>.commit_position``).

A legacy run on the local engine acks as Storm does; a spout given ``commit_position``
writes, per partition of its task, the position below which every record is acked, so
``stormshift cutover`` can start the port there. Its own module: the writing (a Redis
hash, or a JSON file replaced atomically) is I/O the spout's loop (``base.py``) only calls.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

__all__ = ["write_position"]


def write_position(where: Mapping[str, Any], offsets: Mapping[str, Any]) -> None:
    """Write ``offsets`` to ``where``: ``{"redis_hash": KEY, "url": URL}`` (field partition
    -> offset) or ``{"file": PATH}`` (a JSON object, replaced atomically). Other tasks'
    partitions are left as they are."""
    if "redis_hash" in where:
        import redis

        client = redis.Redis.from_url(str(where.get("url") or "redis://127.0.0.1:6379/0"))
        if offsets:
            client.hset(str(where["redis_hash"]), mapping={p: str(o) for p, o in offsets.items()})
        return
    path = str(where["file"])
    try:
        with open(path, encoding="utf-8") as fh:
            known = json.load(fh)
    except FileNotFoundError:
        known = {}
    known.update(offsets)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(known, fh, sort_keys=True)
    os.replace(tmp, path)

