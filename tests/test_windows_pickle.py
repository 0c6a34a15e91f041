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


# [WindowState, its TriggerState] with protocol 2, and the WindowState with protocol 5, as
# main wrote them while both were dataclasses with a ``__dict__`` (75452e1)
OLD_STATE_V2 = (
    b"\x80\x02]q\x00(cstormshift.windows.windower\nWindowState\nq\x01)\x81q\x02}q\x03(X\x03"
    b"\x00\x00\x00accq\x04K\x03K\x01\x86q\x05X\x05\x00\x00\x00deltaq\x06K\x01K\x00\x86q\x07X"
    b"\x07\x00\x00\x00triggerq\x08cstormshift.windows.triggers\nTriggerState\nq\t)\x81q\n}q"
    b"\x0b(X\x05\x00\x00\x00countq\x0cK\x02X\x0b\x00\x00\x00deadline_msq\rKMX\x05\x00\x00\x00"
    b"panesq\x0eK\x01X\r\x00\x00\x00on_time_firedq\x0f\x88ubX\x07\x00\x00\x00retractq\x10]q"
    b"\x11cstormshift.windows.window\nWindow\nq\x12)\x81q\x13}q\x14(X\x08\x00\x00\x00start_ms"
    b"q\x15K\x00X\x06\x00\x00\x00end_msq\x16K\nubh\x07\x86q\x17aubh\ne.")
OLD_STATE_V5 = (
    b"\x80\x05\x95\x1f\x01\x00\x00\x00\x00\x00\x00\x8c\x1bstormshift.windows.windower\x94\x8c"
    b"\x0bWindowState\x94\x93\x94)\x81\x94}\x94(\x8c\x03acc\x94K\x03K\x01\x86\x94\x8c\x05delta"
    b"\x94K\x01K\x00\x86\x94\x8c\x07trigger\x94\x8c\x1bstormshift.windows.triggers\x94\x8c\x0c"
    b"TriggerState\x94\x93\x94)\x81\x94}\x94(\x8c\x05count\x94K\x02\x8c\x0bdeadline_ms\x94KM"
    b"\x8c\x05panes\x94K\x01\x8c\ron_time_fired\x94\x88ub\x8c\x07retract\x94]\x94\x8c\x19"
    b"stormshift.windows.window\x94\x8c\x06Window\x94\x93\x94)\x81\x94}\x94(\x8c\x08start_ms"
    b"\x94K\x00\x8c\x06end_ms\x94K\nubh\x08\x86\x94aub.")


def test_window_states_slotted_read_and_write_the_pickles_of_their_dict_version() -> None:
    """``Window``, ``WindowState`` and ``TriggerState`` hold their fields in slots (one object
    each, no ``__dict__``): pickles written before load, and new ones are those bytes."""
    from stormshift.windows.triggers import TriggerState

    fresh = WindowState((3, 1), (1, 0), TriggerState(2, 77, 1, True), [(Window(0, 10), (1, 0))])
    old, old_trigger = pickle.loads(OLD_STATE_V2)
    for back in (old, pickle.loads(OLD_STATE_V5)):
        assert back == fresh and back.trigger == TriggerState(2, 77, 1, True)
        assert not hasattr(back, "__dict__") and not hasattr(back.trigger, "__dict__")
        assert hash(back.retract[0][0]) == hash(Window(0, 10))
    assert old_trigger is old.trigger
    assert pickle.dumps([fresh, fresh.trigger], protocol=2) == OLD_STATE_V2
    assert pickle.dumps(fresh, protocol=5) == OLD_STATE_V5
    assert not hasattr(Window(0, 10), "__dict__")


def _solo(w: Windower) -> list[Any]:
    """Keys with one session each (``_feed``'s keys have several), then one of them extended
    and one given a second session."""
    out: list[Any] = []
    for i in range(3):
        out += w.add(f"solo{i}", 40_000 + 10 * i, i, now_ms=0).outputs
    return out


def test_a_windower_whose_sessions_index_lists_every_key_loads_and_continues() -> None:
    """Pickled whole before keys with one session left ``_sessions`` (every key listed): read,
    it merges, fires and expires as the live one, and drops the single ones as it goes."""
    live = Windower(Sessions(2_000), trigger=Trigger(early_every_count=3),
                    accumulation=Accumulation.RETRACTING, allowed_lateness_ms=20_000)
    _solo(live)
    _feed(live, 200)
    state = dict(vars(pickle.loads(pickle.dumps(live))))
    assert all(len(v) > 1 for v in state["_sessions"].values())
    assert "solo0" not in str(sorted(state["_sessions"]))
    state["_sessions"] = {k: sorted(v) for k, v in sorted(state["windows"].items())}
    assert any(len(v) == 1 for v in state["_sessions"].values())
    old = Windower.__new__(Windower)
    old.__setstate__(state)
    steps = [("solo0", 40_500), ("solo1", 45_000), ("solo2", 39_000)]  # extend, add, extend
    added = [[(r.kind, r.outputs) for r in (w.add(k, t, 9, now_ms=1) for k, t in steps)]
             for w in (old, live)]
    assert added[0] == added[1] and [k for k, _ in added[0]] == ["late", "on_time", "late"]
    assert len(live.windows['"solo1"']) == 2 and len(live.windows['"solo0"']) == 1
    assert _feed(old, 400)[200:] == _feed(live, 400)[200:]
    assert old.snapshot() == live.snapshot()
    assert all(len(v) > 1 for v in old._sessions.values())
    assert old._sessions == live.sessions_index() == live._sessions
