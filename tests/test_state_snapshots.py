"""Signed per-task snapshots and the dead-letter stream, on the real Redis server."""

from __future__ import annotations

import logging
import os
import pickle

import pytest
from support.state_fixtures import ON_CLUSTER_TOO, commit

from stormshift.errors import FencedError, StateError
from stormshift.state import keys as K
from stormshift.state.deadletter import DeadLetters
from stormshift.state.fencing import acquire_epoch
from stormshift.state.snapshots import SnapshotStore

KEY = b"test-hmac-key"

pytest_plugins = ["support.state_fixtures"]


def save(store, r, namespace, txid, payload, task=0):
    epoch = acquire_epoch(r, namespace, "counter", task)
    return store.save("counter", task, txid, epoch, payload)


@ON_CLUSTER_TOO
def test_load_returns_newest_committed_version_below_txid(redis_client, ns):
    store = SnapshotStore(redis_client, ns, KEY)
    assert store.load("counter", 0, 1) is None
    save(store, redis_client, ns, 1, b"v1")
    commit(redis_client, ns, 1)
    save(store, redis_client, ns, 2, b"v2-attempt1")
    save(store, redis_client, ns, 2, b"v2")  # retry of txid 2 overwrites the in-flight version
    assert store.load("counter", 0, 2).base == b"v1"  # txid 2 not committed: restore from 1
    commit(redis_client, ns, 2)
    assert store.load("counter", 0, 3).base == b"v2"
    save(store, redis_client, ns, 3, b"v3")
    # kept: newest committed (2) and in-flight (3); version 1 was dropped
    assert sorted(store.sizes()[("counter", 0)]) == [2, 3]


@ON_CLUSTER_TOO
def test_tampered_snapshot_is_refused_never_unpickled(redis_client, ns):
    store = SnapshotStore(redis_client, ns, KEY)
    save(store, redis_client, ns, 1, pickle.dumps({"count": 1}))
    commit(redis_client, ns, 1)
    key = K.snapshot_key(ns, "counter", 0)
    blob = redis_client.hget(key, "b:1")
    evil = pickle.dumps(os.system)  # what an attacker with Redis access would plant
    redis_client.hset(key, "b:1", blob[: len(blob) - len(pickle.dumps({"count": 1}))] + evil)
    with pytest.raises(StateError, match="integrity check"):
        store.load("counter", 0, 2)
    redis_client.hset(key, "b:1", evil)  # no signature at all
    with pytest.raises(StateError, match="refused"):
        store.load("counter", 0, 2)


def test_snapshot_from_another_key_or_task_is_refused(redis_client, ns):
    save(SnapshotStore(redis_client, ns, KEY), redis_client, ns, 1, b"state")
    commit(redis_client, ns, 1)
    with pytest.raises(StateError, match="STORMSHIFT_STATE_HMAC_KEY"):
        SnapshotStore(redis_client, ns, b"other-key").load("counter", 0, 2)
    # a valid blob moved to another task's slot is refused too (context binds task and txid)
    redis_client.hset(K.snapshot_key(ns, "counter", 1), "b:1",
                      redis_client.hget(K.snapshot_key(ns, "counter", 0), "b:1"))
    with pytest.raises(StateError):
        SnapshotStore(redis_client, ns, KEY).load("counter", 1, 2)


def test_no_hmac_key_is_an_error_naming_the_fix(redis_client, ns, monkeypatch):
    monkeypatch.delenv("STORMSHIFT_STATE_HMAC_KEY", raising=False)
    with pytest.raises(StateError, match="STORMSHIFT_STATE_HMAC_KEY"):
        SnapshotStore(redis_client, ns)
    monkeypatch.setenv("STORMSHIFT_STATE_HMAC_KEY", "from-env")
    assert SnapshotStore(redis_client, ns).load("counter", 0, 5) is None


def test_large_snapshot_is_reported_and_warned(redis_client, ns, caplog):
    store = SnapshotStore(redis_client, ns, KEY, warn_bytes=1000)
    with caplog.at_level(logging.WARNING, logger="stormshift.state.snapshots"):
        assert save(store, redis_client, ns, 1, b"x" * 5000) == 5000
    assert "5000 bytes" in caplog.text and "keyed state map" in caplog.text


def test_snapshot_save_is_fenced(redis_client, ns):
    store = SnapshotStore(redis_client, ns, KEY)
    old = acquire_epoch(redis_client, ns, "counter", 0)
    acquire_epoch(redis_client, ns, "counter", 0)
    with pytest.raises(FencedError):
        store.save("counter", 0, 1, old, b"zombie")
    commit(redis_client, ns, 1)
    with pytest.raises(FencedError):
        save(store, redis_client, ns, 1, b"late")
    assert store.sizes() == {}


def test_par_change_is_refused_with_the_fix(redis_client, ns):
    store = SnapshotStore(redis_client, ns, KEY)
    store.check_par("counter", 2)
    save(store, redis_client, ns, 1, b"s", task=1)
    store.check_par("counter", 2)
    with pytest.raises(StateError, match="par=2.*par=4") as err:
        store.check_par("counter", 4)
    assert "opaque_map" in str(err.value)
    store.check_par("other", 3)
    store.check_par("other", 5)  # no snapshots yet: free to change


def test_dead_letters_are_kept_once_per_replay_and_replayable(redis_client, ns):
    dl = DeadLetters(redis_client, ns)
    a = dl.add("split", "default", ["bad", 1], "ValueError: bad", "Traceback...", 3)
    assert dl.add("split", "default", ["bad", 1], "ValueError: bad", "Traceback...", 3) == a
    dl.add("count", "default", [object()], "TypeError", "tb", 3)
    letters = dl.list()
    assert (letters[0].component, letters[0].values, letters[0].txid) == ("split", ["bad", 1], 3)
    assert dl.count() == 2 and len(dl.list(component="count")) == 1
    seen = []
    assert dl.replay(seen.append, component="split") == 1
    assert [d.error for d in seen] == ["ValueError: bad"]
    assert dl.count() == 1


def test_a_removed_dead_letter_is_added_again_when_the_tuple_fails_again(redis_client, ns):
    # A source record (txid -1, keyed by its offset) re-read after the user replayed and
    # removed its entry must be dead-lettered again, not dropped by the dedup index.
    dl = DeadLetters(redis_client, ns)
    first = dl.add("spout", "default", "{not json", "ValueError: bad", "", -1, tuple_key="f:3")
    assert dl.replay(lambda d: None) == 1 and dl.count() == 0
    again = dl.add("spout", "default", "{not json", "ValueError: bad", "", -1, tuple_key="f:3")
    assert again != first and dl.count() == 1
    assert dl.add("spout", "default", "{not json", "ValueError: bad", "", -1, tuple_key="f:3") == again


def test_start_up_check_names_the_key_fix_before_any_task_runs(redis_client, ns):
    store = SnapshotStore(redis_client, ns, KEY)
    tasks = [("counter", 0), ("counter", 1)]
    store.check_key(tasks, "nothing to check yet")  # no snapshots: nothing to refuse
    save(store, redis_client, ns, 1, b"state", task=1)
    save(store, redis_client, ns, 2, b"in flight", task=1)  # uncommitted: not what a run restores
    commit(redis_client, ns, 1)
    store.check_key(tasks, "the same key")
    with pytest.raises(StateError) as err:
        SnapshotStore(redis_client, ns, b"new-checkpoint-key").check_key(tasks, "/ck2/stormshift-state.key")
    text = str(err.value)
    assert "'counter' task 1" in text and "/ck2/stormshift-state.key" in text
    assert "STORMSHIFT_STATE_HMAC_KEY" in text and "--reset-state" in text
