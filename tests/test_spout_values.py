"""The pure decision a built-in spout makes per record: a tuple, or a dead letter with its
reason (``decode`` / ``value``) and a detail (``stormshift/spouts/values.py``). No engine,
no server: the integration runs are ``tests/test_spout_deadletters.py``."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pytest

from stormshift.engines.summary import ComponentStats, RunSummary
from stormshift.spouts.values import DECODE, VALUE, Bad, classify_json, truncate_raw, unsendable

FIELDS = ("word", "n")


@pytest.mark.parametrize(("line", "want"), [
    ('{"word": "a", "n": 1}', ["a", 1]),
    ('{"word": "a", "n": 1, "extra": [1, {"x": 2}]}', ["a", 1]),
    ('{"word": null, "n": 1.5}', [None, 1.5]),
    ('{"word": ["x", {"y": 1}], "n": true}', [["x", {"y": 1}], True]),
])
def test_good_records_are_their_values(line: str, want: list[Any]) -> None:
    assert classify_json(line, FIELDS, 2) == want


@pytest.mark.parametrize(("line", "reason", "detail"), [
    ('{"word": NaN, "n": 1}', VALUE, "'word' is nan"),
    ('{"word": "a", "n": Infinity}', VALUE, "'n' is inf"),
    ('{"word": "a", "n": -Infinity}', VALUE, "'n' is -inf"),
    ('{"word": "a", "n": [1, NaN]}', VALUE, "'n' [1] is nan"),
    ('{"word": "a", "n": 123456789012345678901234567890}', VALUE, "beyond 64 bits"),
    ('{"word": "a"}', VALUE, "missing field 'n'"),
    ('["a", 1]', VALUE, "expected a JSON object"),
    ('{"word": "a", "n": 1', DECODE, "not JSON"),
    ("plain text", DECODE, "not JSON"),
])
def test_bad_records_say_why(line: str, reason: str, detail: str) -> None:
    got = classify_json(line, FIELDS, 2)
    assert isinstance(got, Bad) and got.reason == reason, got
    assert detail in got.detail, got.detail


def test_arity_is_the_spouts_declared_fields() -> None:
    assert classify_json('{"word": "a", "n": 1}', FIELDS, 3) == Bad(
        VALUE, "2 values for the spout's 3 declared fields ['word', 'n']")
    assert classify_json('{"word": "a", "n": 1}', FIELDS, None) == ["a", 1]  # unknown: not checked
    assert unsendable(["x"], 2) == "1 values for the spout's 2 declared fields"
    assert unsendable(("a", 1), 2) is None
    assert "list of values" in str(unsendable("ab", 1))


def test_unsendable_agrees_with_the_emit_wire_check() -> None:
    from stormshift.adapters.tuples import to_wire
    from stormshift.errors import TupleError

    samples: list[Any] = ["s", None, True, 2**63 - 1, 2**63, -(2**63), 1.5, math.nan, math.inf,
                          -math.inf, b"x", {1, 2}, object(), [1, [2, math.nan]], {"k": math.inf},
                          {"k": [1, "v"]}, {(1, 2): 3}]
    for v in samples:
        try:
            to_wire([v], "c", "default")
            ok = True
        except TupleError:
            ok = False
        assert (unsendable([v], 1) is None) == ok, v


def test_raw_records_are_truncated_with_their_length() -> None:
    long = "x" * 5000
    cut = truncate_raw(long, 100)
    assert cut.startswith("x" * 100) and cut.endswith("(5,000 characters in all)") and len(cut) < 200
    assert truncate_raw({"payload": long, "n": 1}, 10)["payload"].startswith("x" * 10 + "...")
    assert truncate_raw(b"\xffab", 10) == "\\xffab"
    assert truncate_raw("short") == "short"


def test_record_decode_error_carries_reason_position_and_truncated_raw() -> None:
    from stormshift.spouts.base import RecordDecodeError

    err = RecordDecodeError("field 'n' is nan", component="words", partition="f.jsonl",
                            offset=7, raw="y" * 10_000, kind=VALUE)
    assert err.kind == VALUE and err.position == "f.jsonl:7"
    assert len(err.values[0]) < 2100 and "cannot be sent as a tuple" in str(err)
    assert RecordDecodeError("x", component="w", partition="p", offset=1, raw="r").kind == DECODE


def _bare(cls: type) -> Any:
    # private pipes: pystorm wraps (and on collection closes) the streams it gets
    return cls(input_stream=io.BytesIO(), output_stream=io.BytesIO(), rdb_signal=None)


def _jsonlines(tmp_path: Path, lines: list[str], declared: list[str]) -> Any:
    from stormshift.spouts import JsonLinesSpout

    (tmp_path / "f.jsonl").write_text("\n".join(lines) + "\n")
    spout = _bare(JsonLinesSpout)
    spout.initialize({"jsonlines.path": str(tmp_path), "jsonlines.fields": list(FIELDS),
                      "jsonlines.bounded": True},
                     {"stream->outputfields": {"default": declared}})
    return spout


def test_both_read_paths_of_jsonlines_refuse_the_same_records(tmp_path: Path) -> None:
    """``replay_read`` (local engine) and ``replay_values`` (Spark) dead-letter the same lines
    with the same reasons: the engines agree because the spout decides."""
    from stormshift.spouts.base import read_range

    lines = [json.dumps({"word": f"w{i}", "n": i}) for i in range(100)]
    lines[3] = '{"word": NaN, "n": 3}'
    lines[40] = '{"word": "x", "n": Infinity}'
    lines[41] = '{"word": "x", "n": -Infinity}'
    lines[77] = "{broken"
    lines[90] = '{"word": "x"}'
    spout = _jsonlines(tmp_path, lines, list(FIELDS))
    local: list[Any] = []
    good = [v for v, _ in read_range(spout, "f.jsonl", 0, 100, local.append)]
    spark: list[Any] = []
    values = [v for block in spout.replay_values("f.jsonl", 0, 100, spark.append) for v in block]
    assert good == values and len(good) == 95
    want = [("f.jsonl:4", VALUE), ("f.jsonl:41", VALUE), ("f.jsonl:42", VALUE),
            ("f.jsonl:78", DECODE), ("f.jsonl:91", VALUE)]
    assert [(e.position, e.kind) for e in local] == want
    assert [(e.position, e.kind, e.raw) for e in spark] == [(e.position, e.kind, e.raw) for e in local]


def test_raw_lines_with_more_declared_fields_are_each_refused(tmp_path: Path) -> None:
    from stormshift.spouts import JsonLinesSpout

    (tmp_path / "f.txt").write_text("a\nb\n")
    spout = _bare(JsonLinesSpout)
    spout.initialize({"jsonlines.path": str(tmp_path), "jsonlines.bounded": True},
                     {"stream->outputfields": {"default": ["line", "extra"]}})
    bad: list[Any] = []
    assert [v for block in spout.replay_values("f.txt", 0, 2, bad.append) for v in block] == []
    assert [(e.position, e.kind) for e in bad] == [("f.txt:1", VALUE), ("f.txt:2", VALUE)]


def test_accounting_counts_spout_dead_letters_and_unread_input() -> None:
    def summary(read: int, out: int, dead: int, unread: int = 0) -> RunSummary:
        spout = ComponentStats("words", "spout", 1, tuples_out=out, acks=out, dead_lettered=dead,
                               records_read=read, unread=unread)
        bolt = ComponentStats("count", "bolt", 1, tuples_in=out, acks=out)
        return RunSummary("t", "local", {"words": spout, "count": bolt},
                          first_hop={"count": (("words", 1),)})

    ok = summary(5017, 5012, 5).accounting()
    assert ok["spouts"]["words"] == {"read": 5017, "emitted": 5012, "dead_lettered": 5,
                                     "unread": 0, "holds": True}
    assert ok["topology"]["holds"] and ok["topology"]["spout_dead_lettered"] == 5
    # the old failure: the spout stopped after 301 of 5,017 lines; never "holds"
    stopped = summary(301, 301, 0, unread=4716)
    assert not stopped.accounting()["topology"]["holds"]
    from stormshift.cli.exit_codes import ACCOUNTING, FAILED_TUPLES, run_exit_code
    from stormshift.engines.accounting import accounting_lines

    stopped.stop_reason = "sources exhausted"
    assert run_exit_code(stopped) == ACCOUNTING
    assert any("4,716 records left unread" in line for line in accounting_lines(stopped))
    gap = summary(10, 8, 1)
    assert not gap.accounting()["spouts"]["words"]["holds"]
    done = summary(5017, 5012, 5)
    done.stop_reason = "sources exhausted"
    assert run_exit_code(done) == FAILED_TUPLES  # dead letters: 3, as for a bolt's


def test_a_rerun_batchs_older_spout_letters_are_found_by_position(tmp_path: Path) -> None:
    """The Spark driver counts, besides new entries, the older spout dead letters inside the
    ranges of the batches it committed (a batch re-run after a crash adds no new entry)."""
    from stormshift.engines.spark.driver.spout_letters import run_ranges, within

    offsets = tmp_path / "offsets"
    offsets.mkdir()
    for batch, (a, s) in enumerate([(10, "5-0"), (20, "9-3"), (30, "12-1")]):
        (offsets / str(batch)).write_text("v1\n{}\n" + json.dumps({"p": {"f.jsonl": a, "s": s}})
                                          + "\n" + json.dumps({"t": [3]}) + "\n")
    ranges = run_ranges(str(tmp_path), [1, 2])
    assert ranges == {"f.jsonl": (10, 30), "s": ("5-0", "12-1")}
    assert [within(f"f.jsonl:{n}", ranges) for n in (10, 11, 30, 31)] == [False, True, True, False]
    assert [within(f"s:{i}", ranges) for i in ("5-0", "5-1", "12-1", "12-2")] == [
        False, True, True, False]
    assert not within("other:3", ranges) and not within(None, ranges)
    assert run_ranges(str(tmp_path), [0])["f.jsonl"] == (None, 10)
    assert within("f.jsonl:1", run_ranges(str(tmp_path), [0]))
    assert run_ranges(str(tmp_path), []) == {}
