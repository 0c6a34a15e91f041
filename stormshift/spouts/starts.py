"""Where a new query of a replayable spout starts: its own start, or offsets it is given.

``stormshift cutover`` starts the port at the legacy's position through the config entry
``stormshift.start_offsets`` (``{spout: {partition: offset}}``); ``base.ReplayableSpout``
reads it at ``initialize``, and every caller asks these two functions instead of the
spout's ``replay_initial_offset(s)``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["START_OFFSETS_KEY", "initial_offset", "initial_offsets"]

#: config entry ``{spout: {partition: offset}}``: where a new query of each spout starts,
#: over its own ``start`` setting (``stormshift cutover`` starts the port at the legacy's
#: position so); partitions not named start as the spout says.
START_OFFSETS_KEY = "stormshift.start_offsets"


def initial_offsets(spout: Any) -> dict[str, Any]:
    """Where a new query starts: the spout's own initial offsets, with the partitions a
    ``stormshift.start_offsets`` entry names at the offsets it gives."""
    given = getattr(spout, "_start_at", None) or {}
    return {**spout.replay_initial_offsets(), **given}


def initial_offset(spout: Any, partition: str) -> Any:
    """The start of one (possibly new) partition, as :func:`initial_offsets`."""
    given = getattr(spout, "_start_at", None) or {}
    return given[partition] if partition in given else spout.replay_initial_offset(partition)
