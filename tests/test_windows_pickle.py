"""Windows pickled: a ``Window`` (its hash cached) and a ``Windower`` (its heap ties) read
pickles of earlier versions, write the same bytes as they did, and the same bytes in
every identical run (the project's determinism rule)."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from stormshift.windows import Accumulation, Sessions, Trigger, Tumbling, Window, Windower
from stormshift.windows.keyed import KeyEntry
from stormshift.windows.windower import WindowState

# pickle.dumps(Window(60000, 120000), protocol=5), and a list of two such windows with
# protocol 2, as main wrote them before the hash was cached (430e7d9)
OLD_V5 = (b"\x80\x05\x95L\x00\x00\x00\x00\x00\x00\x00\x8c\x19stormshift.windows.window\x94"
          b"\x8c\x06Window\x94\x93\x94)\x81\x94}\x94(\x8c\x08start_ms\x94M`\xea\x8c\x06end_ms"
          b"\x94J\xc0\xd4\x01\x00ub.")
OLD_V2 = (b"\x80\x02]q\x00(cstormshift.windows.window\nWindow\nq\x01)\x81q\x02}q\x03(X\x08"
          b"\x00\x00\x00start_msq\x04M`\xeaX\x06\x00\x00\x00end_msq\x05J\xc0\xd4\x01\x00ubh"
          b"\x01)\x81q\x06}q\x07(h\x04M`\xeah\x05J\xc0\xd4\x01\x00ube.")


def test_a_window_pickled_before_its_hash_was_cached_loads_as_a_key() -> None:
    fresh = Window(60_000, 120_000)
    for old in (pickle.loads(OLD_V5), *pickle.loads(OLD_V2)):
        assert old == fresh and hash(old) == hash(fresh) == hash((60_000, 120_000))
        assert {old: "x"}[Window(60_000, 120_000)] == "x"
        assert old < Window(60_000, 180_000) and repr(old) == "[60000, 120000)"
    assert pickle.dumps(fresh, protocol=5) == OLD_V5  # written as before: older versions read it
    assert pickle.dumps([fresh, Window(60_000, 120_000)], protocol=2) == OLD_V2


def test_a_window_keeps_the_dataclass_semantics() -> None:
    w = Window(10, 20)
    assert hash(w) == hash((10, 20)) and w == Window(10, 20) and w != Window(10, 21)
    assert w != (10, 20) and sorted([Window(10, 30), w, Window(5, 40)]) == [
        Window(5, 40), w, Window(10, 30)]
    with pytest.raises(AttributeError):
        w.start_ms = 11  # type: ignore[misc]
    with pytest.raises(ValueError):
        Window(20, 20)


def _feed(w: Windower, n: int) -> list[Any]:
    out: list[Any] = []
    for i in range(n):
        out += w.add(f"k{i % 7}", 1_000 * (i % 50) + (i * 37) % 900, i, now_ms=i).outputs
        if i % 40 == 39:
            out += w.advance(1_000 * (i % 50) - 5_000, now_ms=i)
    return out


@pytest.mark.parametrize("assigner", [Tumbling(10_000), Sessions(2_000)],
                         ids=["tumbling", "sessions"])
def test_a_windower_pickles_to_the_same_bytes_in_identical_runs(assigner: Any) -> None:
    """No ``id()`` in the indexes (a heap tie breaker once): the whole object pickles the
    same in two identical runs."""
    runs = []
    for _ in range(2):
        w = Windower(assigner, trigger=Trigger(early_every_count=3),
                     accumulation=Accumulation.RETRACTING, allowed_lateness_ms=20_000)
        _feed(w, 300)
        w.touched = set()  # (a set of str: its order follows the salted hash, not the run)
        runs.append(pickle.dumps(w, protocol=pickle.HIGHEST_PROTOCOL))
    assert runs[0] == runs[1]


@pytest.mark.parametrize("assigner", [Tumbling(10_000), Sessions(2_000)],
                         ids=["tumbling", "sessions"])
def test_a_windower_pickled_with_heaps_of_windows_loads_and_continues(assigner: Any) -> None:
    """Pickled whole before the indexes by time: heaps of ``(time, id, key order, window)``
    (stale entries included), no ``_due_times``; read, it fires and expires as the live one."""
    live = Windower(assigner, trigger=Trigger(early_every_count=3),
                    accumulation=Accumulation.RETRACTING, allowed_lateness_ms=20_000)
    _feed(live, 200)
    state = dict(vars(pickle.loads(pickle.dumps(live))))
    due = [(w.end_ms, id(w), k, w) for k, ws in state["windows"].items() for w in ws]
    due.append((0, 1, "gone", Window(-10, 0)))  # an entry of a key since forgotten
    state["_due"] = sorted(due, key=lambda e: e[:3])
    state["_expiry"] = sorted(((e + 20_000, i, k, w) for e, i, k, w in due),
                              key=lambda e: e[:3])
    del state["_due_times"], state["_expiry_times"]
    old = Windower.__new__(Windower)
    old.__setstate__(state)
    assert _feed(old, 400)[200:] == _feed(live, 400)[200:]
    assert old.snapshot() == live.snapshot()
    assert pickle.dumps(old.snapshot()) == pickle.dumps(live.snapshot())


def test_a_key_entry_round_trips_its_windows_as_keys() -> None:
    entry = KeyEntry("ad", {Window(0, 60_000): WindowState((1, 2), (0, 1))})
    back = pickle.loads(pickle.dumps(entry))
    assert back.windows[Window(0, 60_000)].acc == (1, 2)
