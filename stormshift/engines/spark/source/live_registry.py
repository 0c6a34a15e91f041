"""The live spout instances of this process: one registry that the read and the spout host share.

Why a module of its own: an executor-side spout's live instance
(``live_spout.LiveSpout``) is kept in whichever process runs it -- a Python
worker (``read/chunk_read.py``) or a spout host (``spouthost/spout_host.py``) -- and both
find it by the same key, which also names the host's socket
(``read/host_client.socket_path``). Keeping the registry, its key and the error a
catch-up raises here lets ``live_spout.py``, ``read/`` and ``spouthost/`` import it
without importing each other in a circle.

Words: a *live key* is (namespace, spout, task, class path, topology config,
component config, wiring): an instance built for another key (a redeploy with
other config or wiring) is never reused.
"""

from __future__ import annotations

from typing import Any

from stormshift.errors import SpoutNotDeterministic

__all__ = ["LIVE", "SpoutNotDeterministic", "forget_live_spouts", "live_key"]

#: this process's live instances (``live_spout.LiveSpout``) by :func:`live_key`
LIVE: dict[tuple[Any, ...], Any] = {}


def live_key(opts: Any, task: int) -> tuple[Any, ...]:
    """The key of spout task ``task``'s live instance under the parsed source options ``opts``."""
    graph, comp = opts.graph, opts.graph.component(opts.spout)
    return (opts.namespace, opts.spout, task, comp.class_path, repr(sorted(graph.config.items())),
            repr(sorted(comp.config.items())), graph.wiring())


def forget_live_spouts() -> None:
    """Drop every live instance of this process (a host whose request failed half-way; tests:
    a fresh worker)."""
    LIVE.clear()
