"""How a command that touches state opens Redis: the preflight first, one place for all.

A command that uses Redis opens it here (``state``, ``deadletter``, ``top``) or calls
``reach`` itself before it does (``plan``, ``shadow``, the Spark engine's start-up); the
URL's shape was checked while ``--redis`` was parsed (``options.redis_option``), and a
Redis error that still reaches the top is one line too (``cli/__init__``).

``open_state`` runs ``state/reach.py``'s check (an unreachable server, a refused
password, a missing database or a cluster node behind ``redis://`` is one line, exit
2) before the client is used. A command that only reads (``state ls/get/dump``,
``deadletter ls``) and finds no state here -- no ``--redis``/``STORMSHIFT_REDIS`` and
no embedded server files in ``./.stormshift`` -- says where it looked and gets None,
instead of creating ``.stormshift/`` and starting an empty embedded Redis to report
nothing. Listing commands then exit 0 (an empty listing is a correct answer, and a
script reading ``--json`` gets no lines, as for an empty namespace); ``state get``
exits 1, as for any key that is not there.
"""

from __future__ import annotations

from typing import Literal, overload

import click

from stormshift.state.client import Redis
from stormshift.state.reach import embedded_dir, reach, state_here, where

__all__ = ["no_namespace", "open_state"]


@overload
def open_state(redis_url: str | None, *, reading: Literal[False]) -> Redis: ...
@overload
def open_state(redis_url: str | None, *, reading: bool) -> Redis | None: ...
def open_state(redis_url: str | None, *, reading: bool) -> Redis | None:
    """A Redis client for ``redis_url`` (see module doc); None when ``reading`` and there
    is no state here (the line saying so is already on stderr)."""
    from stormshift.state.connection import connect

    if reading and not state_here(redis_url):
        click.echo(f"no state here: no embedded Redis in {embedded_dir()} and no --redis URL "
                   "(or STORMSHIFT_REDIS). Run from the directory `stormshift run` ran in, or "
                   "pass --redis URL", err=True)
        return None
    reach(redis_url)
    return connect(redis_url)


def no_namespace(r: Redis, namespace: str, redis_url: str | None) -> bool:
    """True (and one line on stderr) when ``namespace`` has no key on the server."""
    from stormshift.state.keys import all_keys_pattern

    for pattern in all_keys_pattern(namespace):
        for _key in r.scan_iter(match=pattern, count=1000):
            return False
    click.echo(f"no state namespace {namespace!r} in {where(redis_url)}; `stormshift state ls` "
               "lists the namespaces there", err=True)
    return True
