"""Output a person can read at 80 columns and piped: no number or name split across lines.

Every table goes through ``stormshift/table_fit.py`` (whole, or one record per block);
``inspect`` draws the graph (``topology/graph_views.py``) in lines of at most 80 characters,
as DOT, and as an SVG checked in a real headless Chromium.
"""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from support.browser import render_dom

from stormshift.cli import cli
from stormshift.display import console

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])")


def numbers(text: str) -> Counter[str]:
    """Every number a reader sees (``p99``'s 99 is part of a name, not a number)."""
    return Counter(NUMBER.findall(text))


def json_ints(doc: Any) -> set[int]:
    if isinstance(doc, bool):
        return set()
    if isinstance(doc, int):
        return {doc}
    if isinstance(doc, dict):
        return set().union(*(json_ints(v) for v in doc.values())) if doc else set()
    if isinstance(doc, list):
        return set().union(*(json_ints(v) for v in doc)) if doc else set()
    return set()


def printed(width: int, *renderables: Any) -> str:
    out = io.StringIO()
    c = console(file=out, width=width)
    for r in renderables:
        c.print(r)
    return out.getvalue()


def wide_numbers_table() -> Any:
    from rich.table import Table

    table = Table(title="adclicks on spark: finished, 18000 spout tuples, 12.34s")
    for header in ("component", "kind", "par", "tuples in", "tuples out", "acked", "failed",
                   "dead-lettered", "p50 ms", "p99 ms"):
        table.add_column(header, justify="right", overflow="fold")
    table.add_row("user_sessions_report_bolt", "bolt", "2", "18000", "123456789", "18000",
                  "0", "7", "0.125", "12.500")
    table.add_row("ad_log_spout", "spout", "1", "0", "18000", "18000", "0", "0", "-", "-")
    return table


def test_a_table_too_wide_for_80_columns_prints_one_record_per_block() -> None:
    narrow = printed(80, wide_numbers_table())
    wide = printed(400, wide_numbers_table())
    assert numbers(narrow) == numbers(wide)  # no number split, none lost
    assert "  tuples out:    123456789" in narrow and "user_sessions_report_bolt" in narrow
    assert max(len(line) for line in narrow.splitlines()) <= 80


def test_a_table_that_fits_stays_a_table_and_never_wraps_a_cell() -> None:
    from rich.table import Table

    def table() -> Table:
        t = Table(title="a title much longer than the narrow table below it, with 18000 in it")
        t.add_column("component", overflow="fold")
        t.add_column("n", justify="right", overflow="fold")
        t.add_row("parse_bolt", "18000")
        return t

    out = printed(80, table())
    assert "│ parse_bolt │ 18000 │" in out
    assert out.splitlines()[0].startswith("a title much longer") and "18000 in it" in out
    assert numbers(out) == numbers(printed(400, table()))


def test_the_run_summary_at_80_columns_keeps_every_number_whole() -> None:
    from stormshift.engines.local import LocalEngine
    from stormshift.runner import print_summary
    from stormshift.topology.loader import load_topology

    graph = load_topology(str(EXAMPLES / "wordcount"))
    summary = LocalEngine(graph).run(max_tuples=18000)
    narrow, wide = io.StringIO(), io.StringIO()
    print_summary(graph, summary, console(file=narrow, width=80))
    print_summary(graph, summary, console(file=wide, width=1000))
    assert numbers(narrow.getvalue()) == numbers(wide.getvalue())
    assert "18000" in narrow.getvalue() or "18,000" in narrow.getvalue()


def test_inspect_adclicks_is_a_graph_in_at_most_80_lines_of_80_characters() -> None:
    done = CliRunner().invoke(cli, ["inspect", str(EXAMPLES / "adclicks")],
                              env={"COLUMNS": "80"})
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert len(lines) <= 80 and max(len(line) for line in lines) <= 80, done.output
    as_json = json.loads(CliRunner().invoke(cli, ["inspect", str(EXAMPLES / "adclicks"),
                                                  "--json"]).output)
    for c in as_json["components"]:
        assert any(line.startswith(f"{c['name']}  {c['kind']} x{c['par']}") for line in lines)
        for s in c["streams"]:
            assert all(f in done.output for f in s["fields"])  # no name split by the wrap
    assert "  <- parse_bolt:default fields(ad_id)" in lines
    table = CliRunner().invoke(cli, ["inspect", str(EXAMPLES / "adclicks"), "--format",
                                     "table"], env={"COLUMNS": "80"})
    assert table.exit_code == 0 and "parse_bolt" in table.output
    wide = CliRunner().invoke(cli, ["inspect", str(EXAMPLES / "adclicks"), "--format",
                                    "table"], env={"COLUMNS": "1000"})
    assert numbers(table.output) == numbers(wide.output)  # a long value is whole on its line


def test_inspect_dot_has_a_node_per_component_and_an_edge_per_input() -> None:
    done = CliRunner().invoke(cli, ["inspect", str(EXAMPLES / "adclicks"), "--format", "dot"])
    assert done.exit_code == 0
    data = json.loads(CliRunner().invoke(cli, ["inspect", str(EXAMPLES / "adclicks"),
                                               "--json"]).output)
    edges = re.findall(r'^  "([^"]+)" -> "([^"]+)"', done.output, re.MULTILINE)
    assert sorted(edges) == sorted((i["source"], c["name"]) for c in data["components"]
                                   for i in c["inputs"])
    assert done.output.startswith('digraph "adclicks" {') and done.output.rstrip().endswith("}")


def test_inspect_svg_renders_every_component_in_headless_chromium(tmp_path: Path) -> None:
    done = CliRunner().invoke(cli, ["inspect", str(EXAMPLES / "adclicks"), "--format", "svg"])
    assert done.exit_code == 0
    svg = tmp_path / "adclicks.svg"
    svg.write_text(done.output, encoding="utf-8")
    assert "<script" not in done.output and "href=\"http" not in done.output
    dom = render_dom(svg, tmp_path / "profile")
    names = re.findall(r'<g class="node (?:spout|bolt)" data-name="([^"]+)"', dom)
    data = json.loads(CliRunner().invoke(cli, ["inspect", str(EXAMPLES / "adclicks"),
                                               "--json"]).output)
    assert sorted(names) == sorted(c["name"] for c in data["components"])
    assert dom.count('<g class="edge">') == sum(len(c["inputs"]) for c in data["components"])


@pytest.mark.redis
def test_top_once_piped_at_80_columns_keeps_every_number_whole(redis_url: str,
                                                                namespace: str) -> None:
    import redis

    from stormshift.metrics.board import Board
    from stormshift.metrics.records import write_board

    board = Board("adclicks", "spark")
    board.task("ad_log_spout", 3).kind = "spout"
    board.add("ad_log_spout", 3, tuples_out=18000)
    board.add("user_sessions_report_bolt", 20, tuples_in=123456, tuples_out=123456,
              acks=123450, dead_lettered=6)
    board.task("user_sessions_report_bolt", 20).state_bytes = 9876543
    board.batch(2345.0, 18000, 1_700_000_000_000)
    write_board(redis.Redis.from_url(redis_url), namespace, board)
    runner = CliRunner()
    narrow = runner.invoke(cli, ["top", namespace, "--once", "--redis", redis_url],
                           env={"COLUMNS": "80"})
    as_json = runner.invoke(cli, ["top", namespace, "--json", "--redis", redis_url])
    assert narrow.exit_code == 0, narrow.output
    doc = json.loads(as_json.output)  # one document
    seen = numbers(narrow.output)
    for n in (18000, 123456, 123450):
        assert n in json_ints(doc)
        assert str(n) in seen or f"{n:,}" in seen, narrow.output
    assert "  in:            123,456" in narrow.output  # one record per block


def test_sink_with_the_local_engine_says_it_is_not_used(tmp_path: Path) -> None:
    done = CliRunner().invoke(cli, ["run", str(EXAMPLES / "wordcount"), "--engine", "local",
                                    "--max-tuples", "50", "--sink", f"jsonl:{tmp_path}",
                                    "--log-file", str(tmp_path / "run.log")])
    assert done.exit_code == 0, done.output
    assert "warning: --sink not used: the local engine keeps leaf emits in memory" in done.output
    assert not any(tmp_path.glob("*.jsonl"))  # and it wrote nothing there


@pytest.mark.parametrize("argv", [
    ["check", str(EXAMPLES / "adclicks"), "--no-run"],
    ["check", str(Path(__file__).parent / "fixtures" / "check" / "writes"), "--no-run"],
    ["shadow", str(EXAMPLES / "adclicks"), "--port-engine", "local", "-o",
     "adclicks.events=3000"],
    ["inspect", str(EXAMPLES / "adclicks")],
], ids=["check-adclicks", "check-writes", "shadow-adclicks", "inspect-adclicks"])
def test_every_number_of_a_commands_json_is_whole_in_its_80_column_text(argv: list[str]) -> None:
    """Each integer the ``--json`` document holds that the wide text shows is in the
    80-column text whole: no wrap split it."""
    runner = CliRunner()
    as_json = runner.invoke(cli, [*argv, "--json"])
    narrow = runner.invoke(cli, argv, env={"COLUMNS": "80"})
    wide = runner.invoke(cli, argv, env={"COLUMNS": "1000"})
    assert as_json.exit_code == narrow.exit_code == wide.exit_code, narrow.output
    shown_wide, shown_narrow = numbers(wide.output), numbers(narrow.output)
    checked = 0
    for n in sorted(json_ints(json.loads(as_json.output))):
        for form in {str(n), f"{n:,}"}:
            if n >= 10 and form in shown_wide:
                checked += 1
                assert form in shown_narrow, f"{form} split at 80 columns:\n{narrow.output}"
    assert checked, "the text shows none of the document's numbers: nothing was checked"


@pytest.fixture(scope="module")
def adclicks_run(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Any:
    """One real Spark run of adclicks (malformed lines among its events: dead letters) into a
    namespace of its own on the suite's Redis; the read-only commands below look at it."""
    import subprocess
    import sys
    import uuid

    import redis

    from stormshift.state.commit import reset_namespace

    root = tmp_path_factory.mktemp("adclicks-run")
    ns = f"t-width-{uuid.uuid4().hex[:8]}"
    done = subprocess.run(
        [sys.executable, "-m", "stormshift", "run", str(EXAMPLES / "adclicks"), "--redis",
         redis_url, "--namespace", ns, "--checkpoint", str(root / "ck"), "-o",
         "adclicks.events=3000", "-o", "adclicks.malformed_rate=0.01", "--until-done", "--log-file", str(root / "run.log")],
        capture_output=True, text=True, timeout=600, cwd=root, check=False)
    assert done.returncode in (0, 3), done.stdout + done.stderr
    yield ns, root
    reset_namespace(redis.Redis.from_url(redis_url), ns, keep_fences=False)


@pytest.mark.spark
@pytest.mark.parametrize("command", ["state-ls", "deadletter-ls", "plan", "ps"])
def test_every_number_of_a_read_commands_json_is_whole_in_its_80_column_text(
        command: str, adclicks_run: Any, redis_url: str) -> None:
    """The commands that read a real run's state (``state ls``, ``deadletter ls``, ``plan``,
    ``ps``): the same check as above, on what a Spark run of adclicks left in Redis."""
    ns, root = adclicks_run
    argv = {
        "state-ls": ["state", "ls", ns, "--redis", redis_url],
        "deadletter-ls": ["deadletter", "ls", "--namespace", ns, "--redis", redis_url],
        "plan": ["plan", str(EXAMPLES / "adclicks"), "--namespace", ns, "--checkpoint",
                 str(root / "ck"), "--redis", redis_url, "-o", "adclicks.events=3000", "-o",
                 "adclicks.malformed_rate=0.01"],
        "ps": ["ps", "--redis", redis_url],
    }[command]
    runner = CliRunner()
    as_json = runner.invoke(cli, [*argv, "--json"])
    narrow = runner.invoke(cli, argv, env={"COLUMNS": "80"})
    wide = runner.invoke(cli, argv, env={"COLUMNS": "1000"})
    assert as_json.exit_code == narrow.exit_code == wide.exit_code, narrow.output
    doc = json.loads(as_json.output)  # one document, whatever the command
    assert all(len(line) <= 80 for line in narrow.output.splitlines()), narrow.output
    shown_wide, shown_narrow = numbers(wide.output), numbers(narrow.output)
    for n in sorted(json_ints(doc)):
        for form in {str(n), f"{n:,}"}:
            if n >= 10 and form in shown_wide:
                assert form in shown_narrow, f"{form} split at 80 columns:\n{narrow.output}"
    if command == "state-ls":  # its counts are numbers of 10 and over: checked, not vacuous
        assert any(f in shown_narrow for n in json_ints(doc) if n >= 10
                   for f in (str(n), f"{n:,}")), narrow.output


def test_a_long_value_in_a_record_block_folds_after_commas_never_inside_a_number() -> None:
    from rich.text import Text

    from stormshift.table_fit import fold

    value = '["ad-0291",' + ",".join(f'"n":{n}' for n in range(1000, 1040)) + "]"
    lines = [t.plain for t in fold(Text(value), 50)]
    assert "".join(lines) == value and all(len(line) <= 50 for line in lines)
    assert all(any(f'"n":{n},' in line or f'"n":{n}]' in line for line in lines)
               for n in range(1000, 1040))
    assert [t.plain for t in fold(Text("x" * 70), 30)] == ["x" * 30, "x" * 30, "x" * 10]


def test_checks_summary_counts_exactly_the_places_shown_under_each_severity() -> None:
    """A rule with an error and two warnings: each severity has its own header, so the
    places under WARNING headers are the summary's warnings (it said 3 for 2 shown)."""
    from stormshift.check.report import CheckReport
    from stormshift.check.rules import Finding, Severity

    findings = [
        Finding("external-write", Severity.ERROR, "src/a.py", 3, "a", "requests.post in process()"),
        Finding("external-write", Severity.WARNING, "src/a.py", 9, "a", "open:w().write in process()"),
        Finding("external-write", Severity.WARNING, "src/b.py", 4, "b", "open:w().write in process()"),
        Finding("wall-clock", Severity.WARNING, "src/b.py", 7, "b", "time.time in process()"),
    ]
    report = CheckReport("t", "/p", findings, components=2)
    text = printed(80, report.render())
    headers: dict[str, int] = {}
    current = ""
    for line in text.splitlines():
        if line[:8].strip() in ("ERROR", "WARNING", "INFO"):
            current = line[:8].strip()
        elif line.startswith("  src/"):
            headers[current] = headers.get(current, 0) + 1
    assert headers == {"ERROR": 1, "WARNING": 3}, text
    assert "t: 1 error, 3 warnings, 0 info in 2 components" in text
    assert text.count("see  migrations_guide/check.md#external-write") == 1


@pytest.mark.redis
def test_ps_at_80_columns_is_whole_records_with_every_number_whole(redis_url: str) -> None:
    """``stormshift ps`` with a live run of a long namespace and checkpoint (as the shadow's
    own runs have): a table when it fits, else one record per block, never a line over 80
    (a run used to be one line of 180 characters)."""
    import uuid

    import redis

    from stormshift.state.lease import LeaseKeeper

    ns = f"t-ps-width-{uuid.uuid4().hex[:8]}-a-long-shadow-namespace"
    keeper = LeaseKeeper(redis.Redis.from_url(redis_url), ns, topology="wordcount_redis",
                         checkpoint="/tmp/stormshift-shadow-6guz0pyw/checkpoint-of-a-long-path")
    keeper.acquire()
    try:
        narrow = CliRunner().invoke(cli, ["ps", "--redis", redis_url], env={"COLUMNS": "80"})
        doc = json.loads(CliRunner().invoke(cli, ["ps", "--redis", redis_url, "--json"]).output)
    finally:
        keeper.release()
    assert narrow.exit_code == 0, narrow.output
    assert all(len(line) <= 80 for line in narrow.output.splitlines()), narrow.output
    (mine,) = [run for run in doc["runs"] if run["namespace"] == ns]
    assert f"pid {mine['pid']}" in narrow.output and ns in narrow.output
