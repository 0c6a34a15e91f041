"""`stormshift state ls/get/dump/reset` against the real Redis server."""

from __future__ import annotations

import json

from click.testing import CliRunner
from support.state_fixtures import REDIS_URL, commit, run_task

from stormshift.cli.state import state_group
from stormshift.state import opaque_map, transactional_map
from stormshift.state.commit import CommitLog
from stormshift.state.fencing import acquire_epoch
from stormshift.state.inspect import map_items
from stormshift.state.snapshots import SnapshotStore

pytest_plugins = ["support.state_fixtures"]


def cli(*args):
    res = CliRunner().invoke(state_group, [*args, "--redis", REDIS_URL], catch_exceptions=False)
    return res


def fill(r, namespace):
    CommitLog(r, namespace).bind_checkpoint("ck")
    run_task(r, namespace, 1, lambda: [opaque_map("clicks").increment(("ad", i), i) for i in range(3)]
             + [transactional_map("names").put("x", "héllo")], component="count")
    commit(r, namespace, 1)
    SnapshotStore(r, namespace, b"k").save("legacy", 0, 2, acquire_epoch(r, namespace, "legacy", 0), b"abc")


def test_ls_get_dump(redis_client, ns):
    fill(redis_client, ns)
    out = cli("ls", ns).output
    assert f"{ns}: committed txid 1" in out
    assert "map count:clicks: 3 keys" in out and "checkpoint ck: txid base 0" in out
    assert "task legacy:0: epoch 1, txid 2: 41 B" in out  # payload + magic + HMAC
    d = json.loads(cli("ls", ns, "--json").output)
    assert d["maps"] == {"count:clicks": 3, "count:names": 1} and d["epochs"]["count:0"] == 1
    assert ns in cli("ls").output
    got = json.loads(cli("get", ns, "count", "clicks", '["ad", 2]').output)
    assert got == {"key": ["ad", 2], "value": 2, "txid": 1}
    assert json.loads(cli("get", ns, "count", "names", "x").output)["value"] == "héllo"
    missing = cli("get", ns, "count", "clicks", "nope")
    assert missing.exit_code == 1 and "state ls" in missing.output
    lines = [json.loads(x) for x in cli("dump", ns, "--map", "clicks").output.splitlines()]
    assert [(x["key"], x["value"]) for x in lines] == [(["ad", 0], 0), (["ad", 1], 1), (["ad", 2], 2)]


def test_reset_is_guarded(redis_client, ns):
    fill(redis_client, ns)
    refused = cli("reset", ns)
    assert refused.exit_code == 1 and "--yes" in refused.output
    assert len(map_items(redis_client, ns, "count", "clicks")) == 3
    assert "deleted" in cli("reset", ns, "--yes").output
    assert map_items(redis_client, ns, "count", "clicks") == {}
    assert CommitLog(redis_client, ns).committed() == 1  # fences stay unless --hard


def test_hard_reset_clears_every_namespace_key_but_the_epochs(redis_client, ns):
    from stormshift.state import keys as K
    from stormshift.state.deadletter import DeadLetters

    fill(redis_client, ns)
    DeadLetters(redis_client, ns).add("count", "default", ["x"], "E", "", 1, tuple_key="1:0:1")
    epochs = redis_client.hgetall(K.epochs_key(ns))
    assert "deleted" in cli("reset", ns, "--yes", "--hard").output
    left = sorted(k.decode() for k in redis_client.scan_iter(match=f"ss:{{{ns}*"))
    assert left == [K.epochs_key(ns)]
    assert redis_client.hgetall(K.epochs_key(ns)) == epochs and epochs
    assert CommitLog(redis_client, ns).committed() < 1


def test_ls_names_a_namespace_a_newer_stormshift_wrote_and_lists_the_rest(redis_client, ns):
    from stormshift.state import keys as K

    fill(redis_client, ns)
    newer = f"{ns}-newer"
    commit(redis_client, newer, 1)
    redis_client.hset(K.commit_key(newer), "format", K.FORMAT_VERSION + 1)
    try:
        out = cli("ls")
        assert out.exit_code == 0 and f"{ns}: committed txid 1" in out.output
        assert f"{newer}: not shown: state namespace {newer!r} was written in state format " \
               f"{K.FORMAT_VERSION + 1}" in out.output and "--reset-state" in out.output
        alone = cli("ls", newer)
        assert alone.exit_code == 1 and "newer stormshift" in alone.output
        assert json.loads(cli("ls", newer, "--json").output)["namespace"] == newer
    finally:
        redis_client.delete(*redis_client.keys(f"*{newer}*"))
