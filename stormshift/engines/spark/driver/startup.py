"""The Spark engine's start-up, before its JVM: check everything, then bind the state.

Runs in the driver process. Numbered steps; steps 1-5 only read (but for the lease,
taken atomically or not at all), so a refusal there leaves the state server and the
checkpoint as they were:

1. infrastructure (``preflight.py``): checkpoint writable; Java, master, fixed ports;
2. the state server answers (``state/reach.py``); this run takes the namespace's lease
   (``state/lease.py``): a live run there refuses this one before anything else (a
   ``--takeover`` takes it after step 4 instead: a replacement refused there leaves the
   live run alone; step 5 then reads the state the replaced run left);
3. the namespace belongs to this topology (``state/owner.py``);
4. the checkpoint belongs to this topology and namespace, and (``strict``) the namespace
   is bound to it if it holds state (``bound_elsewhere``);
5. every stored task's snapshot verifies with this run's key; what new code does to the
   stored state (``upgrade.py``), refused here before any write;
6. bind the checkpoint (txid base), record the owners;
7. Redis is not behind Spark's commit log; warn if it cannot survive a restart;
8. a changed par (``--par`` or the topology's): state re-split, or refused before any
   write (``state/rescale.py``); then the upgrade's rewritten states.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

from stormshift.engines.spark.driver import preflight
from stormshift.engines.spark.driver.recovery import check_not_behind, durability_warning
from stormshift.errors import OptionError, StateError
from stormshift.state.client import Redis
from stormshift.state.reach import mask_url
from stormshift.topology.graph import TopologyGraph

__all__ = ["prepare_state"]

log = logging.getLogger("stormshift.engines.spark")


def prepare_state(graph: TopologyGraph, namespace: str, checkpoint_dir: str, redis_url: str | None,
                  state_mode: str, checkpoint_id: Callable[[], str],
                  state_key: Callable[[], tuple[bytes, str]],
                  before_jvm: tuple[str, Mapping[str, str], bool],
                  lease: Callable[[Any], Any] | None = None, lease_late: bool = False,
                  ) -> tuple[Any, str, bytes, Any, int, list[str]]:
    """Steps 1-8 of the module doc. ``before_jvm``: (master, Spark conf, session given);
    ``lease(client)``: takes the namespace's lease (raises if a live run holds it) and
    returns it (after step 4 when ``lease_late``); the commit log commits only while the
    run holds it.

    Returns ``(client, url for executors, HMAC key, commit log, txid base, notes for the
    summary)``.
    """
    from pyspark import cloudpickle

    from stormshift.engines.spark.driver.upgrade import (
        UpgradePlan,
        apply_upgrade,
        check_upgrade,
        plan_upgrade,
    )
    from stormshift.state.commit import CommitLog
    from stormshift.state.connection import connect, url_of
    from stormshift.state.owner import check_owner, checkpoint_namespaces, record_owner
    from stormshift.state.reach import reach
    from stormshift.state.rescale import rebalance
    from stormshift.state.snapshots import SnapshotStore

    # Step 1.
    preflight.before_jvm(checkpoint_dir, *before_jvm)
    # Step 2.
    reach(redis_url)
    r = connect(redis_url)
    url = redis_url or url_of(r)
    if url is None:
        raise OptionError("spark engine: cannot tell executors how to reach Redis; fix: pass --redis URL")
    held = lease(r) if lease is not None and not lease_late else None
    # Step 3.
    check_owner(r, namespace, graph, state_mode)
    # Step 4.
    ck_id = checkpoint_id()
    preflight.check_checkpoint_owner(checkpoint_dir, namespace, graph.name,
                                     lambda: checkpoint_namespaces(r, ck_id))
    commit_log = CommitLog(r, namespace, lease=held)
    if state_mode == "strict":
        bound_elsewhere(r, commit_log, namespace, checkpoint_dir, ck_id)
    if lease is not None and lease_late:
        commit_log.lease = lease(r)
    # Step 5.
    key, key_source = state_key()
    snapshots = SnapshotStore(r, namespace, key)
    if state_mode != "reset":
        snapshots.check_key([(b.name, t) for b in graph.bolts
                             for t in range(max(b.par, snapshots.par_of(b.name) or 0))], key_source)
        upgrade = plan_upgrade(r, snapshots, graph)
        check_upgrade(snapshots, upgrade, graph)
    else:  # the state is discarded at step 6: nothing to upgrade
        upgrade = UpgradePlan(0)
    # Step 6.
    base = commit_log.bind_checkpoint(ck_id, state_mode)  # type: ignore[arg-type]
    record_owner(r, namespace, graph, checkpoint_dir)
    preflight.record_checkpoint_owner(checkpoint_dir, namespace, graph.name)
    # Step 7.
    where = mask_url(url)
    check_not_behind(os.path.join(checkpoint_dir, "spark"), base, commit_log.committed(), where)
    warning = durability_warning(r, where)
    if warning:
        log.warning("%s", warning)
    # Step 8.
    rescaled = [f"component {p.component!r}: par {p.old_par} -> {p.new_par} from this run's "
                f"first batch, its state re-split by its fields grouping ({p.keys} keys)"
                for p in rebalance(r, snapshots, list(graph), cloudpickle.dumps)]
    apply_upgrade(r, snapshots, upgrade, cloudpickle.dumps)
    return r, url, key, commit_log, base, [*upgrade.warnings(), *rescaled]


def bound_elsewhere(r: Redis, commit_log: Any, namespace: str, checkpoint_dir: str,
                    checkpoint_id: str) -> None:
    """Step 4: refuse a new checkpoint on a namespace that holds state of another one (the
    same topology started with another ``--checkpoint``), naming the checkpoint that owns
    it; otherwise step 5 would call its snapshots, signed with that checkpoint's key,
    tampered with."""
    from stormshift.state.owner import recorded_checkpoint

    if checkpoint_id in commit_log.checkpoints() or not commit_log.has_state():
        return
    theirs = recorded_checkpoint(r, namespace)
    owner = f"checkpoint {theirs}" if theirs else "another checkpoint"
    use = f"run with --checkpoint {theirs}" if theirs else "run with the checkpoint that wrote it"
    if theirs and os.path.realpath(str(theirs)) == os.path.realpath(checkpoint_dir):
        # the same path, another checkpoint: the directory was deleted and made again
        owner = f"an earlier checkpoint at {theirs} (deleted and made again since)"
        use = "restore that checkpoint directory"
    raise StateError(
        f"state namespace {namespace!r} belongs to {owner} (committed txid "
        f"{commit_log.committed()}), not to the checkpoint {checkpoint_dir} this run uses; nothing "
        f"was written. Fix: {use}, or give this run its own --namespace; --adopt-state "
        "continues that state from this checkpoint, --reset-state discards it (only if you "
        "mean to)")
