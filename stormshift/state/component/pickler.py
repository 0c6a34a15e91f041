"""How a component's state is pickled: by value where plain pickle cannot, never via Spark.

A bolt's attributes may hold what plain ``pickle`` refuses (a lambda, a class made
inside a function or in ``__main__``), so whole values go through cloudpickle, which
pickles those by value; any payload is read back with plain ``pickle.loads``. The
standalone ``cloudpickle`` package (a dependency), not the copy pyspark vendors: this
package must run where Spark is absent (the local engine, ``check``). Keyed entries (``pack``) take the C pickler first: it calls no
Python per object, and a windowed bolt packs many small entries per batch.
"""

from __future__ import annotations

import pickle
from collections.abc import Hashable, Mapping
from functools import cache
from typing import Any

__all__ = ["dumps", "pack", "pack_all", "picklable", "pickle_error"]


@cache
def _cloudpickle() -> Any:
    import cloudpickle

    return cloudpickle


def dumps(value: Any) -> bytes:
    """``value`` pickled, by value where it cannot be by reference (module doc)."""
    return _cloudpickle().dumps(value)  # type: ignore[no-any-return]


def pickle_error(value: Any) -> Exception | None:
    """Why ``value`` cannot be pickled (None: it can)."""
    try:
        dumps(value)
    except Exception as exc:  # noqa: BLE001 - any pickling error means "not state"
        return exc
    return None


def picklable(value: Any) -> bool:
    return pickle_error(value) is None


def pack(entry: Any) -> bytes:
    """One keyed entry as stored (``state/keyed.py``: packed): the C pickler, cloudpickle
    for what it cannot do by reference (a lambda, a class of ``__main__``)."""
    try:
        data = pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - not picklable by reference: by value
        return dumps(entry)
    return dumps(entry) if b"__main__" in data else data


def pack_all(entries: Mapping[Hashable, Any]) -> dict[Hashable, bytes]:
    return {k: pack(v) for k, v in entries.items()}
