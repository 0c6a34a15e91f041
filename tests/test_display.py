"""Data is shown, never interpreted (issue 33.3).

A user project whose spout emits hostile strings (rich markup, ESC sequences that
clear the screen, colour text or forge an OSC 8 hyperlink, ``\\r``, ``\\b``, a C1 CSI,
a bidi override), whose bolt logs them and raises with them, goes through every
command that shows data; no raw control character from the data reaches the output,
and the markup is printed as text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.table import Table

from stormshift.cli import cli
from stormshift.display import console, cut, json_text, styled, visible

pytest_plugins = ["support.state_fixtures"]

HOSTILE = ("[bold red]X[/bold red][link=http://evil.example]y[/link]<script>alert(1)</script>"
           "\x1b[2J\x1b[31mred\x1b]8;;http://evil.example\x07click\x1b]8;;\x07\r\b\x9b\u202e")
RAW = ("\x1b", "\x07", "\r", "\b", "\x9b", "\u202e")

TOPOLOGY = '''
from streamparse import Grouping, Topology

from hostile_parts import EchoBolt, HostileSpout


class Hostile(Topology):
    hostile_spout = HostileSpout.spec()
    echo_bolt = EchoBolt.spec(inputs={hostile_spout: Grouping.fields("word")}, par=2)
'''

PARTS = f'''
import time

from streamparse import Bolt, Spout

HOSTILE = {HOSTILE!r}


class HostileSpout(Spout):
    outputs = ["word"]

    def initialize(self, stormconf, context):
        self.n = 0

    def next_tuple(self):
        time.sleep(0.001)
        self.n += 1
        self.emit([HOSTILE + str(self.n % 3)], tup_id=self.n)


class EchoBolt(Bolt):
    outputs = ["word", "count"]

    def initialize(self, stormconf, context):
        self.counts = {{}}

    def process(self, tup):
        word = tup.values[0]
        self.logger.warning("seen word %s", word)
        if word.endswith("2"):
            raise ValueError("cannot take " + word)
        self.counts[word] = self.counts.get(word, 0) + 1
        self.emit([word, self.counts[word]])
'''


def hostile_project(root: Path, parts: str = PARTS) -> Path:
    for rel, text in {"config.json": json.dumps({"envs": {}}), "topologies/hostile.py": TOPOLOGY,
                      "src/hostile_parts.py": parts}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def assert_shown_not_interpreted(text: str) -> None:
    raw = [c for c in RAW if c in text]
    assert not raw, f"raw control characters reached the output: {raw!r}"
    assert "[bold red]X[/bold red]" in text  # markup printed as text, not styled
    assert "\\x1b[2J" in text


def test_visible_shows_every_control_character_and_keeps_text() -> None:
    shown = visible(HOSTILE)
    assert not any(c in shown for c in RAW)
    assert shown.startswith("[bold red]X[/bold red][link=http://evil.example]y[/link]<script>")
    assert "</script>\\x1b[2J" in shown
    assert "\\x0d\\x08\\x9b\\u202e" in shown
    assert visible("é ü 日本\tok\n") == "é ü 日本\tok\n"
    assert visible("a\nb", newlines=False) == "a\\x0ab"


@pytest.mark.parametrize("width", range(1, 12))
def test_a_cut_never_splits_an_escape(width: int) -> None:
    text = cut("ab\x1bcd\x9bef", width)
    assert len(text) <= width
    body = text.removesuffix("…")
    # whatever is kept is a prefix of the whole visible text, ending at a piece boundary
    whole = visible("ab\x1bcd\x9bef", newlines=False)
    assert whole.startswith(body)
    assert not body.endswith(("\\", "\\x", "\\x1", "\\x9"))
    assert cut("short", 10) == "short"


def test_console_prints_strings_and_tables_as_data_and_our_own_styles() -> None:
    out = console(force_terminal=True, width=300, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    table = Table(title=HOSTILE)
    table.add_column(HOSTILE)
    table.add_row(HOSTILE)
    out.print(table)
    out.print(HOSTILE, markup=True)  # even asked for markup: data stays data
    out.print(styled(("error:", "bold red"), " ", HOSTILE))
    text = out.export_text(styles=False, clear=False)
    assert_shown_not_interpreted(text)
    styled_text = out.export_text(styles=True)
    assert "\x1b]8;" not in styled_text  # no hyperlink from the data
    assert "\x1b[1;31merror:" in styled_text  # our own style is still there


def test_json_text_escapes_c1_and_bidi_and_stays_valid_json() -> None:
    text = json_text({"k": HOSTILE, "e": "é"})
    assert not any(c in text for c in RAW)
    assert json.loads(text) == {"k": HOSTILE, "e": "é"} and "é" in text


def test_run_inspect_and_logs_of_a_hostile_project_show_data(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    project = hostile_project(tmp_path / "proj")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner(env={"COLUMNS": "400"})  # one line per row: the markup read whole
    log = tmp_path / "hostile.log"
    run = runner.invoke(cli, ["run", str(project), "--engine", "local", "--max-tuples", "30",
                              "--log-file", str(log)], catch_exceptions=False)
    assert run.exit_code == 3, run.output  # the bolt raised: listed, with its message
    assert "cannot take" in run.output and "echo_bolt" in run.output
    assert_shown_not_interpreted(run.output)
    logged = log.read_text()
    assert "seen word" in logged and not any(c in logged for c in RAW)

    shown = runner.invoke(cli, ["inspect", str(project), "-o", f"hostile.note={HOSTILE}"],
                          catch_exceptions=False)
    assert shown.exit_code == 0, shown.output
    assert_shown_not_interpreted(shown.output)
    as_json = runner.invoke(cli, ["inspect", str(project), "-o", f"hostile.note={HOSTILE}",
                                  "--json"], catch_exceptions=False)
    assert not any(c in as_json.output for c in RAW)
    assert json.loads(as_json.output)["config"]["hostile.note"] == HOSTILE


def test_shadow_reports_show_hostile_keys_as_text(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A port that counts differently: every hostile key diverges, so the keys are in both
    reports (terminal: visible; HTML: escaped, never a tag)."""
    project = hostile_project(tmp_path / "proj")
    port = hostile_project(tmp_path / "port", PARTS.replace("get(word, 0) + 1", "get(word, 0) + 2"))
    monkeypatch.chdir(tmp_path)
    html = tmp_path / "shadow.html"
    result = CliRunner(env={"COLUMNS": "400"}).invoke(
        cli, ["shadow", str(project), "--port", str(port), "--port-engine", "local",
              "--max-tuples", "30", "--report", str(html)], catch_exceptions=False)
    assert result.exit_code == 1, result.output  # PORT DIFFERS
    assert "PORT DIFFERS" in result.output and "[bold red]X[/bold" in result.output
    assert not any(c in result.output for c in RAW)
    page = html.read_text()
    assert "[bold red]X[/bold red][link=http://evil.example]" in page  # the key, as text
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)" in page
    assert not any(c in page for c in RAW) and "\\x1b[2J" in page  # `cat` shows, never runs


def test_deadletter_table_shows_hostile_values_and_errors_as_text() -> None:
    from stormshift.cli.deadletter import letters_table
    from stormshift.state.deadletter import DeadLetter

    letter = DeadLetter(id="1732461234567-0", txid=3, component="echo_bolt", stream="default",
                        values=[HOSTILE * 5], error=f"ValueError: cannot take {HOSTILE}",
                        traceback="", source="hostile_spout", task=1, reason="raised")
    out = console(width=400, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    out.print(letters_table("hostile", [letter]))
    text = out.export_text()
    assert_shown_not_interpreted(text)
    assert "…" in text  # the values were cut, at an escape's boundary
    assert not any(text.split("…")[0].rstrip().endswith(half) for half in ("\\", "\\x", "\\x1"))


@pytest.mark.spark
def test_spark_run_and_deadletter_ls_of_a_hostile_project_show_data(tmp_path: Path) -> None:
    """The Spark engine's summary, forwarded log lines and the dead letters the raising
    bolt left: as text (subprocesses, as a user runs them)."""
    import os
    import subprocess
    import sys

    project = hostile_project(tmp_path / "proj")
    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items()
           if k not in ("STORMSHIFT_REDIS", "STORMSHIFT_REDIS_URL", "REDIS_URL")}
    env.update(PYTHONPATH=str(root), STORMSHIFT_STATE_DIR=str(tmp_path / "state"), COLUMNS="400")

    def stormshift(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "stormshift", *args], capture_output=True,
                              text=True, timeout=600, env=env, cwd=tmp_path, check=False)

    run = stormshift("run", str(project), "--master", "local[2]", "--max-tuples", "30",
                     "--checkpoint", str(tmp_path / "ck"), "--log-file", str(tmp_path / "h.log"))
    assert run.returncode == 3, run.stderr[-3000:]  # dead letters
    assert_shown_not_interpreted(run.stdout)  # the leaf stream's keys, as text
    assert not any(c in run.stderr for c in RAW), run.stderr[-2000:]
    logged = (tmp_path / "h.log").read_text()
    assert "seen word" in logged and not any(c in logged for c in RAW)
    letters = stormshift("deadletter", "ls", str(project))
    assert letters.returncode == 0, letters.stderr
    assert "echo_bolt" in letters.stdout and "cannot take" in letters.stdout
    assert_shown_not_interpreted(letters.stdout)
    as_json = stormshift("deadletter", "ls", str(project), "--json")
    assert not any(c in as_json.stdout for c in RAW)
    assert HOSTILE in json.loads(as_json.stdout)[0]["error"]


def test_state_ls_get_and_dump_show_hostile_names_and_values(redis_client: object, ns: str) -> None:
    """Keys and values a topology wrote (map names are restricted to [A-Za-z0-9_.-])."""
    from support.state_fixtures import REDIS_URL, commit, run_task

    from stormshift.cli.state import state_group
    from stormshift.state import transactional_map
    from stormshift.state.commit import CommitLog

    CommitLog(redis_client, ns).bind_checkpoint("ck")
    run_task(redis_client, ns, 1, lambda: [transactional_map("notes").put(HOSTILE, HOSTILE)],
             component="count")
    commit(redis_client, ns, 1)

    def state(*args: str) -> str:
        done = CliRunner(env={"COLUMNS": "400"}).invoke(state_group, [*args, "--redis", REDIS_URL],
                                                        catch_exceptions=False)
        assert done.exit_code == 0, done.output
        return done.output

    assert "map count:notes: 1 keys" in state("ls", ns)
    got = state("get", ns, "count", "notes", json.dumps(HOSTILE))
    assert not any(c in got for c in RAW) and json.loads(got)["value"] == HOSTILE
    dumped = state("dump", ns)
    assert not any(c in dumped for c in RAW) and json.loads(dumped)["key"] == HOSTILE
