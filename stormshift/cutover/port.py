"""Where the port stands: the offsets of its last committed batch, per spout.

The driver records ``committed = txid`` in Redis before Spark's own commit log, so the
committed txid, less the checkpoint's base, names the batch whose planned offsets
(Spark's offset log) are what the port has consumed. Before its first batch the port
stands where the cut-over started it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from stormshift.state.commit import CommitLog

__all__ = ["port_position"]


def port_position(r: Any, namespace: str, record: Mapping[str, Any]) -> tuple[int, dict[str, dict[str, Any]]]:
    """``(committed txid, spout -> partition -> offset)`` of the port now."""
    from stormshift.engines.spark import batch_offsets

    committed = CommitLog(r, namespace).committed()
    start: dict[str, dict[str, Any]] = {s: dict(o) for s, o in record.get("start", {}).items()}
    checkpoint = str(record.get("checkpoint", ""))
    try:
        with open(os.path.join(checkpoint, "stormshift-checkpoint-id"), encoding="utf-8") as fh:
            ck_id = fh.read().strip()
    except OSError:
        return committed, start
    base = CommitLog(r, namespace).checkpoints().get(ck_id)
    if base is None or committed < base:
        return committed, start
    sources = batch_offsets(os.path.join(checkpoint, "spark"), committed - base) or []
    for spout, offsets in start.items():
        for source in sources:
            planned = source.get("p") if isinstance(source, dict) else None
            if planned and set(offsets) <= set(planned):
                offsets.update(planned)
                break
        start[spout] = offsets
    return committed, start
