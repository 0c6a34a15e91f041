"""Incremental snapshots on the real Redis server: chains of a base and deltas.

A batch writes what it changed (a delta on the version it was restored from), fenced and
under its txid; a replay of the txid replaces its version; a zombie writes nothing; a
new base frees the old chain once it commits; a format-1 snapshot is read as a base.
"""

from __future__ import annotations

import pickle
from collections import Counter, defaultdict

import pytest
from support.state_fixtures import commit

from stormshift.errors import FencedError, StateError
from stormshift.state import keys as K
from stormshift.state.commit import CommitLog
from stormshift.state.component import build
from stormshift.state.component.deltas import fold_payloads
from stormshift.state.fencing import acquire_epoch
from stormshift.state.snapshots import SnapshotStore, sign

KEY = b"test-hmac-key"
pytest_plugins = ["support.state_fixtures"]


class Bolt:
    """A legacy bolt's instance as the engine sees it: attributes set in initialize()."""

    def initialize(self):
        self.counts = Counter()
        self.by_user = defaultdict(Counter)
        self.seen = 0


def _fields(r, ns, task=0):
    return sorted(f.decode() for f in r.hkeys(K.snapshot_key(ns, "bolt", task)))


def _batch(r, ns, store, bolt, txid, words):
    """One batch of a task whose instance is live: process, snapshot, commit."""
    for w in words:
        bolt.counts[w] += 1
        bolt.by_user[w][len(w)] += 1
        bolt.seen += 1
    epoch = acquire_epoch(r, ns, "bolt", 0)
    payload, kind, prev = bolt._stormshift_snap.payload(bolt, txid)
    store.save("bolt", 0, txid, epoch, payload, kind, prev)
    bolt._stormshift_snap.written(bolt, txid)
    commit(r, ns, txid)
    return len(payload), kind


def _fresh(store, txid):
    """A new instance restored from the restore point below ``txid`` (a restart)."""
    bolt = Bolt()
    bolt.initialize()
    build(bolt, store.load("bolt", 0, txid))
    return bolt


def test_batches_write_deltas_and_a_restart_folds_them_back(redis_client, ns):
    store = SnapshotStore(redis_client, ns, KEY)
    bolt = _fresh(store, 1)
    base_size, kind = _batch(redis_client, ns, store, bolt, 1, [f"w{i}" for i in range(2000)])
    assert kind == "base"
    size2, kind2 = _batch(redis_client, ns, store, bolt, 2, ["w1", "new"])
    size3, kind3 = _batch(redis_client, ns, store, bolt, 3, [])
    assert (kind2, kind3) == ("delta", "delta")
    assert size2 < base_size / 50 and size3 < 200  # the change, not the state
    assert _fields(redis_client, ns) == ["b:1", "d:2:1", "d:3:2"]
    back = _fresh(store, 4)
    assert back.counts == bolt.counts and list(back.counts) == list(bolt.counts)
    assert back.by_user == bolt.by_user and back.seen == bolt.seen == 2002
    assert type(back.counts).__name__ == "Counter" and isinstance(back.by_user["w1"], Counter)
    # the restored instance continues the chain on the version it was restored from
    _batch(redis_client, ns, store, back, 4, ["w2"])
    assert _fields(redis_client, ns)[-1] == "d:4:3"


def test_a_replayed_txid_replaces_its_version_and_restores_the_same_state(redis_client, ns):
    store = SnapshotStore(redis_client, ns, KEY)
    bolt = _fresh(store, 1)
    _batch(redis_client, ns, store, bolt, 1, ["a", "b"])
    attempts = []
    for _ in range(2):  # batch 2 runs twice (a Spark retry): each attempt from the state of 1
        again = _fresh(store, 2)
        again.counts["a"] += 5
        epoch = acquire_epoch(redis_client, ns, "bolt", 0)
        payload, kind, prev = again._stormshift_snap.payload(again, 2)
        store.save("bolt", 0, 2, epoch, payload, kind, prev)
        attempts.append(payload)
    assert attempts[0] == attempts[1]
    assert _fields(redis_client, ns) == ["b:1", "d:2:1"]
    commit(redis_client, ns, 2)
    assert _fresh(store, 3).counts == Counter(a=6, b=1)


def test_a_zombies_delta_is_fenced_and_lands_nowhere(redis_client, ns):
    store = SnapshotStore(redis_client, ns, KEY)
    bolt = _fresh(store, 1)
    _batch(redis_client, ns, store, bolt, 1, ["a"])
    zombie = acquire_epoch(redis_client, ns, "bolt", 0)
    acquire_epoch(redis_client, ns, "bolt", 0)  # its successor
    bolt.counts["z"] += 1
    payload, kind, prev = bolt._stormshift_snap.payload(bolt, 2)
    with pytest.raises(FencedError):
        store.save("bolt", 0, 2, zombie, payload, kind, prev)
    assert _fields(redis_client, ns) == ["b:1"]
    with pytest.raises(FencedError):  # and nothing at or below the committed txid
        store.save("bolt", 0, 1, acquire_epoch(redis_client, ns, "bolt", 0), payload, kind, prev)


def test_a_new_base_frees_the_old_chain_once_it_commits(redis_client, ns):
    store = SnapshotStore(redis_client, ns, KEY)
    bolt = _fresh(store, 1)
    _batch(redis_client, ns, store, bolt, 1, [f"k{i}" for i in range(1000)])
    kinds = [_batch(redis_client, ns, store, bolt, txid, [f"n{txid}-{i}" for i in range(100)])[1]
             for txid in range(2, 12)]
    n = kinds.index("base")  # once the deltas outweigh half the base, a new base
    assert n >= 3 and kinds[:n] == ["delta"] * n
    compacted = n + 2
    assert _fields(redis_client, ns)[0] == f"b:{compacted}"  # committed: the old chain is gone
    assert all(not f.startswith("b:") or f == f"b:{compacted}" for f in _fields(redis_client, ns))
    assert _fresh(store, 12).counts == bolt.counts


def test_in_flight_versions_keep_their_chain(redis_client, ns):
    store = SnapshotStore(redis_client, ns, KEY)
    e = acquire_epoch(redis_client, ns, "bolt", 0)
    store.save("bolt", 0, 1, e, pickle.dumps({"n": 1}))
    commit(redis_client, ns, 1)
    store.save("bolt", 0, 2, e, pickle.dumps({"format": 1, "keys": {}, "whole": {"n": 2},
                                              "drop": []}), "delta", 1)
    store.save("bolt", 0, 3, e, pickle.dumps({"n": 3}))  # a base written ahead of commit 2
    assert _fields(redis_client, ns) == ["b:1", "b:3", "d:2:1"]
    commit(redis_client, ns, 2)
    point = store.load("bolt", 0, 3)
    assert point.version == 2 and fold_payloads(point.base, point.deltas) == {"n": 2}


def test_a_broken_chain_is_an_error_naming_the_fix(redis_client, ns):
    store = SnapshotStore(redis_client, ns, KEY)
    e = acquire_epoch(redis_client, ns, "bolt", 0)
    store.save("bolt", 0, 1, e, pickle.dumps({"n": 1}))
    commit(redis_client, ns, 1)
    store.save("bolt", 0, 2, e, b"delta", "delta", 1)
    commit(redis_client, ns, 2)
    redis_client.hdel(K.snapshot_key(ns, "bolt", 0), "b:1")
    with pytest.raises(StateError, match="chain is broken.*state reset"):
        store.load("bolt", 0, 3)


def test_a_format_1_snapshot_is_read_as_a_base(redis_client, ns):
    """Format 1 wrote a whole snapshot under a bare txid, signed for ``ns|C|T|txid``."""
    payload = pickle.dumps({"counts": Counter(a=3)})
    acquire_epoch(redis_client, ns, "bolt", 0)
    redis_client.hset(K.snapshot_key(ns, "bolt", 0), "5",
                      sign(KEY, f"{ns}|bolt|0|5".encode(), payload))
    commit(redis_client, ns, 5)
    store = SnapshotStore(redis_client, ns, KEY)
    bolt = _fresh(store, 6)
    assert bolt.counts == Counter(a=3)
    _batch(redis_client, ns, store, bolt, 6, ["a"])
    assert _fields(redis_client, ns) == ["5", "d:6:5"]
    assert _fresh(store, 7).counts == Counter(a=4)


def test_state_of_a_newer_format_is_refused(redis_client, ns):
    redis_client.hset(K.commit_key(ns), mapping={"committed": 3, "format": K.FORMAT_VERSION + 1})
    with pytest.raises(StateError, match="newer stormshift.*--reset-state"):
        CommitLog(redis_client, ns).bind_checkpoint("ck")


def test_a_dict_made_after_initialize_is_written_whole_once_then_tracked(redis_client, ns):
    store = SnapshotStore(redis_client, ns, KEY)
    bolt = _fresh(store, 1)
    _batch(redis_client, ns, store, bolt, 1, [f"k{i}" for i in range(1000)])
    bolt.late = {"k": 1}  # made in process(): not tracked yet
    _batch(redis_client, ns, store, bolt, 2, [])
    assert "late" in bolt._stormshift_snap.tracked
    bolt.late["k2"] = 2
    _size, kind = _batch(redis_client, ns, store, bolt, 3, [])
    assert kind == "delta"
    del bolt.seen  # an attribute that is gone stays gone
    _batch(redis_client, ns, store, bolt, 4, [])
    back = _fresh(store, 5)
    assert back.late == {"k": 1, "k2": 2}
    assert back.seen == 0  # gone from the state: initialize()'s value


def test_an_attribute_holding_none_is_written_in_a_delta(redis_client, ns):
    """A bolt's ``self.bug = None`` (a setting it may never get) is not a tracked dict:
    a delta writes it like any other value instead of asking None for its changes."""
    store = SnapshotStore(redis_client, ns, KEY)
    bolt = _fresh(store, 1)
    bolt.note = None
    _batch(redis_client, ns, store, bolt, 1, ["a"])
    _size, kind = _batch(redis_client, ns, store, bolt, 2, ["b"])
    assert kind == "delta"
    bolt.note = "set"
    _batch(redis_client, ns, store, bolt, 3, [])
    back = _fresh(store, 4)
    assert back.note == "set" and back.counts == bolt.counts
