"""Spark's offset log, read by the driver: what each source planned for a batch id.

``<checkpoint>/offsets/<batch id>`` holds a version line, a metadata line and one
offset per source (``source/source.py``'s format). A re-run of a batch id plans
from the same file, so what the driver decides from it (the final batch, a drain
step's ticks) is the same on every re-run.
"""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = ["batch_offsets", "drain_step"]


def batch_offsets(spark_checkpoint: str, batch_id: int) -> list[Any] | None:
    """The sources' offsets of batch ``batch_id``; None when the file cannot be read (no
    such batch, or a checkpoint the driver does not see as local files)."""
    path = os.path.join(spark_checkpoint, "offsets", str(batch_id))
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()[2:]
    except OSError:
        return None
    return [json.loads(line) for line in lines if line.strip() and line.strip() != "-"]


def _drained(offsets: list[Any] | None) -> int:
    return max((int(o.get("drain", 0)) for o in offsets or [] if isinstance(o, dict)), default=0)


def drain_step(spark_checkpoint: str, batch_id: int) -> int | None:
    """The drain step batch ``batch_id`` is (1, 2, ...: ``offsets.after_done`` counts them
    in the ``drain`` field), or None when it is none (or the log cannot be read): a step
    is a batch whose ``drain`` count is above its predecessor's."""
    offsets = batch_offsets(spark_checkpoint, batch_id)
    if offsets is None:
        return None
    step = _drained(offsets)
    before = _drained(batch_offsets(spark_checkpoint, batch_id - 1)) if batch_id > 0 else 0
    return step if step > before else None
