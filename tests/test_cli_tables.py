"""What the commands print fits an 80-column terminal: cells wrap, nothing is cut."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rich.console import Console

from stormshift.cli.deadletter import letters_table
from stormshift.engines.summary import _COLUMNS, ComponentStats, RunSummary
from stormshift.runner import print_summary
from stormshift.state.deadletter import DeadLetter
from stormshift.topology.loader import load_topology
from stormshift.topology.render import render_graph

ROOT = Path(__file__).resolve().parents[1]
BOX = re.compile(r"[│┃┏┓┗┛┡┩└┘├┤┼┬┴╇╈╋━─┳┻\s]")


def render(*things: Any) -> list[str]:
    console = Console(width=80, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    for thing in things:
        console.print(thing)
    return console.export_text().splitlines()


def fits(lines: list[str]) -> None:
    assert lines
    too_wide = [line for line in lines if len(line) > 80]
    assert not too_wide, too_wide
    assert not any("…" in line for line in lines), "a cell was cut"
    assert all(line.rstrip()[-1:] in "┓┃┩│┤┘" for line in lines if line[:1] in "┏┃┡│├└"), \
        "a table wider than the console: its right edge was cropped"


def squeezed(lines: list[str]) -> str:
    """The text column by column with the table drawing and all whitespace gone, so the
    lines of a wrapped cell join again."""
    cols: dict[int, list[str]] = {}
    rest: list[str] = []
    for line in lines:
        if "│" in line or "┃" in line:
            for i, cell in enumerate(re.split(r"[│┃]", line)):
                cols.setdefault(i, []).append(cell)
        else:
            rest.append(line)
    return BOX.sub("", "".join(rest) + "".join("".join(c) for _, c in sorted(cols.items())))


def busy_summary() -> RunSummary:
    """Every counter non-zero and large, long component names."""
    stats = {}
    for i, name in enumerate(("a_spout_with_a_rather_long_name", "deserialize_and_validate_bolt",
                              "count_per_advertiser_bolt")):
        s = ComponentStats(name, "spout" if i == 0 else "bolt", 16)
        for column in _COLUMNS:
            setattr(s, column, 123_456_789 + i)
        stats[name] = s
    return RunSummary("a-topology-with-a-long-name", "spark", stats, elapsed_ms=12_345.0,
                      stop_reason="done", spout_tuples=123_456_789)


def test_summary_table_fits_80_columns_with_every_counter() -> None:
    table = busy_summary().table()
    lines = render(table)
    fits(lines)
    text = squeezed(lines)
    for name in busy_summary().components:
        assert name in text
    assert "123456789" in text and "dead-lettered" in text


def test_print_summary_fits_80_columns() -> None:
    graph = load_topology(str(ROOT / "examples" / "wordcount"))
    made = RunSummary.for_graph(graph, "local")
    made.outputs[("count_bolt", "default")] = [["a-word-" * 6, 10**12], ["b", 2]]
    console = Console(width=80, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    print_summary(graph, made, console)
    lines = console.export_text().splitlines()
    fits(lines)
    assert ("a-word-" * 6) in squeezed(lines)


def test_inspect_tables_fit_80_columns() -> None:
    graph = load_topology(str(ROOT / "examples" / "adclicks"))
    lines = render(render_graph(graph))
    fits(lines)
    assert "client_spent_bolt" in squeezed(lines)


def test_dead_letter_table_shows_the_whole_error_in_80_columns() -> None:
    error = ("ValueError: refusing 42: a multiple of 7 (at bolts/picky.py:12) -- and a long tail "
             "so that the reason needs several lines: " + "x" * 150)
    letter = DeadLetter(id="1732461234567-0", txid=3, component="picky_bolt", stream="default",
                        values=[42, "some value"], error=error, traceback="", source="number_spout", task=1,
                        reason="raised")
    lines = render(letters_table("picky", [letter]))
    fits(lines)
    text = squeezed(lines)
    assert BOX.sub("", error) in text
    assert '[42,"somevalue"]' in text  # the last column too: a table wider than the console is cropped
    assert "1732461234567-0" in "\n".join(lines)  # ids stay whole: `replay --id` takes them


def test_window_table_shows_lateness_per_windowed_bolt_in_80_columns() -> None:
    summary = busy_summary()
    assert summary.window_table() is None  # no windowed bolt: no table
    summary.components["count_per_advertiser_bolt"].windows = {
        "on_time": 123_456_789, "late_updated": 12, "dropped_late": 3, "late_stream": 2}
    lines = render(summary.window_table())
    fits(lines)
    text = squeezed(lines)
    assert "count_per_advertiser_bolt" in text and "123456789" in text
    assert "deserialize_and_validate_bolt" not in text
    assert "droppedlate" in text and "latestream" in text


def test_state_table_counts_how_bolt_tasks_found_their_state_in_80_columns() -> None:
    summary = busy_summary()
    assert summary.state_table() is None  # no Spark bolt task ran: no table
    stats = summary.components["count_per_advertiser_bolt"]
    stats.reused, stats.caught_up, stats.restored, stats.started, stats.idle_batches = 38, 1, 2, 4, 7
    lines = render(summary.state_table())
    fits(lines)
    text = squeezed(lines)
    assert "count_per_advertiser_bolt" in text and "38" in text
    assert "deserialize_and_validate_bolt" not in text
    assert "caughtup" in text and "restored" in text and "started" in text


def test_print_summary_shows_leaf_streams_in_topology_order_and_where_every_emit_is() -> None:
    """adclicks' legacy totals first, then its event-time reports, each titled by what
    ranks it; the sink's folder last (the tables show the latest per key only)."""
    graph = load_topology(str(ROOT / "examples" / "adclicks"))
    made = RunSummary.for_graph(graph, "spark")
    for component, row in [("user_sessions_report_bolt", ["u-1", 2, 5, 1]),
                           ("budget_alert_bolt", ["adv-000", "2023-11-30", 250, 251]),
                           ("minute_ctr_bolt", ["ad-1", "2023-11-30 23:59Z", 4, "25.00%", 1]),
                           ("daily_spend_bolt", ["adv-000", "2023-11-30", "America/New_York", 9]),
                           ("client_spent_bolt", ["adv-000", 9]),
                           ("ads_ctr_bolt", ["ad-1", 4, 1, 9])]:
        made.outputs[(component, "default")] = [row]
    made.sink = "jsonl:/data/sink"
    console = Console(width=80, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    print_summary(graph, made, console)
    lines = console.export_text().splitlines()
    fits(lines)
    titles = [line.split(":")[0].strip() for line in lines if ": latest per " in line]
    assert titles == ["ads_ctr_bolt", "client_spent_bolt", "minute_ctr_bolt", "daily_spend_bolt",
                      "budget_alert_bolt", "user_sessions_report_bolt"]
    assert any("latest per ad_id, minute (1 keys, top 1 by clicks)" in line for line in lines)
    assert lines[-1] == "every emit of the leaf streams: /data/sink/<component>/<stream>/*.jsonl"
