"""The bad-input catalogue: every infrastructure mistake and every takeover, as data.

Each case is a ``stormshift`` command line a user could type, run in-process through
``stormshift.cli.main`` (so a case that starts a JVM is caught: ``no_jvm`` refuses any
``java`` / ``spark-submit`` start, and the unit tier's guard refuses Redis too). Every
case asserts its exit code, at most ``lines`` lines on stderr, no "Traceback", the line
that names the fix, and that nothing was written: no embedded Redis started, and -- on
a real Redis -- a dump of the namespaces involved is the same before and after.

Tiers: the cases found before Redis is even asked (checkpoint, Java, master, ports, no
state here) run in the unit tier, which proves they start no JVM and touch no Redis;
the Redis cases need a server (their own for a password or cluster mode); the takeover
cases need state another topology wrote for real on Spark (one run, shared session).
"""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
from support.cli_cases import ENV_CLEARED, no_jvm
from support.state_fixtures import RedisProcess, _wait_ping, cluster_port

from stormshift.cli import main

ROOT = Path(__file__).resolve().parents[1]
WORDCOUNT = str(ROOT / "examples" / "wordcount")
OTHER = str(ROOT / "tests" / "fixtures" / "failing")  # -n logs_only: 300 numbers, then done
OTHER_NAME = "logs_only"
DEAD = "redis://127.0.0.1:1/0"  # nothing listens on port 1


@dataclass(frozen=True)
class Case:
    """One command line (``{placeholders}`` filled per test), and what it must do."""

    name: str
    argv: tuple[str, ...]
    code: int
    says: str  # part of stderr (or of the JSON error): what is wrong / the fix
    lines: int = 2  # at most this many lines on stderr
    env: Mapping[str, str | None] = field(default_factory=dict)
    engines: tuple[str, ...] = ("spark",)


def run_args(project: str, *more: str) -> tuple[str, ...]:
    return ("run", project, "--max-tuples", "50", *more)


# -- found before Redis is asked: the unit tier proves no JVM, no Redis -------------------------
BEFORE_REDIS = [
    Case("checkpoint-unwritable", run_args(WORDCOUNT, "--redis", DEAD, "--checkpoint",
                                           "/proc/stormshift-ck"), 2, "cannot be written"),
    Case("java-home-wrong", run_args(WORDCOUNT, "--redis", DEAD, "--checkpoint", "{tmp}/ck"), 2,
         "JAVA_HOME", env={"JAVA_HOME": "/nonexistent-java"}),
    Case("java-missing", run_args(WORDCOUNT, "--redis", DEAD, "--checkpoint", "{tmp}/ck"), 2,
         "Java is not installed", env={"JAVA_HOME": None, "PATH": "{tmp}/empty-bin"}),
    Case("master-unreachable", run_args(WORDCOUNT, "--redis", DEAD, "--checkpoint", "{tmp}/ck",
                                        "--master", "spark://nohost.invalid:7077"), 2,
         "Spark master spark://nohost.invalid:7077 does not answer"),
    Case("ui-port-in-use", run_args(WORDCOUNT, "--redis", DEAD, "--checkpoint", "{tmp}/ck",
                                    "--conf", "spark.ui.port={busy_port}"), 2, "is in use"),
    Case("json-error-object", run_args(WORDCOUNT, "--redis", DEAD, "--checkpoint", "{tmp}/ck",
                                       "--master", "spark://nohost.invalid:7077", "--json"), 2,
         "does not answer"),
    Case("state-ls-no-state-here", ("state", "ls"), 0, "no state here: no embedded Redis in"),
    Case("state-get-no-state-here", ("state", "get", "wordcount", "count_bolt", "m", "k"), 1,
         "no state here"),
    Case("deadletter-ls-no-state-here", ("deadletter", "ls", WORDCOUNT), 0, "no state here"),
]

# -- the server answers wrongly or not at all: one line, before the JVM ------------------------
REDIS_CASES = [
    Case("run-redis-unreachable", run_args(WORDCOUNT, "--redis", DEAD, "--namespace", "{ns}",
                                           "--checkpoint", "{tmp}/ck"), 2, "cannot reach Redis"),
    Case("run-redis-unreachable-json", run_args(WORDCOUNT, "--redis", DEAD, "--namespace", "{ns}",
                                                "--checkpoint", "{tmp}/ck", "--json"), 2,
         "cannot reach Redis"),
    Case("state-ls-redis-unreachable", ("state", "ls", "--redis", DEAD), 2, "cannot reach Redis"),
    Case("deadletter-ls-redis-unreachable", ("deadletter", "ls", "--namespace", "{ns}", "--redis",
                                             DEAD), 2, "cannot reach Redis"),
    Case("shadow-redis-unreachable", ("shadow", WORDCOUNT, "--max-tuples", "50", "--redis", DEAD),
         2, "cannot reach Redis"),
    Case("run-wrong-db", run_args(WORDCOUNT, "--redis", "{redis_base}/99", "--namespace", "{ns}",
                                  "--checkpoint", "{tmp}/ck"), 2, "has no database 99"),
    Case("state-ls-wrong-db", ("state", "ls", "--redis", "{redis_base}/99"), 2, "no database 99"),
    Case("run-wrong-password", run_args(WORDCOUNT, "--redis", "{password_url}", "--namespace",
                                        "{ns}", "--checkpoint", "{tmp}/ck"), 2,
         "refused the credentials"),
    Case("state-ls-no-password", ("state", "ls", "--redis", "{password_url_bare}"), 2,
         "refused the credentials"),
    Case("run-cluster-node-as-redis", run_args(WORDCOUNT, "--redis", "{cluster_node_url}",
                                               "--namespace", "{ns}", "--checkpoint", "{tmp}/ck"),
         2, "is a Redis Cluster node"),
    Case("run-cluster-url-on-plain-server", run_args(
        WORDCOUNT, "--redis", "{redis_cluster_url}", "--namespace", "{ns}", "--checkpoint",
        "{tmp}/ck"), 2, "is not a Redis Cluster node"),
    Case("state-ls-namespace-not-there", ("state", "ls", "{ns}", "--redis", "{redis_url}"), 0,
         "no state namespace"),
    Case("deadletter-ls-namespace-not-there", ("deadletter", "ls", "--namespace", "{ns}",
                                               "--redis", "{redis_url}"), 0,
         "no state namespace"),
]

# -- another topology on wordcount's state (namespace {a}, checkpoint {a_ck}) ------------------
OTHER_RUN = ("run", OTHER, "-n", OTHER_NAME, "--redis", "{redis_url}")
TAKEOVERS = [
    Case("takeover-namespace-and-checkpoint",
         (*OTHER_RUN, "--namespace", "{a}", "--checkpoint", "{a_ck}"), 2,
         "state namespace '{a}' belongs to topology 'wordcount'; this run is topology 'logs_only'"),
    Case("takeover-namespace-new-checkpoint",
         (*OTHER_RUN, "--namespace", "{a}", "--checkpoint", "{tmp}/ck-new"), 2,
         "belongs to topology 'wordcount'"),
    Case("takeover-checkpoint-only",
         (*OTHER_RUN, "--namespace", "{b}", "--checkpoint", "{a_ck}"), 2,
         "checkpoint {a_ck} belongs to topology 'wordcount'"),
    Case("adopt-state-with-foreign-components",
         (*OTHER_RUN, "--namespace", "{a}", "--checkpoint", "{tmp}/ck-adopt", "--adopt-state"), 2,
         "holds state of component(s) 'count_bolt', 'word_spout' that topology 'logs_only'"),
    Case("same-topology-new-checkpoint",  # named by its checkpoint, not as tampering
         ("run", WORDCOUNT, "--redis", "{redis_url}", "--namespace", "{a}", "--checkpoint",
          "{tmp}/ck-other"), 2,
         "state namespace '{a}' belongs to checkpoint {a_ck} (committed txid"),
    Case("local-engine-on-another-namespace",
         (*OTHER_RUN, "--namespace", "{a}", "--engine", "local"), 0,
         "--redis, --namespace not used: the local engine keeps no state", lines=6,
         engines=("local",)),
]


def fill(text: str, values: Mapping[str, str]) -> str:
    return text.format(**values) if "{" in text else text


def run_case(case: Case, values: Mapping[str, str], monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str], tmp: Path) -> tuple[str, str]:
    """Run ``case`` in ``tmp``; assert code, lines, no traceback, its message. (out, err)"""
    from stormshift.state import connection

    for name in ENV_CLEARED:
        monkeypatch.delenv(name, raising=False)
    for name, value in case.env.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, fill(value, values))
    monkeypatch.chdir(tmp)
    argv = [fill(a, values) for a in case.argv]
    with no_jvm():
        code = main(argv)
    out, err = capsys.readouterr()
    shown = f"{case.name}: {' '.join(argv)}\n--- stderr\n{err}--- stdout\n{out[-2000:]}"
    assert code == case.code, shown
    assert "Traceback" not in err + out, shown
    assert len(err.strip().splitlines()) <= case.lines, shown
    assert fill(case.says, values) in err, shown
    assert not connection._started, f"{case.name} started an embedded Redis"
    if "--json" in argv:
        reply = json.loads(out.strip().splitlines()[-1])
        assert reply["exit_code"] == case.code and fill(case.says, values) in reply["error"]
    return out, err


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.mark.parametrize("case", BEFORE_REDIS, ids=[c.name for c in BEFORE_REDIS])
def test_found_before_redis_and_before_the_jvm(case: Case, tmp_path: Path, busy_port: int,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty-bin").mkdir()
    run_case(case, {"tmp": str(tmp_path), "busy_port": str(busy_port)}, monkeypatch, capsys,
             tmp_path)
    if case.argv[0] != "run":  # looking for state created none
        assert not (tmp_path / ".stormshift").exists()


# -- Redis ------------------------------------------------------------------------------------
def dump(r: Any, *namespaces: str) -> dict[bytes, bytes]:
    """Every key of ``namespaces`` (and any key naming them) with its serialized value."""
    keys: set[bytes] = set()
    for ns in namespaces:
        for pattern in (f"ss:{{{ns}}}:*", f"ss:{{{ns}:*}}:*", f"*{ns}*"):
            keys.update(r.scan_iter(match=pattern, count=1000))
    return {k: r.dump(k) for k in sorted(keys)}


@pytest.fixture(scope="module")
def odd_servers() -> Iterator[dict[str, str]]:
    """A server that wants a password, and a Redis Cluster node (cluster mode on, no slots)."""
    locked, node = RedisProcess(), RedisProcess()
    locked.start()
    redis.Redis(port=locked.port).config_set("requirepass", "s3cret")
    port = node.port = cluster_port()
    node_proc = subprocess.Popen(
        [node.binary, "--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
         "--cluster-config-file", f"{node.dir}/nodes.conf", "--dir", node.dir, "--save", ""],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    node.proc = node_proc
    _wait_ping(port)
    try:
        yield {"password_url": f"redis://:wrong@127.0.0.1:{locked.port}/0",
               "password_url_bare": f"redis://127.0.0.1:{locked.port}/0",
               "cluster_node_url": f"redis://127.0.0.1:{port}/0"}
    finally:
        locked.close()
        node.close()


@pytest.mark.redis
@pytest.mark.parametrize("case", REDIS_CASES, ids=[c.name for c in REDIS_CASES])
def test_redis_mistakes_are_one_line_before_the_jvm(case: Case, tmp_path: Path, redis_url: str,
                                                    namespace: str, odd_servers: dict[str, str],
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    r = redis.Redis.from_url(redis_url)
    before = dump(r, namespace, "wordcount")
    base = redis_url.rsplit("/", 1)[0]
    values = {"tmp": str(tmp_path), "ns": namespace, "redis_url": redis_url,
              "redis_base": base, "redis_cluster_url": base.replace("redis://", "redis+cluster://"),
              **odd_servers}
    run_case(case, values, monkeypatch, capsys, tmp_path)
    assert dump(r, namespace, "wordcount") == before


# -- takeovers: state another topology wrote for real ----------------------------------------
def spark_engine(graph: Any, spark: Any, redis_url: str, namespace: str, checkpoint: Path,
                 **kw: Any) -> Any:
    from stormshift.engines.spark import SparkEngine

    return SparkEngine(graph, spark=spark, redis_url=redis_url, namespace=namespace,
                       checkpoint_dir=str(checkpoint), batch_max_tuples=50, **kw)


def wordcount_graph(name: str | None = None) -> Any:
    import dataclasses

    from stormshift.topology.loader import load_topology

    graph = load_topology(WORDCOUNT)
    return graph if name is None else dataclasses.replace(graph, name=name)


@pytest.fixture(scope="module")
def wordcount_state(spark: Any, redis_url: str,
                    tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """wordcount's state and checkpoint after a real Spark run of 200 tuples."""
    import uuid

    a, b = f"t-{uuid.uuid4().hex[:10]}", f"t-{uuid.uuid4().hex[:10]}"
    ck = tmp_path_factory.mktemp("wordcount") / "ck"
    summary = spark_engine(wordcount_graph(), spark, redis_url, a, ck).run(max_tuples=200)
    assert summary.spout_tuples == 200
    yield {"a": a, "b": b, "a_ck": str(ck), "redis_url": redis_url}
    r = redis.Redis.from_url(redis_url)
    for key in dump(r, a, b):
        r.delete(key)


def no_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """Building a Spark session fails the case (the shared session exists in-process, so a
    JVM start would not show as a process)."""
    from stormshift.engines.spark import SparkEngine

    def refuse(_self: Any) -> Any:
        raise AssertionError("the run got as far as building a Spark session")

    monkeypatch.setattr(SparkEngine, "_session", refuse)


@pytest.mark.spark
@pytest.mark.redis
@pytest.mark.parametrize("case", TAKEOVERS, ids=[c.name for c in TAKEOVERS])
def test_another_topology_is_refused_before_any_write(case: Case, wordcount_state: dict[str, str],
                                                      tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    r = redis.Redis.from_url(wordcount_state["redis_url"])
    a, b = wordcount_state["a"], wordcount_state["b"]
    before = dump(r, a, b)
    assert before and not dump(r, b)
    no_session(monkeypatch)
    run_case(case, {**wordcount_state, "tmp": str(tmp_path)}, monkeypatch, capsys, tmp_path)
    assert dump(r, a, b) == before  # not one key of either namespace changed


@pytest.mark.spark
@pytest.mark.redis
def test_a_checkpoint_from_before_owner_files_is_named_not_blamed_on_redis(
        wordcount_state: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    old = tmp_path / "old-ck"
    shutil.copytree(wordcount_state["a_ck"], old)
    (old / "stormshift-topology.json").unlink()  # as an older stormshift left it
    case = Case("legacy-foreign-checkpoint",
                (*OTHER_RUN, "--namespace", "{b}", "--checkpoint", str(old)), 2,
                "is bound to state namespace '{a}', not to '{b}'")
    r = redis.Redis.from_url(wordcount_state["redis_url"])
    before = dump(r, wordcount_state["a"], wordcount_state["b"])
    no_session(monkeypatch)
    _, err = run_case(case, {**wordcount_state, "tmp": str(tmp_path)}, monkeypatch, capsys,
                      tmp_path)
    assert "Redis lost" not in err and "restore Redis" not in err
    assert dump(r, wordcount_state["a"], wordcount_state["b"]) == before


@pytest.mark.spark
@pytest.mark.redis
def test_a_tampered_snapshot_of_any_task_is_refused_at_start(
        wordcount_state: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from stormshift.state import keys as K

    r = redis.Redis.from_url(wordcount_state["redis_url"])
    a = wordcount_state["a"]
    key = K.snapshot_key(a, "count_bolt", 1)  # the LAST task: task 0 still verifies
    fields = r.hgetall(key)
    assert fields, "count_bolt task 1 has no snapshot to tamper with"
    r.hset(key, mapping={f: blob[:-1] + bytes([blob[-1] ^ 1]) for f, blob in fields.items()})
    try:
        before = dump(r, a)
        no_session(monkeypatch)
        run_case(Case("tampered-snapshot", ("run", WORDCOUNT, "--max-tuples", "300", "--redis",
                                            "{redis_url}", "--namespace", "{a}",
                                            "--checkpoint", "{a_ck}"), 2,
                      "the snapshots of 'count_bolt' task 1 fail their integrity check"),
                 {**wordcount_state, "tmp": str(tmp_path)}, monkeypatch, capsys, tmp_path)
        assert dump(r, a) == before
    finally:
        r.hset(key, mapping=fields)


@pytest.mark.spark
@pytest.mark.redis
def test_state_without_an_owner_runs_then_continues_only_under_adopt_state(
        spark: Any, redis_url: str, namespace: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from stormshift.engines.spark.driver.preflight import OWNER_FILE
    from stormshift.errors import InfraError
    from stormshift.state.owner import recorded_owner

    monkeypatch.setenv("STORMSHIFT_STATE_HMAC_KEY", "one key for both checkpoints")
    r = redis.Redis.from_url(redis_url)
    ck = tmp_path / "ck"
    spark_engine(wordcount_graph(), spark, redis_url, namespace, ck).run(max_tuples=100)
    r.delete(f"ss:{{{namespace}}}:owner")  # state and checkpoint as an older stormshift left them
    (ck / OWNER_FILE).unlink()
    again = spark_engine(wordcount_graph(), spark, redis_url, namespace, ck).run(max_tuples=100)
    assert again.spout_tuples == 0 and again.stop_reason == "max_tuples=100 reached"
    assert any(w.startswith("nothing new to read: checkpoint ") for w in again.warnings)
    assert recorded_owner(r, namespace).topology == "wordcount"  # type: ignore[union-attr]
    assert (ck / OWNER_FILE).exists()

    renamed = wordcount_graph("wordcount_v2")  # same components, a new name
    before = dump(r, namespace)
    with pytest.raises(InfraError, match="belongs to topology 'wordcount'"):
        spark_engine(renamed, spark, redis_url, namespace, tmp_path / "ck2").run(max_tuples=150)
    assert dump(r, namespace) == before
    adopted = spark_engine(renamed, spark, redis_url, namespace, tmp_path / "ck2",
                           state_mode="adopt").run(max_tuples=150)
    assert adopted.spout_tuples == 150
    assert recorded_owner(r, namespace).topology == "wordcount_v2"  # type: ignore[union-attr]
    counts = {k: v[-1] for k, v in adopted.latest("count_bolt").items()}
    counts["dog"] //= 10  # the example's bolt counts a dog ten times
    assert sum(counts.values()) == 250  # 100 before the rename + 150 after: state continued


# -- the pieces ---------------------------------------------------------------------------------
def test_master_hosts_lists_every_master_of_a_standalone_ha_url() -> None:
    from stormshift.engines.spark.driver.preflight import master_hosts

    assert master_hosts("spark://a:7077,b:7078") == [("a", 7077), ("b", 7078)]
    assert master_hosts("spark://a") == [("a", 7077)]
    assert master_hosts("local[2]") == master_hosts("yarn") == []


def test_under_spark_submit_the_jvm_checks_are_left_to_its_running_jvm(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from stormshift.engines.spark.driver.preflight import before_jvm
    from stormshift.errors import InfraError

    monkeypatch.setenv("JAVA_HOME", "/nonexistent-java")
    with pytest.raises(InfraError, match="JAVA_HOME"):
        before_jvm(str(tmp_path / "ck"), "local[2]", {}, False)
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "12345")  # spark-submit started this driver
    before_jvm(str(tmp_path / "ck"), "spark://nohost.invalid:7077", {}, False)


def test_the_fingerprint_follows_components_not_their_par() -> None:
    import dataclasses

    from stormshift.state.owner import fingerprint

    graph = wordcount_graph()
    bolt = graph.components["count_bolt"]
    wider = dataclasses.replace(graph, components={**graph.components,
                                                   "count_bolt": dataclasses.replace(bolt, par=5)})
    fewer = dataclasses.replace(graph, components={"word_spout": graph.components["word_spout"]})
    assert fingerprint(wider) == fingerprint(graph) != fingerprint(fewer)


@pytest.mark.redis
def test_state_reset_frees_the_namespace_for_any_topology(redis_url: str, namespace: str) -> None:
    from stormshift.errors import InfraError
    from stormshift.state.commit import reset_namespace
    from stormshift.state.owner import check_owner, record_owner, recorded_owner

    r = redis.Redis.from_url(redis_url)
    record_owner(r, namespace, wordcount_graph())
    with pytest.raises(InfraError, match="belongs to topology 'wordcount'"):
        check_owner(r, namespace, wordcount_graph("another"), "strict")
    reset_namespace(r, namespace, keep_fences=True)  # `stormshift state reset NS --yes`
    assert recorded_owner(r, namespace) is None
    check_owner(r, namespace, wordcount_graph("another"), "strict")
