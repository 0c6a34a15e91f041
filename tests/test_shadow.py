"""Shadow runs (stormshift/shadow): comparison logic, reports, the command, and real shadows.

Unit tier: result modes, inference, tolerance, divergence kinds and causes on
hand-written emits; shadows with the port on the local engine (``--port-engine
local``: no JVM); the HTML report rendered by a real headless Chromium.
Spark tier (two Spark runs): adclicks agrees with the legacy; Storm failures
on the legacy side show as classified double counts; a port with one bolt
changed is reported with exactly the keys the change affects.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rich.console import Console
from support.adclicks_port import (
    ADCLICKS,
    EVENTS,
    REPO,
    SMALL,
    changed_port_shadow,
    oracle,
    ported_adclicks,
    rounded_advertisers,
)
from support.browser import render_dom

from stormshift.cli.shadow import shadow_command
from stormshift.shadow import (
    DivergenceKind,
    ResultMode,
    ResultSpec,
    Tolerance,
    compare_runs,
    compare_stream,
    result_specs,
    run_shadow,
    write_html,
)
from stormshift.shadow.classify import PORT_DIFFERENCE, REPLAY_DOUBLE_COUNT
from stormshift.shadow.faultspec import parse_faults
from stormshift.shadow.inputs import InputSpec, parse_input
from stormshift.shadow.report_sections import KEY_CHARTS
from stormshift.shadow.report_text import print_report
from stormshift.topology.loader import load_topology

#: fail client_spent_bolt's tuples 10-12 after processing: the spout replays them, and both
#: leaf bolts count those lines again (chosen so some of them carry a cost)
FAULTS = "fail:client_spent_bolt@10-12+200"


def spec(mode: ResultMode, key: tuple[str, ...] = ("k",), values: tuple[str, ...] = ("v",),
         fields: tuple[str, ...] = ("k", "v"), event_time: str | None = None) -> ResultSpec:
    return ResultSpec("bolt", "default", fields, mode, key, values, event_time)


# -- result modes and inference -------------------------------------------------
def test_inference_latest_for_fields_grouping_documented_in_spec() -> None:
    graph = load_topology(ADCLICKS, overrides=SMALL)
    specs = {s.label: s for s in result_specs(graph)}
    assert sorted(specs) == [  # and the event-time reports, declared in the topology
        "ads_ctr_bolt:default", "budget_alert_bolt:default", "client_spent_bolt:default",
        "daily_spend_bolt:default", "minute_ctr_bolt:default",
        "user_sessions_report_bolt:default"]
    assert specs["minute_ctr_bolt:default"].key == ("ad_id", "minute")
    spend = specs["client_spent_bolt:default"]
    assert (spend.mode, spend.key, spend.values, spend.inferred) == (
        ResultMode.LATEST, ("advertiser_id",), ("spend",), True)
    assert "fields(advertiser_id)" in spend.describe()


def test_inference_set_without_fields_grouping_and_declared_spec_wins() -> None:
    graph = load_topology(REPO / "tests" / "fixtures" / "topologies" / "wordcount",
                          overrides={"shadow.results": {}})
    inferred = {s.label: s.mode for s in result_specs(graph)}
    declared = {s.label: s for s in result_specs(graph, {"shadow.results": {
        label: {"mode": "sum", "key": []} for label in inferred}})}
    assert all(s.mode is ResultMode.SUM and not s.inferred for s in declared.values())
    assert set(inferred) == set(declared)


def test_unknown_leaf_stream_or_mode_is_a_clear_error() -> None:
    from stormshift.errors import StormshiftError

    graph = load_topology(ADCLICKS, overrides=SMALL)
    with pytest.raises(StormshiftError, match="no stream of the topology.*ads_ctr_bolt:default"):
        result_specs(graph, {"shadow.results": {"nope:default": {}}})
    # a stream some bolt reads is compared too (through a tap, ``shadow/tap.py``)
    inner = [s for s in result_specs(graph, {"shadow.results": {"parse_bolt:default": {}}})
             if not s.leaf]
    assert [s.label for s in inner] == ["parse_bolt:default"]
    with pytest.raises(StormshiftError, match="mode 'avg' is not one of"):
        result_specs(graph, {"shadow.results": {"ads_ctr_bolt": {"mode": "avg"}}})
    with pytest.raises(StormshiftError, match=r"\['cost'\] not among"):
        result_specs(graph, {"shadow.results": {"ads_ctr_bolt": {"key": ["cost"]}}})


# -- comparison ------------------------------------------------------------------
def test_latest_per_key_equal_when_final_values_agree_whatever_the_path() -> None:
    legacy = [["a", 1], ["b", 1], ["a", 2]]
    port = [["b", 1], ["a", 2]]  # fewer intermediate emits: the result is the last per key
    out = compare_stream(spec(ResultMode.LATEST), legacy, port)
    assert out.equal and (out.same, out.keys) == (2, 2)


def test_divergence_kinds_missing_extra_value() -> None:
    legacy = [["a", 1], ["b", 5], ["c", 7]]
    port = [["a", 1], ["b", 6], ["d", 9]]
    out = compare_stream(spec(ResultMode.LATEST), legacy, port)
    kinds = {d.key: d.kind for d in out.divergences}
    assert kinds == {"b": DivergenceKind.VALUE_DIFFERS, "c": DivergenceKind.MISSING_KEY,
                     "d": DivergenceKind.EXTRA_KEY}
    assert (out.same, out.different, out.missing_right, out.missing_left) == (1, 1, 1, 1)
    b = next(d for d in out.divergences if d.key == "b")
    assert (b.legacy, b.port, b.fields) == ([5], [6], ("v",))
    stats = out.fields[0]
    assert (stats.compared, stats.different, stats.max_delta, stats.min_delta) == (2, 1, 1, 0)


def test_sum_mode_count_differs_when_a_key_was_counted_twice() -> None:
    legacy = [["a", 2], ["b", 3], ["a", 2], ["a", 2]]
    port = [["a", 2], ["b", 3], ["a", 2]]
    out = compare_stream(spec(ResultMode.SUM), legacy, port)
    (d,) = out.divergences
    assert (d.key, d.kind, d.legacy, d.port, d.legacy_count, d.port_count) == (
        "a", DivergenceKind.COUNT_DIFFERS, [6], [4], 3, 2)
    assert d.position == 3  # the third "a" of the legacy: where the sides parted


def test_set_mode_multiplicity_and_ordered_list() -> None:
    s = spec(ResultMode.SET, key=(), values=("k", "v"))
    out = compare_stream(s, [["x", 1], ["x", 1], ["y", 2]], [["y", 2], ["x", 1]])
    (d,) = out.divergences
    assert (d.kind, d.legacy_count, d.port_count) == (DivergenceKind.COUNT_DIFFERS, 2, 1)
    ordered = spec(ResultMode.LIST, key=(), values=("k", "v"))
    out = compare_stream(ordered, [["x", 1], ["y", 2]], [["y", 2], ["x", 1]])
    assert [d.kind for d in out.divergences] == [DivergenceKind.VALUE_DIFFERS] * 2
    keyed = spec(ResultMode.LIST, key=("k",), values=("v",))
    out = compare_stream(keyed, [["x", 1], ["y", 2], ["x", 3]], [["y", 2], ["x", 1], ["x", 3]])
    assert out.equal  # per-key order kept; order across keys is not compared


def test_float_tolerance_absolute_and_relative() -> None:
    legacy, port = [["a", 1.0], ["b", 1000.0]], [["a", 1.004], ["b", 1000.9]]
    assert len(compare_stream(spec(ResultMode.LATEST), legacy, port).divergences) == 2
    assert compare_stream(spec(ResultMode.LATEST), legacy, port, Tolerance(abs=1.0)).equal
    relative = compare_stream(spec(ResultMode.LATEST), legacy, port, Tolerance(rel=0.001))
    # 0.4 % off; b is 0.09 % off: within the tolerance, counted as rounding, not unequal
    assert [d.key for d in relative.divergences if not d.within_tolerance] == ["a"]
    assert [d.key for d in relative.divergences if d.within_tolerance] == ["b"]
    assert Tolerance().rel == 1e-9 and Tolerance().describe() == "rel 1e-09"
    assert Tolerance().equal([1, "x"], (1, "x")) is False  # types compared after normalizing
    assert compare_stream(spec(ResultMode.LATEST), [["a", [1, 2]]], [("a", (1, 2))]).equal


def test_event_time_of_first_divergence() -> None:
    s = spec(ResultMode.LATEST, values=("v", "ts"), fields=("k", "v", "ts"), event_time="ts")
    legacy = [["a", 1, 100], ["a", 2, 200], ["a", 3, 300]]
    port = [["a", 1, 100], ["a", 5, 200], ["a", 6, 300]]
    (d,) = compare_stream(s, legacy, port).divergences
    assert (d.position, d.event_time) == (1, 200)


# -- inputs and fault specs ---------------------------------------------------------
def test_parse_input_and_faults() -> None:
    assert parse_input(None) == InputSpec()
    assert parse_input("redis:clicks:1700-0-1800-5") == InputSpec("redis", "clicks", "1700-0",
                                                                   "1800-5")
    assert parse_input("redis:a:b") == InputSpec("redis", "a:b")
    assert parse_input("jsonl:/data/x").target == "/data/x"
    crash, fail = parse_faults("crash:count[1]@50, fail:split@3+10-12")
    assert (crash.component, crash.task_index, crash.at_tuple) == ("count", 1, 50)
    assert sorted(fail.indexes) == [3, 10, 11, 12] and not fail.before
    from stormshift.errors import StormshiftError

    for bad in ("kafka:x", "redis:"):
        with pytest.raises(StormshiftError, match="--input"):
            parse_input(bad)
    with pytest.raises(StormshiftError, match="fail:BOLT@N"):
        parse_faults("explode:count@1")


def test_jsonl_input_feeds_both_sides(tmp_path: Path) -> None:
    lines = list(oracle().generated_lines(7, 500))
    (tmp_path / "day.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    graph = load_topology(ADCLICKS, overrides=SMALL)
    result = run_shadow(graph, input=f"jsonl:{tmp_path}", port_engine="local")
    assert result.equal and result.legacy["ad_log_spout"].tuples_out == 500
    assert "JSON lines" in result.input


@pytest.mark.redis
def test_redis_range_input_is_copied_once_and_read_by_both_sides(redis_url: str,
                                                                  namespace: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    source = f"{namespace}:adlog"
    for i, line in enumerate(oracle().generated_lines(7, 300)):
        client.xadd(source, {"payload": line}, id=f"{1000 + i}-0")
    graph = load_topology(ADCLICKS, overrides=SMALL)
    result = run_shadow(graph, input=f"redis:{source}:1100-0-1199-0", port_engine="local",
                        redis_url=redis_url, namespace=namespace)
    assert result.equal and result.legacy["ad_log_spout"].tuples_out == 100
    client.xadd(source, {"payload": "later"})  # the source moves on; the copy does not
    copy = client.xrange(f"shadow-input:{{{namespace}}}:{source}")
    assert [c[0] for c in (copy[0], copy[-1])] == [b"1100-0", b"1199-0"] and len(copy) == 100


# -- shadows with the port on the local engine (no Spark) -----------------------------
def test_local_dry_run_with_storm_failures_classifies_double_count() -> None:
    graph = load_topology(ADCLICKS, overrides=SMALL)
    result = run_shadow(graph, legacy_faults=FAULTS, port_engine="local")
    # Storm's double count is not the port's: safe to switch, and the line says why
    assert result.exit_code == 0 and result.baseline is not None
    assert result.verdict.line.startswith("SAFE TO SWITCH: 0 port differences")
    assert "Storm replay double count" in result.verdict.line
    # the replayed lines reach the event-time reports too: per-minute impressions, a
    # user's session events (its final state nests them: {start: [end, events, clicks]})
    assert set(result.causes()) == {REPLAY_DOUBLE_COUNT}
    diverged = {s.label for s in result.streams if s.divergences}
    assert {"ads_ctr_bolt:default", "minute_ctr_bolt:default",
            "user_sessions_report_bolt:default"} <= diverged
    for stream in result.streams:
        for d in stream.divergences:
            assert d.kind is DivergenceKind.VALUE_DIFFERS
            assert all(a >= b for a, b in zip(d.legacy, d.port, strict=True)  # legacy counted more
                       if not isinstance(a, str))  # (a CTR text is not a count)


def test_local_dry_run_of_changed_bolt_reports_the_right_keys() -> None:
    result = changed_port_shadow()
    by_stream = {s.label: s for s in result.streams}
    assert by_stream["ads_ctr_bolt:default"].equal
    spend = by_stream["client_spent_bolt:default"]
    assert {d.key for d in spend.divergences} == rounded_advertisers() != set()
    assert {d.cause for d in spend.divergences} == {PORT_DIFFERENCE}
    assert all(d.port[0] < d.legacy[0] for d in spend.divergences)
    console = Console(width=80, record=True)
    print_report(result, console)
    text = console.export_text()
    assert "PORT DIFFERS" in text and max(len(line) for line in text.splitlines()) <= 80


def test_command_exit_codes_and_json(tmp_path: Path) -> None:
    runner = CliRunner()
    # exit codes and the JSON: the spend stream is enough (the windowed reports cost 3/4)
    base = [str(ADCLICKS), "-o", f"adclicks.events={EVENTS}", "-o", "adclicks.windows=false",
            "--port-engine", "local"]
    equal = runner.invoke(shadow_command, base, catch_exceptions=False)
    assert equal.exit_code == 0, equal.output
    assert "SAFE TO SWITCH: 0 port differences" in equal.output
    differ = runner.invoke(shadow_command, [*base, "--port", str(ported_adclicks()), "--json"],
                           catch_exceptions=False)
    assert differ.exit_code == 1
    doc = json.loads(differ.output)
    spend = next(s for s in doc["streams"] if s["stream"] == "client_spent_bolt:default")
    assert spend["different"] == len(rounded_advertisers())
    bad = runner.invoke(shadow_command, [*base, "-o", 'shadow.results={"nope": {}}'])
    assert bad.exit_code == 2 and "no stream of the topology" in bad.output
    missing = runner.invoke(shadow_command, [*base, "--input", f"jsonl:{tmp_path / 'none'}"])
    assert missing.exit_code == 2 and "not a directory" in missing.output


# -- the HTML report in a real browser ------------------------------------------------
CORPUS = Path(__file__).parent / "fixtures" / "corpus"
def test_html_report_renders_figures_in_headless_chromium(tmp_path: Path) -> None:
    from html.parser import HTMLParser

    graph = load_topology(ADCLICKS, overrides=SMALL)
    port = load_topology(ported_adclicks(), overrides=SMALL)
    result = run_shadow(graph, port_graph=port, legacy_faults=FAULTS, port_engine="local")
    report = write_html(result, tmp_path / "report.html")
    html = report.read_text(encoding="utf-8")
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")  # no external asset
    assert "https://" not in html and "<link" not in html and " src=" not in html
    dom = render_dom(report, tmp_path / "profile")

    class Figures(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.tables: list[str] = []
            self.charts: list[dict[str, str | None]] = []
            self.key_charts: list[dict[str, str | None]] = []
            self.sections: dict[str, list[dict[str, str | None]]] = {}
            self.bars = 0
            self.rows = 0
            self.state_rows = 0
            self.lines: list[str] = []
            self.in_table = ""
            self.verdict: dict[str, str | None] = {}

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            a = dict(attrs)
            if tag == "table":
                self.tables.append(a.get("class") or "")
                self.in_table = a.get("class") or ""
            elif tag == "svg" and a.get("class") == "divergence-chart":
                self.charts.append(a)
            elif tag == "svg" and a.get("class") == "key-chart":
                self.key_charts.append(a)
            elif tag == "section":
                self.sections.setdefault(a.get("class") or "", []).append(a)
            elif tag == "rect" and a.get("class") == "bar":
                self.bars += 1
            elif tag == "polyline" and a.get("class") in ("legacy", "port"):
                self.lines.append(a.get("class") or "")
            elif tag == "tr" and self.in_table == "divergences":
                self.rows += 1
            elif tag == "tr" and self.in_table == "state-divergences":
                self.state_rows += 1
            elif a.get("id") == "verdict":
                self.verdict = a

    figures = Figures()
    figures.feed(dom)
    divergent = sum(len(s.divergences) for s in result.streams)
    assert figures.verdict.get("data-equal") == "false"
    assert figures.verdict.get("data-verdict") == "PORT DIFFERS"
    assert figures.verdict.get("data-exit-code") == "1"
    assert {"counts", "classes", "components", "fields", "divergences"} <= set(figures.tables)
    charted = [c.get("data-stream") for c in figures.charts]  # in the components' order
    assert sorted(charted) == sorted(s.label for s in result.streams)
    assert sum(int(c.get("data-divergences") or 0) for c in figures.charts) == divergent
    assert figures.bars > 0
    assert figures.rows == divergent + sum(1 for s in result.streams if s.divergences)  # + heads
    assert REPLAY_DOUBLE_COUNT in dom and PORT_DIFFERENCE in dom
    for adv in sorted(rounded_advertisers())[:3]:
        assert f">{adv}<" in dom
    # the drill-down: one section per component holding its leaf streams and state entries
    # (every bolt with a leaf stream or a compared state entry: the event-time reports' too;
    # the windowed bolts' own windowing_state is the engines' bookkeeping: shadow.state ignores it)
    components = {c.get("data-component") for c in figures.sections["component"]}
    assert components == {"ads_ctr_bolt", "client_spent_bolt", "minute_ctr_bolt",
                          "daily_spend_bolt", "budget_alert_bolt", "user_sessions_report_bolt"}
    assert sorted(s.get("data-stream") for s in figures.sections["stream"]) == sorted(
        s.label for s in result.streams)
    # final state: its counts table, one section per entry, the divergent keys' rows
    assert {"state-counts", "state-divergences"} <= set(figures.tables)
    assert sorted(s.get("data-state") for s in figures.sections["state"]) == sorted(
        s.label for s in result.states)
    state_divergent = sum(len(s.divergences) for s in result.states)
    assert state_divergent > 0
    assert figures.state_rows == state_divergent + sum(1 for s in result.states if s.divergences)
    # per key over time: the largest divergent keys of each stream, both sides drawn
    want = [(s.label, d.key) for s in result.streams for d in s.top(KEY_CHARTS)]
    assert [(c.get("data-stream"), c.get("data-key")) for c in figures.key_charts] == want
    assert figures.lines.count("legacy") == figures.lines.count("port") == len(want)


# -- Spark: the real port ---------------------------------------------------------------
@pytest.fixture(scope="module")
def adclicks_shadow(spark: Any, redis_url: str) -> Any:
    """adclicks (1500 events) with Storm failures on the legacy side, port on Spark: gives
    the faulted legacy, the fault-free baseline and the port in one Spark run."""
    import redis

    namespace = f"t-shadow-{uuid.uuid4().hex[:10]}"
    graph = load_topology(ADCLICKS, overrides=SMALL)
    try:
        yield graph, run_shadow(graph, legacy_faults=FAULTS, spark=spark, redis_url=redis_url,
                                namespace=namespace, batch_max_tuples=750)
    finally:
        client = redis.Redis.from_url(redis_url)
        for key in client.scan_iter(match=f"*{namespace}*", count=1000):
            client.delete(key)


@pytest.mark.spark
@pytest.mark.redis
def test_adclicks_port_on_spark_agrees_with_storm(adclicks_shadow: Any) -> None:
    graph, result = adclicks_shadow
    agreed = compare_runs(graph, result.baseline, result.port)
    assert agreed.equal and agreed.exit_code == 0
    # the event-time reports agree too, key by key (no advertiser-day reaches the $250 budget
    # in 1,500 events: no alert on either side)
    assert {s.label: s.keys > 0 for s in agreed.streams} == {
        "ads_ctr_bolt:default": True, "client_spent_bolt:default": True,
        "budget_alert_bolt:default": False, "daily_spend_bolt:default": True,
        "minute_ctr_bolt:default": True, "user_sessions_report_bolt:default": True}
    # the final state too: the local engine's instances vs the Spark tasks' last snapshots
    legacy = [s for s in agreed.states if s.label.startswith(("ads_ctr_bolt.", "client_spent"))]
    assert [(s.label, s.legacy_source, s.port_source, s.keys > 0) for s in legacy] == [
        (f"{c}.{e}", "attribute", "attribute", True)
        for c, e in [("ads_ctr_bolt", "clicks"), ("ads_ctr_bolt", "impressions"),
                     ("ads_ctr_bolt", "spend"), ("client_spent_bolt", "spend")]]
    want = oracle().compute(oracle().generated_lines(7, EVENTS))
    assert {a: v[1] for a, v in result.port.latest("client_spent_bolt").items()} == (
        want.spend_by_advertiser)


@pytest.mark.spark
@pytest.mark.redis
def test_storm_failures_on_legacy_show_as_double_count(adclicks_shadow: Any) -> None:
    _, result = adclicks_shadow
    assert result.exit_code == 0  # Storm's double count, not the port's: safe to switch
    assert result.verdict.word == "SAFE TO SWITCH" and "Storm replay" in result.verdict.reason
    assert set(result.causes()) == {REPLAY_DOUBLE_COUNT}
    assert result.legacy["client_spent_bolt"].duplicates > 0
    for stream in result.streams:
        for d in stream.divergences:
            assert all(a >= b for a, b in zip(d.legacy, d.port, strict=True)
                       if not isinstance(a, str))  # (a per-minute CTR text is not a count)


@pytest.mark.spark
@pytest.mark.redis
def test_changed_bolt_on_spark_disagrees_with_the_right_keys(
    spark: Any, redis_url: str, namespace: str, tmp_path: Path
) -> None:
    report = tmp_path / "shadow.html"
    done = CliRunner().invoke(shadow_command, [
        str(ADCLICKS), "-o", f"adclicks.events={EVENTS}", "--port", str(ported_adclicks()),
        "--redis", redis_url, "--namespace", namespace, "--batch-max-tuples", "750",
        "--report", str(report), "--json",
    ], catch_exceptions=False)
    assert done.exit_code == 1, done.output
    doc = json.loads(done.output)
    streams = {s["stream"]: s for s in doc["streams"]}
    assert streams["ads_ctr_bolt:default"]["different"] == 0
    spend = streams["client_spent_bolt:default"]
    assert {d["key"] for d in spend["divergences"]} == rounded_advertisers()
    assert {d["cause"] for d in spend["divergences"]} == {PORT_DIFFERENCE}
    assert report.is_file() and "client_spent_bolt:default" in report.read_text(encoding="utf-8")


def test_html_report_verdict_classes_and_tolerance_in_headless_chromium(tmp_path: Path) -> None:
    """The verdict line, each class of difference with its example key and check's rule and
    place, and the float tolerance, as the browser shows them (corpus: wall_clock)."""
    from html.parser import HTMLParser

    from stormshift.shadow.findings import analyse

    path = CORPUS / "wall_clock"
    result = run_shadow(load_topology(path), port_engine="local", findings=analyse(path))
    dom = render_dom(write_html(result, tmp_path / "report.html"), tmp_path / "profile")

    class Page(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.verdict: dict[str, str | None] = {}
            self.where: list[str] = []
            self.rows: list[list[str]] = []
            self.texts: dict[str, str] = {}

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            a = dict(attrs)
            if a.get("id") in ("verdict", "tolerance"):
                self.where.append(str(a["id"]))
                self.verdict = a if a["id"] == "verdict" else self.verdict
            elif tag == "table":
                self.where.append(f"table.{a.get('class')}")
            elif tag == "tr" and self.where and self.where[-1] == "table.classes":
                self.rows.append([])

        def handle_endtag(self, tag: str) -> None:
            if tag in ("p", "span", "table") and self.where and (
                    tag == "table") == self.where[-1].startswith("table."):
                self.where.pop()

        def handle_data(self, data: str) -> None:
            if not self.where:
                return
            self.texts[self.where[-1]] = self.texts.get(self.where[-1], "") + data
            if self.where[-1] == "table.classes" and self.rows:
                self.rows[-1].append(data)

    page = Page()
    page.feed(dom)
    assert page.verdict.get("data-verdict") == "SAFE TO SWITCH"
    assert page.verdict.get("data-exit-code") == "0"
    assert page.texts["verdict"].startswith("SAFE TO SWITCH: 0 port differences")
    assert "rel 1e-09" in page.texts["tolerance"] and "rounding" in page.texts["tolerance"]
    body = [r for r in page.rows if r and r[0] != "class"]
    assert [r[0] for r in body] == ["nondeterministic"]
    (row,) = body
    assert row[2] == "14" and row[3].endswith("in seen.last_seen")
    assert row[4] == "wall-clock at src/bolts/seen.py:18"
