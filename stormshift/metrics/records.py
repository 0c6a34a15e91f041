"""The run's metrics board in Redis, so ``stormshift top NAME`` reads it from any shell.

The driver writes the whole board (JSON, a few kB) once per batch under
``keys.metrics_key``; ``top`` reads it. It is a report, not state: it is not
fenced, expires a day after the run's last write, and the next run on the
namespace starts it again from zero.
"""

from __future__ import annotations

import json

from stormshift.metrics.board import Board
from stormshift.state import keys as K
from stormshift.state.client import Redis
from stormshift.state.connection import retrying

__all__ = ["RECORD_TTL_SECS", "read_board", "write_board"]

RECORD_TTL_SECS = 86400


@retrying
def write_board(r: Redis, namespace: str, board: Board) -> None:
    r.set(K.metrics_key(namespace), json.dumps(board.to_dict(), separators=(",", ":")),
          ex=RECORD_TTL_SECS)


@retrying
def read_board(r: Redis, namespace: str) -> Board | None:
    """The namespace's last board, or None when no run has written one."""
    raw = r.get(K.metrics_key(namespace))
    return None if raw is None else Board.from_dict(json.loads(raw))
