"""Redis restarted between and during batches loses nothing committed (own redis-server, AOF)."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
import redis
from support.state_fixtures import RedisProcess

from stormshift.state import opaque_map, transactional_map
from stormshift.state.commit import CommitLog
from stormshift.state.connection import connect
from stormshift.state.fencing import acquire_epoch
from stormshift.state.inspect import map_items
from stormshift.state.scope import TaskScope

pytestmark = [pytest.mark.slow, pytest.mark.redis]
KEYS = 30_000

pytest_plugins = ["support.state_fixtures"]


@pytest.fixture
def server():
    proc = RedisProcess()
    try:
        proc.start()
        yield proc
    finally:
        proc.close()


def batch(r, ns, txid):
    """Every key +1 in both map kinds, as one task attempt, then the driver's commit."""
    opq, trx = opaque_map("o"), transactional_map("t")
    epoch = acquire_epoch(r, ns, "bolt", 0)
    with TaskScope(r, ns, "bolt", 0, txid, epoch):
        for i in range(KEYS):
            opq.increment(i, 1)
            trx.increment(i, 1)
    CommitLog(r, ns).record_commit(txid)


def check_totals(r, ns, want):
    for name in ("o", "t"):
        items = map_items(r, ns, "bolt", name)
        assert len(items) == KEYS
        assert {v for v, _t in items.values()} == {want}, name


def test_restart_between_batches_keeps_committed_state(server):
    ns = "r" + uuid.uuid4().hex[:8]
    r = connect(server.url)
    batch(r, ns, 1)
    batch(r, ns, 2)
    server.kill()  # SIGKILL: only the append-only file survives
    server.start()
    assert CommitLog(r, ns).committed() == 2
    check_totals(r, ns, 2)
    batch(r, ns, 3)  # scripts are gone after the restart: reloaded on NOSCRIPT
    check_totals(r, ns, 3)


def test_restart_during_a_batch_is_retried_and_totals_stay_exact(server):
    ns = "r" + uuid.uuid4().hex[:8]
    r = connect(server.url)
    batch(r, ns, 1)
    for txid, delay_s in ((2, 0.0), (3, 0.05), (4, 0.15)):
        errors: list[BaseException] = []

        def run(txid=txid, errors=errors):
            try:
                batch(r, ns, txid)
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        t = threading.Thread(target=run)
        t.start()
        time.sleep(delay_s)
        server.kill()  # mid-batch: before, during or after the flush
        time.sleep(0.3)
        server.start()
        t.join(60)
        assert not t.is_alive()
        if errors:  # the attempt gave up: the engine replays the batch with a new epoch
            assert isinstance(errors[0], (redis.ConnectionError, redis.TimeoutError)), errors[0]
            batch(r, ns, txid)
        assert CommitLog(r, ns).committed() == txid
        check_totals(r, ns, txid)
