"""The driver's side of its namespace lease (``state/lease.py`` says what a lease is).

Runs in the driver process. The lease is taken at start-up step 2 (``startup.py``),
before the JVM and before any epoch; the timer renews it while the query runs; each
batch first checks it is still this run's (``LeasedBatches``), and each committed batch
renews it with the count. A run whose lease was taken over stops its query at once,
with no clean stop: a clean stop would set the namespace's stop flag, which the new
run's sources read too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stormshift.state.client import Redis
from stormshift.state.lease import LeaseKeeper
from stormshift.topology.graph import TopologyGraph

__all__ = ["LeasedBatches", "take_lease", "what_starts"]


def what_starts(state_mode: str) -> str:
    """The command a refusal names: ``run``, ``run --reset-state``, ``run --adopt-state``."""
    return {"reset": "run --reset-state", "adopt": "run --adopt-state"}.get(state_mode, "run")


def take_lease(r: Redis, namespace: str, graph: TopologyGraph, checkpoint_dir: str, *, state_mode: str,
               takeover: bool, say: Callable[[str], None] | None) -> LeaseKeeper:
    """Acquire the namespace's lease (``LeaseHeldError`` beside a live run, nothing
    written) and start renewing it."""
    keeper = LeaseKeeper(r, namespace, topology=graph.name, checkpoint=checkpoint_dir,
                         takeover=takeover, say=say)
    keeper.acquire(what_starts(state_mode))
    keeper.start()
    return keeper


class LeasedBatches:
    """The ``foreachBatch`` function: the lease check, then the batch runner. A batch of a
    run that lost its lease raises ``LeaseLostError`` before it acquires any epoch."""

    def __init__(self, runner: Any, keeper: LeaseKeeper):
        self.runner, self.keeper = runner, keeper

    def __call__(self, df: Any, batch_id: int) -> None:
        self.keeper.check()
        self.runner(df, batch_id)
