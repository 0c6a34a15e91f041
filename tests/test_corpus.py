"""The corpus: real-shaped streamparse projects through ``check`` and ``shadow``, on both engines.

Each ``tests/fixtures/corpus/<shape>/`` is a plain streamparse project
(``config.json``, ``topologies/<shape>.py``, ``src/``) with an
``expected.json``: ``check``'s findings (rule, severity, file:line; the report
holds at least these) and exit code, with the command's ``args`` if any (the
sleeping spout's short run gets ``--duration 2``: its budget finding comes
the same after 2 s as after the default 20), and per engine ``shadow``'s verdict, exit
code and the exact set of classes of difference. The shadow runs the way the
CLI does (``check``'s static analysis first, ``findings.analyse``); the port
runs on the local engine (a dry run) and on Spark ``local[2]`` (one shared
session, small inputs). ``external_write``'s own Redis writes go to a scratch server per
side (``shadow/scratch.py``), its real target a server nobody serves.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from support.guide_outputs import shown_outputs

from stormshift.cli.check import check_command
from stormshift.cli.shadow import shadow_command
from stormshift.shadow.findings import analyse
from stormshift.shadow.run import ShadowOptions, ShadowResult, execute, plan_shadow
from stormshift.shadow.verdict import classes
from stormshift.topology.loader import load_topology

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "fixtures" / "corpus"
VERDICT_WORDS = ("SAFE TO SWITCH", "PORT DIFFERS", "NOTHING COMPARED", "MOSTLY FAILED")
SHAPES = sorted(p.name for p in CORPUS.iterdir() if (p / "expected.json").is_file())
NEEDS_REDIS = {"external_write"}  # the bolt itself talks to Redis


def expected(shape: str) -> dict[str, Any]:
    return json.loads((CORPUS / shape / "expected.json").read_text(encoding="utf-8"))


def test_corpus_has_every_shape_of_the_issue() -> None:
    assert SHAPES == sorted(["batching_ticks", "crash_restart", "emit_arity", "external_write",
                             "float_sums", "no_outputs", "sleeping_spout", "wall_clock"])
    for shape in SHAPES:
        root = CORPUS / shape
        assert (root / "config.json").is_file() and (root / "topologies" / f"{shape}.py").is_file()


# -- check ---------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", SHAPES)
def test_check_finds_what_the_corpus_expects(shape: str) -> None:
    want = expected(shape)["check"]
    try:  # the command as a user runs it, with the shape's options
        result = CliRunner().invoke(check_command, [str(CORPUS / shape), "--json", *want.get("args", [])])
    except KeyboardInterrupt:  # the short run's budget must never look like Ctrl-C (31.1)
        pytest.fail(f"{shape}: check was interrupted by its own short-run budget")
    report = json.loads(result.output)
    found = {(f["rule"], f["severity"], f["file"], f["line"]) for f in report["findings"]}
    for item in want["findings"]:
        assert (item["rule"], item["severity"], item["file"], item["line"]) in found, \
            f"{shape}: {item} not in {sorted(found)}"
    assert result.exit_code == want["exit_code"], sorted(found)


# -- shadow --------------------------------------------------------------------------------
def _overrides(shape: str, redis_url: str | None, ns: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(both sides, legacy only) config overrides: small inputs, and scratch Redis keys."""
    if shape == "sleeping_spout":
        return {}, {}
    if shape == "external_write":  # a target nobody serves: each side writes its scratch
        return {"leaderboard.redis_url": "redis://127.0.0.1:1/0"}, {}
    return {}, {}


def shadow(shape: str, engine: str, *, spark: Any = None, redis_url: str | None = None,
           namespace: str = "corpus") -> ShadowResult:
    """The shadow of ``shape`` as the CLI runs it (check's findings first)."""
    path = CORPUS / shape
    opts = expected(shape)["shadow"]["options"]
    both, legacy_only = _overrides(shape, redis_url, namespace)
    legacy_cfg = {**both, **legacy_only}
    graph = load_topology(path, overrides=legacy_cfg or None)
    port = load_topology(path, overrides=both or None) if legacy_only else None
    options = ShadowOptions(
        port_engine=engine, spark=spark, redis_url=redis_url, namespace=namespace,
        max_tuples=opts.get("max_tuples"), legacy_faults=opts.get("legacy_faults"),
        findings=analyse(path, overrides=legacy_cfg or None),
        allow_external_writes=bool(opts.get("refused")), batch_max_tuples=20,
    )
    return execute(plan_shadow(graph, options, port_graph=port))


def assert_verdict(shape: str, engine: str, result: ShadowResult) -> None:
    want = expected(shape)["shadow"][engine]
    verdict = result.verdict
    assert (verdict.word, verdict.exit_code) == (want["verdict"], want["exit_code"]), verdict.line
    assert sorted(c.id for c in classes(result)) == sorted(want["classes"]), verdict.line
    doc = result.to_dict()
    assert doc["verdict"]["verdict"] == want["verdict"] and doc["exit_code"] == want["exit_code"]
    assert sorted(c["class"] for c in doc["classes"]) == sorted(want["classes"])
    assert all(c["example"] for c in doc["classes"])


@pytest.mark.parametrize("shape", [s for s in SHAPES if s not in NEEDS_REDIS])
def test_shadow_verdict_with_the_port_on_the_local_engine(shape: str) -> None:
    assert_verdict(shape, "local", shadow(shape, "local"))


def test_batching_bolt_internals_are_never_compared() -> None:
    from stormshift.state.component.attributes import (
        FRAMEWORK_ATTRS,
        FRAMEWORK_PROGRESS,
        framework_attributes,
    )

    result = shadow("batching_ticks", "local")
    assert [s.label for s in result.states] == ["totals.totals"]  # no _batches, _tick_counter
    # read off pystorm's own classes, not a hand list
    assert {"_batches", "_tick_counter", "_batch_lock", "_batcher", "exc_info", "_current_key",
            "_pending_commands", "logger", "storm_conf"} <= framework_attributes()
    assert FRAMEWORK_PROGRESS == {"_batches", "_tick_counter"}  # snapshotted, never compared
    assert FRAMEWORK_PROGRESS.isdisjoint(FRAMEWORK_ATTRS)


def test_nondeterminism_reaches_attributes_and_streams_through_locals() -> None:
    found = analyse(CORPUS / "wall_clock")
    assert set(found.attributes) == {("seen", "last_seen")}  # not counts: no clock reaches it
    assert set(found.streams) == {("seen", "default")}
    (finding,) = found.attributes[("seen", "last_seen")]
    assert (finding.rule, finding.location) == ("wall-clock", "src/bolts/seen.py:18")


@pytest.mark.redis  # each side's scratch server is a real (embedded) Redis
def test_external_write_goes_to_a_scratch_redis_per_side_never_the_real_target() -> None:
    want = expected("external_write")["shadow"]["scratch"]
    path = str(CORPUS / "external_write")
    # the target is a Redis nobody serves in this test: one connection to it would fail the run
    done = CliRunner().invoke(shadow_command, [path, "--port-engine", "local", "-o",
                                               "leaderboard.redis_url=redis://127.0.0.1:1/0"])
    assert done.exit_code == want["exit_code"], done.output
    assert all(name in done.output for name in want["names"])
    plan_shadow(load_topology(path), findings=analyse(path))  # not refused


@pytest.fixture
def scratch(redis_url: str) -> Iterator[str]:
    import redis

    ns = f"t-corpus-{uuid.uuid4().hex[:10]}"
    yield ns
    client = redis.Redis.from_url(redis_url)
    for key in client.scan_iter(match=f"*{ns}*", count=1000):
        client.delete(key)


def test_external_write_is_compared_from_each_sides_scratch_redis(redis_url: str,
                                                                   scratch: str) -> None:
    result = shadow("external_write", "local", redis_url=redis_url, namespace=scratch)
    assert_verdict("external_write", "local", result)
    (board,) = [s for s in result.states if s.label == "leaderboard.redis"]
    assert board.legacy_keys == board.port_keys == board.same == 7 and not board.divergences
    assert any("the real target got no write" in w for w in result.warnings)


def test_log_only_and_mostly_failed_exit_codes_from_the_command() -> None:
    """``no_outputs`` only logs: its verdict rests on its log lines (``shadow/logs.py``;
    nothing at all, not even a log line, is ``NOTHING COMPARED``: tests/test_shadow_streams.py)."""
    for shape in ("no_outputs", "emit_arity"):
        want = expected(shape)["shadow"]["local"]
        done = CliRunner().invoke(shadow_command, [str(CORPUS / shape), "--port-engine", "local",
                                                   "--json"])
        assert done.exit_code == want["exit_code"], done.output
        assert json.loads(done.output)["verdict"]["verdict"] == want["verdict"]


# -- the port on Spark ---------------------------------------------------------------------
@pytest.mark.spark
@pytest.mark.parametrize("shape", SHAPES)
def test_shadow_verdict_with_the_port_on_spark(shape: str, spark: Any, redis_url: str,
                                                 scratch: str) -> None:
    result = shadow(shape, "spark", spark=spark, redis_url=redis_url, namespace=scratch)
    assert_verdict(shape, "spark", result)


# -- the guide's shadows of corpus projects ------------------------------------------------
GUIDE_SHADOWS = [s for s in shown_outputs(ROOT / "migrations_guide" / "check.md")
                 if s.args[0] == "shadow"]


def _rows(lines: Sequence[str]) -> list[str]:
    """What must match: table rows, the verdict's first line, the refusal's lines."""
    return [line for line in lines if "│" in line or line.startswith(VERDICT_WORDS)
            or line.lstrip().startswith(("Error: shadow refused", "leaderboard (both sides)"))]


@pytest.mark.parametrize("shown", [  # a component's own Redis: scratch servers are real Redis
    pytest.param(s, id=s.id, marks=[pytest.mark.redis] if "external_write" in s.args[1] else [])
    for s in GUIDE_SHADOWS])
def test_check_guide_shadows_print_what_it_shows(shown: Any) -> None:
    assert GUIDE_SHADOWS, "the parser finds the guide's shadow outputs"
    argv = [str(ROOT / a) if a.startswith("tests/") else a for a in shown.args[1:]]
    done = CliRunner().invoke(shadow_command, argv, terminal_width=80)
    assert done.exit_code == shown.exit_code, done.output
    real = [line.rstrip() for line in done.output.splitlines()]
    missing = [row for row in _rows(shown.output) if row.strip() not in {r.strip() for r in real}]
    assert not missing, "\n".join(missing)
