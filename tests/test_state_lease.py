"""The run lease of a namespace (``state/lease.py``, ``state/lua_lease.py``).

Pure pieces (the words of its messages, a holder's liveness) in the unit tier; the
scripts on a real Redis: a live lease refuses a second one and writes nothing, a lapsed
one is taken over with one line, ``--takeover`` bumps the epoch and the replaced run can
no longer commit, a stop request reaches the holder, a release leaves no key.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

import pytest
import redis

from stormshift.cli import exit_codes
from stormshift.engines.spark.driver.leased import what_starts
from stormshift.errors import FencedError, LeaseHeldError, LeaseLostError
from stormshift.state import keys as K
from stormshift.state.commit import CommitLog
from stormshift.state.lease import (
    LeaseHolder,
    LeaseKeeper,
    ago,
    describe,
    holder_alive,
    live_runs,
    read_lease,
    refusal,
    refuse_if_live,
    request_stop,
    ttl_ms_default,
)

NOW = 1_800_000_000_000


def holder(**kw: Any) -> LeaseHolder:
    fields = {"holder": "tok", "epoch": "3", "host": "h1", "pid": "42", "topology": "wc",
              "checkpoint": "/ck/wc1", "started_ms": str(NOW - 90_000),
              "renewed_ms": str(NOW - 2_000), "expires_ms": str(NOW + 18_000), "batches": "7"}
    fields.update({k: str(v) for k, v in kw.items()})
    got = LeaseHolder.from_fields("wc2", fields)
    assert got is not None
    return got


def test_ago_reads_as_seconds_minutes_hours() -> None:
    assert [ago(ms) for ms in (-5, 0, 59_000, 119_999, 120_000, 7_199_000, 7_200_000)] == \
        ["0 s", "0 s", "59 s", "119 s", "2 min", "119 min", "2 h"]


def test_a_refusal_is_one_line_naming_the_live_run_and_how_to_stop_it() -> None:
    text = refusal(holder(), NOW, "run --reset-state")
    assert "\n" not in text
    for part in ("run --reset-state refused", "'wc2'", "host h1 pid 42", "(90 s ago)",
                 "checkpoint /ck/wc1", "`stormshift stop wc2`", "--takeover",
                 "nothing was written"):
        assert part in text, text
    assert "--takeover" not in refusal(holder(), NOW, "state reset wc2")


def test_a_released_lease_has_no_holder_and_a_holder_is_live_until_it_expires() -> None:
    assert LeaseHolder.from_fields("wc2", {"epoch": "4"}) is None
    h = holder()
    assert h.live(NOW) and not h.live(NOW + 18_000)
    row = h.to_dict(NOW)
    assert row["renewed_secs_ago"] == 2.0 and row["batches"] == 7 and "token" not in str(row)
    assert describe(h, NOW).startswith("topology 'wc' on host h1 pid 42, started ")


def test_only_a_holder_on_this_host_whose_process_ended_is_known_dead() -> None:
    import psutil

    me = psutil.Process()
    here = {"host": socket.gethostname(), "pidns": os.readlink("/proc/self/ns/pid")}
    started = int(me.create_time() * 1000)
    assert holder_alive(holder(**here, pid=os.getpid(), pstart_ms=started))
    assert not holder_alive(holder(**here, pid=os.getpid(), pstart_ms=started - 60_000))  # reused
    assert holder_alive(holder(host="elsewhere", pid=os.getpid()))  # not ours to judge
    assert holder_alive(holder(**{**here, "pidns": "pid:[1]"}, pid=os.getpid()))
    unreaped = psutil.Popen(["true"])
    while unreaped.status() != psutil.STATUS_ZOMBIE:
        time.sleep(0.01)
    assert not holder_alive(holder(**here, pid=unreaped.pid,
                                   pstart_ms=int(unreaped.create_time() * 1000)))
    unreaped.wait()
    assert not holder_alive(holder(**here, pid=unreaped.pid, pstart_ms=started))


def test_the_refusing_command_and_the_ttl_and_the_exit_code_are_named(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert [what_starts(m) for m in ("strict", "reset", "adopt")] == \
        ["run", "run --reset-state", "run --adopt-state"]
    monkeypatch.delenv("STORMSHIFT_LEASE_TTL_SECS", raising=False)
    assert ttl_ms_default() == 20_000
    monkeypatch.setenv("STORMSHIFT_LEASE_TTL_SECS", "0.1")
    assert ttl_ms_default() == 1000
    assert exit_codes.TAKEN_OVER == 6 and "6    taken over" in exit_codes.EPILOG


# -- the scripts, on a real Redis -------------------------------------------------------
def keeper(r: Any, ns: str, **kw: Any) -> LeaseKeeper:
    return LeaseKeeper(r, ns, topology="wc", checkpoint=kw.pop("checkpoint", "/ck/a"), **kw)


@pytest.mark.redis
def test_a_live_lease_refuses_a_second_run_and_writes_nothing(redis_url: str,
                                                               namespace: str) -> None:
    redis_client = redis.Redis.from_url(redis_url)
    first = keeper(redis_client, namespace, ttl_ms=10_000)
    first.acquire()
    before = redis_client.hgetall(K.lease_key(namespace))
    with pytest.raises(LeaseHeldError, match=f"pid {os.getpid()}"):
        keeper(redis_client, namespace, checkpoint="/ck/b").acquire()
    with pytest.raises(LeaseHeldError, match="state reset"):
        refuse_if_live(redis_client, namespace, "state reset")
    assert redis_client.hgetall(K.lease_key(namespace)) == before
    assert [h.pid for _, h in live_runs(redis_client) if h.namespace == namespace] == [os.getpid()]
    first.release()
    assert not redis_client.exists(K.lease_key(namespace))  # released: gone
    assert read_lease(redis_client, namespace)[1] is None
    refuse_if_live(redis_client, namespace, "state reset")


@pytest.mark.redis
def test_a_lapsed_lease_is_taken_over_with_one_line_and_the_old_run_cannot_commit(
        redis_url: str, namespace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    redis_client = redis.Redis.from_url(redis_url)
    from stormshift.state import lease

    monkeypatch.setattr(lease, "holder_alive", lambda _h: True)  # as if on another host
    old = keeper(redis_client, namespace, ttl_ms=1000)
    old.acquire()
    log = CommitLog(redis_client, namespace, lease=old)
    log.record_commit(0)
    time.sleep(1.1)
    said: list[str] = []
    new = keeper(redis_client, namespace, ttl_ms=5000, say=said.append)
    new.acquire()
    assert new.epoch == old.epoch + 1
    assert len(said) == 1 and "stopped renewing its lease 1 s ago; taking over" in said[0], said
    with pytest.raises(FencedError, match="lease lost"):
        log.record_commit(1)  # the zombie's commit
    assert CommitLog(redis_client, namespace).committed() == 0
    assert not old.renew() and "taken over" in (old.lost or "")
    with pytest.raises(LeaseLostError):
        old.check()
    CommitLog(redis_client, namespace, lease=new).record_commit(1)
    old.release()  # not its lease any more: marks that it stopped, deletes nothing
    assert redis_client.hget(K.lease_key(namespace), "yielded").decode() == old.token
    new.release()


@pytest.mark.redis
def test_takeover_bumps_the_epoch_and_waits_for_the_replaced_run_to_stop(
        redis_url: str, namespace: str) -> None:
    redis_client = redis.Redis.from_url(redis_url)
    import threading

    old = keeper(redis_client, namespace, ttl_ms=4000)
    old.acquire()
    old.start()

    def replaced() -> None:  # the old driver: sees the loss at a renewal, stops, yields
        while old.renew():
            time.sleep(0.05)
        old.release()

    threading.Thread(target=replaced, daemon=True).start()
    said: list[str] = []
    new = keeper(redis_client, namespace, ttl_ms=4000, takeover=True, say=said.append)
    t0 = time.monotonic()
    new.acquire()
    assert time.monotonic() - t0 < 3 and new.epoch == old.epoch + 1
    assert said[0].startswith("--takeover: replacing the live run") and "stopped" in said[1]
    new.release()


@pytest.mark.redis
def test_a_stop_request_reaches_the_holder_and_no_run_means_nothing_to_stop(
        redis_url: str, namespace: str) -> None:
    redis_client = redis.Redis.from_url(redis_url)
    assert request_stop(redis_client, namespace)[2] is False
    run = keeper(redis_client, namespace, ttl_ms=10_000)
    run.acquire()
    assert run.renew(batches=3) and not run.stop_requested
    _, h, asked = request_stop(redis_client, namespace)
    assert asked and h is not None and h.batches == 3
    assert run.renew() and run.stop_requested
    run.release()
    assert not redis_client.exists(K.lease_key(namespace))


# -- the commands' pure parts -------------------------------------------------------------
def test_stop_sees_a_release_a_new_holder_and_an_embedded_server_gone() -> None:
    from redis.exceptions import ConnectionError as Down

    from stormshift.cli.operate import _released

    class Client:
        def __init__(self, held: Any):
            self.held = held

        def hget(self, _key: str, _field: str) -> Any:
            if isinstance(self.held, Exception):
                raise self.held
            return self.held

    assert not _released(Client(b"tok"), "ns", "tok", embedded=False)
    assert _released(Client(None), "ns", "tok", embedded=False)
    assert _released(Client(b"other"), "ns", "tok", embedded=False)  # taken over: not it
    assert _released(Client(Down("gone")), "ns", "tok", embedded=True)
    assert not _released(Client(Down("outage")), "ns", "tok", embedded=False)


def test_stop_and_ps_where_there_is_no_state_say_so_and_start_no_server(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from stormshift.cli import cli

    monkeypatch.chdir(tmp_path)
    for name in ("STORMSHIFT_REDIS", "STORMSHIFT_REDIS_URL", "REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    stopped = CliRunner().invoke(cli, ["stop", "wc"])
    assert stopped.exit_code == 1 and "no state here" in stopped.output
    listed = CliRunner().invoke(cli, ["ps", "--json"])
    assert listed.exit_code == 0 and listed.output.strip().endswith('{"runs": []}')
    assert not (tmp_path / ".stormshift").exists()
