"""Hosting user streamparse components in-process, tuples and routing.

Knows neither Spark nor Redis (see DESIGN.md). Engines build a host per
task (``host_component``), ``open()`` it, drive it and drain its ``Outbox``.
Every tuple a bolt executes, in either engine, goes through the per-tuple
kernel (``kernel.py``: one tuple, or chunks of value lists, each attempt's
outcome classified); ``retry_policy.py`` decides what a batch engine does with
an attempt that did not succeed (retry, redo the member, dead-letter), and
``attempts.py`` (``MemberAttempts``) whether a member's run stands or runs
again, with an explicit status per member.
"""

from stormshift.adapters.context import storm_context
from stormshift.adapters.host import (
    BoltHost,
    EndOfInput,
    SpoutHost,
    host_component,
    working_dir,
)
from stormshift.adapters.outbox import Emit, Outbox
from stormshift.adapters.routing import Router, choose_tasks, stable_hash
from stormshift.adapters.tuples import (
    Tuple,
    TupleFactory,
    batch_ids,
    counter_ids,
    random_ids,
    tick_tuple,
    to_wire,
)

__all__ = [
    "BoltHost",
    "Emit",
    "EndOfInput",
    "Outbox",
    "Router",
    "SpoutHost",
    "Tuple",
    "TupleFactory",
    "batch_ids",
    "choose_tasks",
    "counter_ids",
    "host_component",
    "random_ids",
    "stable_hash",
    "storm_context",
    "tick_tuple",
    "to_wire",
    "working_dir",
]
