"""Any stream can be compared, leaf or not; component logs as a last resort (issue 50 item 3).

A stream some bolt reads, named in ``shadow.results``, is captured on both sides by a tap
(``shadow/tap.py``). A topology whose bolts only log (``tests/fixtures/causes/log_only``)
gets its verdict from its log lines counted per message template (``shadow/logs.py``),
named so in the verdict; with no log line either it is still ``NOTHING COMPARED``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from stormshift.cli.shadow import shadow_command
from stormshift.errors import StormshiftError
from stormshift.shadow.classify import PORT_DIFFERENCE
from stormshift.shadow.live import plan_live
from stormshift.shadow.logs import template
from stormshift.shadow.report_html import render_html
from stormshift.shadow.run import run_shadow
from stormshift.shadow.tap import is_tap
from stormshift.topology.loader import load_topology

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CRASH = FIXTURES / "corpus" / "crash_restart"  # words -> history: words:default is inner
LOG_ONLY = FIXTURES / "causes" / "log_only"
INNER = {"words:default": {"mode": "sum", "key": ["word"]}}


# -- a stream some bolt reads ----------------------------------------------------------
def test_a_stream_some_bolt_reads_is_compared_through_a_tap() -> None:
    result = run_shadow(load_topology(CRASH), port_engine="local", results=INNER)
    words = next(s for s in result.streams if s.label == "words:default")
    assert not words.spec.leaf and words.keys == 7 and words.equal
    assert words.legacy_emits == words.port_emits == 40  # every tuple the spout emitted
    assert [s.label for s in result.streams] == ["history:default", "words:default"]
    assert result.verdict.exit_code == 0
    doc = result.to_dict()
    assert not any(is_tap(name) for name in doc["components"])  # the tap is the shadow's
    assert all(not is_tap(s.component) for s in result.states)


def test_an_inner_stream_divergence_is_classified_like_a_leafs() -> None:
    result = run_shadow(load_topology(CRASH), port_engine="local", results=INNER,
                        legacy_faults="crash:history[0]@5")
    words = next(s for s in result.streams if s.label == "words:default")
    assert words.equal  # the crash is downstream: what the spout emitted does not change
    assert result.verdict.exit_code == 0


def test_an_unknown_stream_is_refused_naming_every_stream() -> None:
    done = CliRunner().invoke(shadow_command, [str(CRASH), "--port-engine", "local", "-o",
                                               'shadow.results={"nope:default": {}}'])
    assert done.exit_code == 2
    assert "no stream of the topology" in done.output and "words:default" in done.output


def test_the_command_compares_a_non_leaf_stream() -> None:
    done = CliRunner().invoke(shadow_command, [str(CRASH), "--port-engine", "local", "--json",
                                               "-o", f"shadow.results={json.dumps(INNER)}"])
    assert done.exit_code == 0, done.output
    doc = json.loads(done.output)
    assert "words:default" in [s["stream"] for s in doc["streams"]]


def test_a_live_shadow_refuses_an_inner_stream() -> None:
    with pytest.raises(StormshiftError, match="some bolt reads"):
        plan_live(load_topology(CRASH), port_sink="jsonl:/nonexistent", results=INNER,
                  legacy={"history": {"jsonl": "/nonexistent"}})


# -- component logs ----------------------------------------------------------------------
@pytest.mark.parametrize(("message", "want"), [
    ("counted word 'cat' 3 times", ("counted word <s> <n> times", "cat")),
    ('spent -1.5e3 on "ad-7" at 12:30', ("spent <n> on <s> at <n>:<n>", "ad-7")),
    ("task2 has v1.2 and 10%", ("task2 has v1.2 and <n>%", "")),
])
def test_a_log_line_becomes_its_template_and_first_quoted_value(
        message: str, want: tuple[str, str]) -> None:
    assert template(message) == want


def test_a_log_only_topology_gets_a_verdict_from_its_logs() -> None:
    result = run_shadow(load_topology(LOG_ONLY), port_engine="local")
    assert not result.states and all(s.keys == 0 for s in result.streams)
    (logs,) = result.logs
    assert logs.component == "word_log" and logs.keys == 7 and logs.equal
    assert logs.legacy_emits == logs.port_emits == 40
    verdict = result.verdict
    assert (verdict.word, verdict.exit_code) == ("SAFE TO SWITCH", 0)
    assert "compared by component logs only, of word_log" in verdict.reason
    assert result.to_dict()["logs"][0]["keys"] == 7
    assert "id='logs'" in render_html(result)


def test_a_port_that_logs_otherwise_differs_by_its_logs() -> None:
    port = load_topology(LOG_ONLY, overrides={"logs.bug": "cat"})
    result = run_shadow(load_topology(LOG_ONLY), port_engine="local", port_graph=port)
    (logs,) = result.logs
    (d,) = logs.divergences
    assert d.cause == PORT_DIFFERENCE and "cat" in d.key
    verdict = result.verdict
    assert (verdict.word, verdict.exit_code) == ("PORT DIFFERS", 1)
    assert "compared by component logs only" in verdict.reason


def test_logs_are_not_compared_when_anything_else_is() -> None:
    result = run_shadow(load_topology(CRASH), port_engine="local")
    assert result.logs == []


def test_no_output_no_state_and_no_log_is_still_nothing_compared() -> None:
    done = CliRunner().invoke(shadow_command, [str(LOG_ONLY), "--port-engine", "local",
                                               "--json", "-o", "logs.quiet=true"])
    assert done.exit_code == 3, done.output
    doc: dict[str, Any] = json.loads(done.output)
    assert doc["verdict"]["verdict"] == "NOTHING COMPARED" and doc["logs"] == []


@pytest.mark.spark
def test_a_non_leaf_stream_and_logs_with_the_port_on_spark(spark: Any, redis_url: str) -> None:
    result = run_shadow(load_topology(CRASH), port_engine="spark", spark=spark,
                        redis_url=redis_url, namespace="t-streams-inner", results=INNER,
                        batch_max_tuples=20)
    words = next(s for s in result.streams if s.label == "words:default")
    assert words.keys == 7 and words.equal and words.port_emits == 40
    logs = run_shadow(load_topology(LOG_ONLY), port_engine="spark", spark=spark,
                      redis_url=redis_url, namespace="t-streams-logs", batch_max_tuples=20)
    assert logs.logs and logs.logs[0].keys == 7 and logs.verdict.exit_code == 0, logs.verdict.line
