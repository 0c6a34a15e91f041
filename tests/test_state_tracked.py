"""Tracked dict types behave like the plain ones, and their deltas fold back exactly.

Each operation of the table runs on a plain value and on a tracked copy; the two
must agree on the result, the contents, the iteration order, repr, pickling and
copies. Then the tracked copy's delta, folded on the state before the
operations, must give the plain value after them (contents and order). Every test
runs twice: with the C writes (``state/ctracked.pyx``, where this checkout built it)
and with the pure-Python fallback; the two must also record the same changes.
"""

from __future__ import annotations

import copy
import pickle
import random
from collections import Counter, OrderedDict, defaultdict

import pytest

from stormshift.state import tracked as T
from stormshift.state.component import deltas as D
from stormshift.state.tracked import track, untracked_type


@pytest.fixture(autouse=True, params=["native", "pure"])
def family(request, monkeypatch):
    """The tracked types ``track`` makes: the C-slot ones or the pure-Python fallback."""
    if request.param == "pure":
        monkeypatch.setattr(T, "_TRACKED", dict(T.PURE_TYPES))
    elif T.NATIVE_BASE is None:
        pytest.skip("state/ctracked.pyx is not built in this checkout (pure install)")
    return request.param

MAKERS = {
    "dict": lambda: {"a": 1, "b": 2, "c": 3},
    "Counter": lambda: Counter({"a": 1, "b": 2, "c": 3}),
    "defaultdict": lambda: defaultdict(int, {"a": 1, "b": 2, "c": 3}),
    "OrderedDict": lambda: OrderedDict([("a", 1), ("b", 2), ("c", 3)]),
}

OPS = {  # name -> op(d); the return value is compared too
    "set new": lambda d: d.__setitem__("z", 9),
    "set existing": lambda d: d.__setitem__("b", 7),
    "del": lambda d: d.__delitem__("a"),
    "del then set again": lambda d: (d.__delitem__("a"), d.__setitem__("a", 5)),
    "pop": lambda d: d.pop("b"),
    "pop default": lambda d: d.pop("nope", 0),
    "popitem": lambda d: d.popitem(),
    "setdefault new": lambda d: d.setdefault("s", 4),
    "setdefault old": lambda d: d.setdefault("a", 4),
    "update mapping": lambda d: d.update({"a": 10, "n": 11}),
    "update pairs": lambda d: d.update([("p", 1), ("c", 0)]),
    "update kwargs": lambda d: d.update(k=3),
    "ior": lambda d: d.__ior__({"q": 1}),
    "clear then set": lambda d: (d.clear(), d.__setitem__("x", 1)),
    "or": lambda d: d | {"o": 1},
    "ror": lambda d: {"o": 1, "a": 0} | d,
    "copy": lambda d: d.copy(),
    "get": lambda d: d.get("zz", "dflt"),
    "keys": lambda d: list(d),
    "increment": lambda d: d.__setitem__("a", d["a"] + 1),
}
COUNTER_OPS = {
    "missing is 0": lambda c: c["nope"],
    "+=": lambda c: c.__iadd__(Counter(a=2, d=1)),
    "-=": lambda c: c.__isub__(Counter(a=1, b=5)),
    "update counts": lambda c: c.update("aab"),
    "update mapping": lambda c: c.update({"a": 5}),
    "subtract": lambda c: c.subtract({"c": 3}),
    "add": lambda c: c + Counter(x=1),
    "most_common": lambda c: c.most_common(2),
    "total": lambda c: c.total(),
    "del missing": lambda c: c.__delitem__("nope"),
}
DEFAULT_OPS = {
    "factory": lambda d: d["new"] + 1,
    "factory then set": lambda d: d.__setitem__("w", d["w"] + 3),
}
ORDERED_OPS = {
    "move_to_end": lambda d: d.move_to_end("a"),
    "move_to_front": lambda d: d.move_to_end("c", last=False),
    "popitem first": lambda d: d.popitem(last=False),
}


def _cases():
    for kind in MAKERS:
        ops = dict(OPS)
        ops.update({"Counter": COUNTER_OPS, "defaultdict": DEFAULT_OPS,
                    "OrderedDict": ORDERED_OPS}.get(kind, {}))
        for name, op in ops.items():
            yield pytest.param(kind, op, id=f"{kind}-{name}")


def _same(plain, tracked):
    assert tracked == plain and plain == tracked
    assert list(tracked.items()) == list(plain.items())
    assert repr(tracked) == repr(plain)
    assert isinstance(tracked, type(plain))
    back = pickle.loads(pickle.dumps(tracked))
    assert type(back) is type(plain) and list(back.items()) == list(plain.items())
    assert type(copy.deepcopy(tracked)) is type(plain)
    if isinstance(plain, defaultdict):
        assert back.default_factory is plain.default_factory


def _fold(before, tracked):
    """The delta of ``tracked`` folded on ``before`` (as the engine restores it)."""
    try:
        kd = D.attr_delta(tracked)
        delta = D.make_delta({"x": kd} if kd else {}, {}, [])
    except LookupError:
        delta = D.make_delta({}, {"x": tracked}, [])
    payload = pickle.dumps(delta)
    return D.fold_payloads(pickle.dumps({"x": before}), [payload])["x"]


@pytest.mark.parametrize("kind, op", list(_cases()))
def test_a_tracked_dict_behaves_like_the_plain_one_and_its_delta_folds_back(kind, op):
    plain, before = MAKERS[kind](), MAKERS[kind]()
    tracked = track(MAKERS[kind]())
    _same(plain, tracked)
    assert op(tracked) == op(plain)
    _same(plain, tracked)
    folded = _fold(before, tracked)
    assert type(folded) is type(plain) and list(folded.items()) == list(plain.items())


def test_nested_dicts_are_tracked_one_level_down():
    plain = defaultdict(Counter)
    tracked = track(defaultdict(Counter, {"u1": Counter(w=1)}))
    plain["u1"]["w"] = 1
    before = copy.deepcopy(plain)
    for d in (plain, tracked):
        d["u1"]["w"] += 2
        d["u2"]["v"] += 1
    kd = D.attr_delta(tracked)
    assert kd is not None and set(kd[2]) == {"u1", "u2"}  # u1 changed inside, u2 inserted
    assert _fold(before, tracked) == plain
    assert type(tracked["u2"]) .__name__ == "Counter" and isinstance(tracked["u2"], Counter)


def test_values_that_can_change_unseen_are_written_every_snapshot():
    tracked = track({"a": [1], "b": 2})
    tracked["a"].append(2)  # the dict never sees this
    kd = D.attr_delta(tracked)
    assert kd is not None and kd[2] == {"a": [1, 2]}
    tracked._ch.reset()
    tracked["b"] = 3
    assert D.attr_delta(tracked)[2] == {"b": 3, "a": [1, 2]}


def test_an_unchanged_dict_has_no_delta_and_a_reset_forgets_changes():
    tracked = track(Counter(a=1))
    assert D.attr_delta(tracked) is None
    tracked["a"] += 1
    assert D.attr_delta(tracked) == ([], [], {"a": 2})
    tracked._ch.reset()
    assert D.attr_delta(tracked) is None


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_batches_fold_to_the_live_dict(seed):
    """Many batches of random operations; folding every delta gives the live value (order
    too). The seed is in the test id."""
    rng = random.Random(seed)
    for kind, make in MAKERS.items():
        plain = make()
        tracked = track(make())
        base = pickle.dumps({"x": make()})
        payloads = []
        for _batch in range(20):
            for _ in range(rng.randrange(0, 8)):
                key = rng.choice("abcdefgh")
                what = rng.random()
                for d in (plain, tracked):
                    if what < 0.5:
                        d[key] = d.get(key, 0) + 1
                    elif what < 0.7:
                        d.pop(key, None)
                    elif what < 0.8 and isinstance(d, OrderedDict) and key in d:
                        d.move_to_end(key)
                    elif what < 0.85 and d:
                        d.popitem()
                    else:
                        d.setdefault(key, 0)
            try:
                kd = D.attr_delta(tracked)
                delta = D.make_delta({"x": kd} if kd else {}, {}, [])
            except LookupError:
                delta = D.make_delta({}, {"x": tracked}, [])
            payloads.append(pickle.dumps(delta))
            tracked._ch.reset()
            folded = D.fold_payloads(base, payloads)["x"]
            assert list(folded.items()) == list(plain.items()), (seed, kind)
            assert type(folded) is untracked_type(tracked)


def test_compaction_policy():
    assert D.should_compact(0, 0, 1000) is False
    assert D.should_compact(3, 600, 1000) is True  # deltas outweigh half the base
    assert D.should_compact(D.COMPACT_MAX_DELTAS, 10, 10**9) is True


def test_a_delta_of_another_format_is_refused():
    with pytest.raises(ValueError, match="delta format"):
        D.fold({"x": {}}, [{"format": 99}])


def _changes(value):
    ch = T.changes_of(value)
    return (list(ch.inserted), list(ch.updated), list(ch.deleted), list(ch.volatile), ch.whole)


def test_the_c_writes_are_the_type_slot_and_record_what_the_pure_ones_do(family):
    """Same operations on both families (nested values, Counter's lenient delete, volatile
    values): the same change sets, key for key and in order."""
    if family == "pure":
        assert type(track({})).__setitem__ is T.PURE_TYPES[dict].__setitem__
        return
    native = track({})
    assert "__setitem__" not in type(native).__dict__  # the C slot of ctracked.TrackBase
    assert type(native).__setitem__ is T.NATIVE_BASE.__setitem__
    rng = random.Random(7)
    for make in (lambda: {"a": 1, "n": {"x": 1}}, lambda: Counter(a=1, b=2)):
        c, p = track(make()), track(make())
        T._TRACKED, saved = dict(T.PURE_TYPES), T._TRACKED
        try:
            p = track(make())
        finally:
            T._TRACKED = saved
        assert type(c) is not type(p)
        for _ in range(300):
            key = rng.choice("abcdn")
            what = rng.random()
            for d in (c, p):
                if what < 0.4:
                    d[key] = d[key] + 1 if type(d.get(key)) is int else 0
                elif what < 0.5:
                    d[key] = [1] if what < 0.45 else (1, "x")
                elif what < 0.6 and isinstance(d.get("n"), dict):
                    d["n"][key] = 2
                elif what < 0.7:
                    if isinstance(d, Counter) or key in d:
                        del d[key]
                elif what < 0.8:
                    d.pop(key, None)
                else:
                    T.changes_of(d).reset()
            assert _changes(c) == _changes(p)
            assert list(c.items()) == list(p.items())
        with pytest.raises(KeyError):
            del track({})["missing"]
