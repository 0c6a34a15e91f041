"""``stormshift plan``'s question, asked of a run's own checkpoint and namespace.

What the new code would do to the state a run left in Redis: the run's engine
settings name the namespace and the key file beside the checkpoint, whose key
verifies the stored snapshots before anything is unpickled; ``plan_upgrade``
(``upgrade.py``) then compares. Reads only. Here, not in the CLI, because the
key and the namespace are the engine's business (the CLI knows only the public
API of ``stormshift.engines.spark``).
"""

from __future__ import annotations

import os
from pathlib import Path

from stormshift.engines.spark.driver.engine import SparkEngine
from stormshift.engines.spark.driver.upgrade import UpgradePlan, plan_upgrade
from stormshift.errors import NotFoundError
from stormshift.state.connection import connect
from stormshift.state.snapshots import HMAC_ENV, SnapshotStore
from stormshift.topology.graph import TopologyGraph

__all__ = ["stored_upgrade_plan"]


def stored_upgrade_plan(graph: TopologyGraph, *, checkpoint_dir: str | None,
                        redis_url: str | None, namespace: str | None) -> tuple[str, UpgradePlan]:
    """``(namespace, plan)`` for ``graph`` on the state of the run with these settings;
    StormshiftError when no key can verify it (nothing ran with this checkpoint)."""
    engine = SparkEngine(graph, checkpoint_dir=checkpoint_dir, redis_url=redis_url,
                         namespace=namespace)
    key_file = Path(engine.checkpoint_dir) / "stormshift-state.key"
    if not (os.environ.get(HMAC_ENV) or graph.config.get("state.hmac_key") or key_file.exists()):
        raise NotFoundError(f"no state key at {key_file}: nothing has run with this "
                            "checkpoint. Fix: pass the run's --checkpoint DIR")
    key, _ = engine._state_key()
    r = connect(redis_url)
    return engine.namespace, plan_upgrade(r, SnapshotStore(r, engine.namespace, key), graph)
