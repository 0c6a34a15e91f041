"""A live instance that missed batches catches up from the deltas since its version.

Spark gives a task to whichever Python worker is idle, so a worker often holds a
task's instance from a few batches ago. ``taskstate.open_task`` then applies the
deltas written since that instance's own version (``SnapshotStore.load_since``)
instead of restoring the whole state: these tests drive two workers' caches over
one task on the real Redis server, in random order, and check after every batch
that the live state equals both a fresh restore and a run that never switched --
and that a version another attempt rewrote, or a chain compacted past the
instance's version, falls back to a whole restore.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict

import pytest
from support.state_fixtures import commit
from support.task_batches import bound_to, same_state, switching_batches

from stormshift.engines.spark.task.taskstate import TaskCache
from stormshift.state.fencing import acquire_epoch
from stormshift.state.snapshots import SnapshotStore

KEY = b"test-hmac-key"
pytest_plugins = ["support.state_fixtures"]


class Entries:
    """A small keyed state object (``state/keyed.py``'s protocol): per-key lists."""

    def __init__(self, shared: int = 0, entries: dict[str, list[int]] | None = None):
        self.shared, self.entries, self._changed = shared, dict(entries or {}), set()

    def add(self, key: str, value: int) -> None:
        self.entries.setdefault(key, []).append(value)
        self._changed.add(key)
        self.shared += 1
        if len(self.entries[key]) > 3:  # "expired"
            del self.entries[key]

    def keyed_parts(self):
        return self.shared, {k: list(v) for k, v in self.entries.items()}

    def keyed_delta(self):
        gone = sorted(k for k in self._changed if k not in self.entries)
        return self.shared, gone, {k: list(self.entries[k]) for k in sorted(self._changed)
                                   if k in self.entries}

    def keyed_mark(self) -> None:
        self._changed = set()

    def keyed_apply(self, shared, deleted, values) -> None:
        self.shared = shared
        for k in deleted:
            self.entries.pop(k, None)
        self.entries.update((k, list(v)) for k, v in values.items())

    @classmethod
    def from_keyed(cls, shared, entries):
        return cls(shared, {k: list(v) for k, v in sorted(entries.items())})

    @classmethod
    def keyed_key(cls, entry):
        return entry

    @classmethod
    def keyed_merge(cls, shareds, task, par):
        return sum(shareds) if task == 0 else 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Entries) and (self.shared, sorted(self.entries.items())) == \
            (other.shared, sorted(other.entries.items()))


class Bolt:
    """A legacy bolt with every kind of state attribute the snapshotter knows."""

    def initialize(self) -> None:
        self.counts = Counter({f"seed{i}": 1 for i in range(500)})  # deltas stay small beside it
        self.by_user = defaultdict(Counter)
        self.seen = 0
        self.recent: list[str] = []  # untracked: pickled whole when it changes
        self.windows = Entries()

    def process(self, rng: random.Random, txid: int) -> None:
        for _ in range(rng.randrange(0, 30)):
            w = f"w{rng.randrange(60)}"
            self.counts[w] += 1
            self.by_user[w][rng.randrange(3)] += 1
            self.seen += 1
            self.windows.add(w, txid)
        if rng.random() < 0.3 and self.counts:
            del self.counts[rng.choice(sorted(self.counts))]
        if rng.random() < 0.2:
            self.recent = (self.recent + [f"t{txid}"])[-5:]
        if rng.random() < 0.05:
            self.counts = Counter(dict(list(self.counts.items())[:10]))  # replaced whole
        if rng.random() < 0.05:
            self.by_user.clear()
        if txid == 7:
            self.late = {"made": txid}  # an attribute made after initialize()


BOUND = bound_to(Bolt)
_, _batch, _fresh = BOUND


@pytest.mark.parametrize("seed", range(4))
def test_a_task_switching_workers_catches_up_to_the_same_state(redis_client, ns, seed):
    store = SnapshotStore(redis_client, ns, KEY)
    hows = [how for _, how in switching_batches(redis_client, ns, store, BOUND, seed, 40)]
    assert hows.count("caught_up") >= 5 and "reused" in hows


def test_catch_up_reads_the_changes_not_the_state(redis_client, ns):
    store = SnapshotStore(redis_client, ns, KEY)
    a, b = TaskCache(), TaskCache()
    host, _ = _batch(redis_client, ns, store, a, 1, random.Random(1))
    host.instance.counts.update({f"big{i}": i for i in range(20_000)})
    _batch(redis_client, ns, store, a, 2, random.Random(2))  # a delta of 20,000 keys
    _batch(redis_client, ns, store, a, 3, random.Random(3))  # so a base holding them
    _batch(redis_client, ns, store, b, 4, random.Random(4))  # b restores whole
    seen: list[int] = []
    load_since = store.load_since

    def counting(*args):
        point = load_since(*args)
        seen.append(sum(len(d) for d in point.deltas))
        return point

    store.load_since = counting
    host, how = _batch(redis_client, ns, store, a, 5, random.Random(5))
    assert how == "caught_up" and len(seen) == 1
    assert 0 < seen[0] < 5_000  # batch 4's delta, not the 20,000 keys
    same_state(host.instance, _fresh(store, 6))


def test_a_version_another_attempt_rewrote_is_restored_whole(redis_client, ns):
    store = SnapshotStore(redis_client, ns, KEY)
    a, b = TaskCache(), TaskCache()
    _batch(redis_client, ns, store, a, 1, random.Random(1))
    _batch(redis_client, ns, store, a, 2, random.Random(2), committed=False)
    # a's version 2 is replaced by another attempt of txid 2 that did something else
    # (a non-deterministic bolt): a's live instance no longer matches Redis
    other = _fresh(store, 2)
    other.counts["only-in-the-other-attempt"] = 1
    epoch = acquire_epoch(redis_client, ns, "bolt", 0)
    payload, kind, prev = other._stormshift_snap.payload(other, 2)
    store.save("bolt", 0, 2, epoch, payload, kind, prev)
    commit(redis_client, ns, 2)
    _batch(redis_client, ns, store, b, 3, random.Random(3))
    host, how = _batch(redis_client, ns, store, a, 4, random.Random(4))
    assert how == "restored"
    assert host.instance.counts["only-in-the-other-attempt"] == 1
    same_state(host.instance, _fresh(store, 5))


def test_a_chain_compacted_past_the_version_is_restored_whole(redis_client, ns, monkeypatch):
    from stormshift.state.component import deltas

    store = SnapshotStore(redis_client, ns, KEY)
    a, b = TaskCache(), TaskCache()
    _batch(redis_client, ns, store, a, 1, random.Random(1))
    _batch(redis_client, ns, store, a, 2, random.Random(2))
    monkeypatch.setattr(deltas.should_compact, "__kwdefaults__",  # b writes a base at txid 3
                        {"ratio": deltas.COMPACT_RATIO, "max_deltas": 1})
    _batch(redis_client, ns, store, b, 3, random.Random(3))
    _, how = _batch(redis_client, ns, store, a, 4, random.Random(4))
    assert how == "restored"


def test_a_keyed_object_that_cannot_take_a_delta_in_place_is_restored_whole(
        redis_client, ns, monkeypatch):
    store = SnapshotStore(redis_client, ns, KEY)
    a, b = TaskCache(), TaskCache()
    monkeypatch.delattr(Entries, "keyed_apply")
    _batch(redis_client, ns, store, a, 1, random.Random(1))
    _batch(redis_client, ns, store, a, 2, random.Random(2))
    host, _ = _batch(redis_client, ns, store, b, 3, random.Random(3))
    assert host.instance.windows._changed == set()
    host, how = _batch(redis_client, ns, store, a, 4, random.Random(4))
    assert how == "restored"
    same_state(host.instance, _fresh(store, 5))


def test_a_task_skipped_as_idle_reuses_its_instance_and_a_rerun_does_not(redis_client, ns):
    """Batches that skipped the task (no epoch taken: ``driver/waves.py``) leave its live
    instance the restore point: reused as it is. A batch whose attempt ran the task and is
    run again (a new epoch in between) is restored, never reused."""
    store = SnapshotStore(redis_client, ns, KEY)
    cache = TaskCache()
    _, how = _batch(redis_client, ns, store, cache, 1, random.Random(1))
    for txid in (2, 3):  # the driver commits batches that skipped the task
        commit(redis_client, ns, txid)
    host, how = _batch(redis_client, ns, store, cache, 4, random.Random(4))
    assert how == "reused"
    same_state(host.instance, _fresh(store, 5))
    _batch(redis_client, ns, store, cache, 5, random.Random(5), committed=False)
    acquire_epoch(redis_client, ns, "bolt", 0)  # another attempt of txid 5 ran meanwhile
    host, how = _batch(redis_client, ns, store, cache, 5, random.Random(5))
    assert how == "restored"
    same_state(host.instance, _fresh(store, 6))
