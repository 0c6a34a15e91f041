"""The cut-over record, beside the port's state (``keys.cutover_key``).

``record`` (JSON) is the current cut-over: ``status`` (``live`` from the seed on,
``handed_back`` after a hand-back), the port's checkpoint, where each spout started
(``start``: spout -> partition -> offset), the txid the seed was written at, what was
seeded, and the hand-back's position when there was one. ``history`` lists every
transition, oldest first, so an operator sees each cut-over and hand-back of the
namespace. A cut-over after a hand-back seeds again from the legacy's store.
"""

from __future__ import annotations

import json
from typing import Any

from stormshift.state import keys as K
from stormshift.state.client import Redis

__all__ = ["HANDED_BACK", "LIVE", "history", "read_record", "record_ops", "write_record"]

LIVE = "live"
HANDED_BACK = "handed_back"


def read_record(r: Redis, namespace: str) -> dict[str, Any] | None:
    raw = r.hget(K.cutover_key(namespace), "record")
    return json.loads(raw) if raw else None


def history(r: Redis, namespace: str) -> list[dict[str, Any]]:
    raw = r.hget(K.cutover_key(namespace), "history")
    return list(json.loads(raw)) if raw else []


def record_ops(r: Redis, namespace: str, record: dict[str, Any]) -> dict[str, str]:
    """The fields to write for ``record`` (history appended), for a caller's transaction."""
    past = history(r, namespace)
    entry = {k: record.get(k) for k in ("status", "at_ms", "checkpoint", "seed_txid", "forced")}
    entry["position"] = record.get("handback", {}).get("position") if record.get(
        "status") == HANDED_BACK else record.get("start")
    return {"record": json.dumps(record, sort_keys=True),
            "history": json.dumps([*past, entry], sort_keys=True)}


def write_record(r: Redis, namespace: str, record: dict[str, Any]) -> None:
    r.hset(K.cutover_key(namespace), mapping=record_ops(r, namespace, record))
