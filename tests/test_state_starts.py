"""A replayable spout's query start is resolved once per checkpoint (``engines/spark/records/starts.py``),
on the real Redis server: a driver restarted before batch 0 committed starts where the
first planning started, however far a ``latest`` start has moved since."""

from __future__ import annotations

import pytest

from stormshift.engines.spark.records.starts import query_start

pytest_plugins = ["support.state_fixtures"]
pytestmark = pytest.mark.redis


def test_the_first_resolution_is_kept_for_the_checkpoint(redis_client, ns) -> None:
    ends = iter([{"t/00000": 41, "t/00001": 7}, {"t/00000": 99, "t/00001": 12}])
    calls: list[int] = []

    def latest() -> dict[str, int]:
        calls.append(1)
        return next(ends)

    first = query_start(redis_client, ns, "ck1", "spout", latest)
    again = query_start(redis_client, ns, "ck1", "spout", latest)  # the driver restarted
    assert first == again == {"t/00000": 41, "t/00001": 7} and len(calls) == 1
    assert query_start(redis_client, ns, "ck2", "spout", latest) == {"t/00000": 99, "t/00001": 12}
    assert query_start(redis_client, ns, "ck1", "other", lambda: {"f": 0}) == {"f": 0}


def test_a_checkpoint_id_that_would_break_the_key_is_refused(redis_client, ns) -> None:
    with pytest.raises(ValueError, match="checkpoint id"):
        query_start(redis_client, ns, "a:b", "spout", dict)
