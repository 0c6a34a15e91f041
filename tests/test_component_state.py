"""A hosted bolt's state, engine-neutral (``stormshift/state/component``): no JVM, no Redis.

Bolts are built the way the host builds them (``adapters/construct.py``) and driven
by hand; the "store" is a list of the versions ``snapshot`` returned. What is checked:
which attributes are state (a Counter, a dict of floats, an attribute made lazily in
``process()``; not pystorm's own, not a Redis client, not an open file), that building
a fresh instance from a snapshot gives the state back, and that a live instance caught
up with the deltas since its version holds what a full restore gives.
"""

from __future__ import annotations

import pickle
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import redis
from streamparse import BatchingBolt, Bolt, Tuple

from stormshift.adapters.construct import construct, setup_instance
from stormshift.state.component import (
    FRAMEWORK_ATTRS,
    RestorePoint,
    build,
    catch_up,
    landed,
    snapshot,
    state_at,
    state_of,
    unpicklable,
    user_state,
)
from stormshift.state.keyed import KeyedParts


def _tup(*values: Any) -> Tuple:
    return Tuple(id="t", component="src", stream="default", task=0, values=list(values))


def _host(cls: type) -> Any:
    """An instance as the host makes it: constructed, set up, initialized."""
    instance = construct(cls, "bolt")
    setup_instance(instance, "bolt", {}, {"taskid": 0}, [], {})
    instance.initialize({}, {})
    return instance


class WordCount(Bolt):
    def initialize(self, conf: Any, ctx: Any) -> None:
        self.counts: Counter[str] = Counter()
        self.prices: dict[str, float] = {}

    def process(self, tup: Tuple) -> None:
        word, price = tup.values
        self.counts[word] += 1
        self.prices[word] = self.prices.get(word, 0.0) + price
        if price > 5:  # made on first need, not in initialize()
            if not hasattr(self, "expensive"):
                self.expensive: dict[str, int] = {}
            self.expensive[word] = self.expensive.get(word, 0) + 1


class Priced(WordCount):
    """Starts with a price list: a batch's change is small next to it, so versions stay
    deltas (``deltas.should_compact``)."""

    def initialize(self, conf: Any, ctx: Any) -> None:
        super().initialize(conf, ctx)
        self.prices.update({f"listed-{i}": 1.0 for i in range(400)})


class Grouped(BatchingBolt):
    ticks_between_batches = 2

    def initialize(self, conf: Any, ctx: Any) -> None:
        self.totals: dict[str, float] = {}

    def group_key(self, tup: Tuple) -> Any:
        return tup.values[0]

    def process_batch(self, key: Any, tups: list[Tuple]) -> None:
        self.totals[key] = self.totals.get(key, 0.0) + sum(t.values[1] for t in tups)


class WithClients(Bolt):
    path = ""

    def initialize(self, conf: Any, ctx: Any) -> None:
        self.client = redis.Redis(host="127.0.0.1", port=1)  # never dialled: not a server test
        self.log = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - held by the bolt
        self.lines = 0

    def process(self, tup: Tuple) -> None:
        self.log.write(f"{tup.values[0]}\n")
        self.lines += 1


def test_a_counter_and_a_dict_of_floats_are_the_state_and_nothing_of_pystorm() -> None:
    bolt = _host(WordCount)
    bolt.process(_tup("a", 1.5))
    bolt.process(_tup("b", 0.25))
    assert state_of(bolt) == {"counts": Counter({"a": 1, "b": 1}),
                              "prices": {"a": 1.5, "b": 0.25}}
    assert {"logger", "storm_conf", "context", "component_name"} <= set(vars(bolt))
    assert FRAMEWORK_ATTRS.isdisjoint(state_of(bolt))


def test_a_batching_bolts_progress_is_snapshotted_but_is_not_the_users_state() -> None:
    bolt = _host(Grouped)
    bolt.process(_tup("k", 2.0))
    assert {"_reader_lock", "_pending_commands", "serializer"} <= set(vars(bolt))  # never state
    assert set(state_of(bolt)) == {"_batches", "_tick_counter", "totals"}
    assert set(user_state(bolt)) == {"totals"}
    build(bolt, None)
    payload, kind, _ = snapshot(bolt, 0)
    fresh = _host(Grouped)
    build(fresh, RestorePoint(0, payload))
    assert kind == "base" and [t.values for t in fresh._batches["k"]] == [["k", 2.0]]


def test_an_attribute_made_in_process_is_state_from_the_next_snapshot() -> None:
    bolt, versions = _host(WordCount), []
    build(bolt, None)
    for txid, batch in enumerate([[("a", 1.0)], [("b", 9.0)], [("b", 7.0), ("c", 1.0)]]):
        for word, price in batch:
            bolt.process(_tup(word, price))
        versions.append(snapshot(bolt, txid))
        landed(bolt, txid)
    assert "expensive" not in state_at(_point(versions, 0))
    payload, kind, prev = versions[1]
    assert (kind, prev) == ("delta", 0) and pickle.loads(payload)["whole"] == {"expensive": {"b": 1}}
    assert state_at(_point(versions, 1))["expensive"] == {"b": 1}
    assert state_at(_point(versions, 2)) == state_of(bolt)


def test_a_redis_client_and_an_open_file_are_not_state_and_initialize_remakes_them(
        tmp_path: Path) -> None:
    """Neither pickles, so neither is in a snapshot: a build calls ``initialize()`` first,
    which dials again and reopens the file; ``unpicklable`` names both for ``check``, the
    file as holding a position (what was written through it is not in the state)."""
    WithClients.path = str(tmp_path / "out.txt")
    bolt = _host(WithClients)
    build(bolt, None)
    bolt.process(_tup("x"))
    assert state_of(bolt) == {"lines": 1}
    found = {u.attr: u for u in unpicklable(bolt)}
    assert set(found) == {"client", "log"}
    assert found["log"].holds_position and not found["client"].holds_position
    payload, _, _ = snapshot(bolt, 0)
    fresh = _host(WithClients)
    build(fresh, RestorePoint(0, payload))
    assert fresh.lines == 1 and fresh.client is not bolt.client and not fresh.log.closed
    bolt.log.close()
    fresh.log.close()


def _point(versions: list[tuple[bytes, str, int]], upto: int) -> RestorePoint:
    """The restore point of version ``upto``: its newest base and the deltas after it
    (versions are txids 0, 1, ...; each delta is on the version before it here)."""
    base = max(t for t in range(upto + 1) if versions[t][1] == "base")
    return RestorePoint(upto, versions[base][0],
                        tuple(versions[t][0] for t in range(base + 1, upto + 1)))


def _batches(seed: int, n: int) -> list[list[tuple[str, float]]]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(12)]
    return [[(rng.choice(words), rng.choice([0.5, 1.25, 6.0])) for _ in range(rng.randint(0, 6))]
            for _ in range(n)]


def _run(bolt: Any, batches: list[list[tuple[str, float]]], first: int = 0
         ) -> list[tuple[bytes, str, int]]:
    versions = []
    for txid, batch in enumerate(batches, start=first):
        for word, price in batch:
            bolt.process(_tup(word, price))
        versions.append(snapshot(bolt, txid))
        landed(bolt, txid)
    return versions


def test_snapshot_then_build_gives_the_state_back_at_every_version() -> None:
    batches, bolt = _batches(7, 12), _host(WordCount)
    build(bolt, None)
    versions, states = [], []
    for txid, batch in enumerate(batches):
        versions += _run(bolt, [batch], txid)
        states.append(pickle.loads(pickle.dumps(state_of(bolt))))  # as it is now
    assert {kind for _, kind, _ in versions} == {"base", "delta"}
    for txid, expected in enumerate(states):
        fresh = _host(WordCount)
        build(fresh, _point(versions, txid))
        assert state_of(fresh) == expected, f"version {txid}"


def test_deltas_caught_up_on_a_live_instance_equal_a_full_restore() -> None:
    """A live instance that wrote version 3 takes the deltas 4..11 another worker wrote:
    it then holds what a restore of version 11 gives, and what it writes next folds to the
    same state as what the instance that never switched writes."""
    batches = _batches(11, 13)
    ahead, behind = _host(Priced), _host(Priced)
    build(ahead, None)
    build(behind, None)
    versions = _run(ahead, batches[:4])
    _run(behind, batches[:4])
    versions += _run(ahead, batches[4:12], first=4)
    deltas = tuple(p for p, kind, _ in versions[4:12])
    assert all(kind == "delta" for _, kind, _ in versions[4:12])
    assert catch_up(behind, RestorePoint(11, b"", deltas))
    assert state_of(behind) == state_of(ahead) == state_at(_point(versions, 11))
    (next_ahead,) = _run(ahead, batches[12:], first=12)
    (next_behind,) = _run(behind, batches[12:], first=12)
    assert next_behind[1] == "delta"
    assert state_at(_point([*versions, next_behind], 12)) \
        == state_at(_point([*versions, next_ahead], 12)) == state_of(ahead)


def test_the_package_runs_without_spark() -> None:
    code = ("import sys; import stormshift.state.component as c; "
            "assert 'pyspark' not in sys.modules, 'pyspark imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=120)
    assert done.returncode == 0, done.stderr


def test_stored_keyed_parts_name_the_module_old_snapshots_name() -> None:
    """Bases pickle ``KeyedParts`` by reference: a move of its module would make every
    stored windowed state unreadable (``state/keyed.py``)."""
    payload = pickle.dumps({"windows": KeyedParts(dict, None, {"k": b"entry"}, packed=True)})
    assert b"stormshift.state.keyed" in payload
    assert pickle.loads(payload)["windows"].entries == {"k": b"entry"}
