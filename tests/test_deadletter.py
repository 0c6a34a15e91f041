"""Poison and bad input end to end: dead letters, their CLI, redrive and accounting.

Real Spark (the session fixture) and real Redis. A driver crash between a
batch's stages and its commit is injected by making ``CommitLog.record_commit``
raise once in the driver: Spark stops the query, and the next run re-runs
the batch from its checkpoint -- the re-run must not add dead letters.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import msgpack
import pytest
from click.testing import CliRunner

FIXTURES = Path(__file__).parent / "spark_fixtures"
sys.path.insert(0, str(FIXTURES))

import dltopo
import sparktopo

from stormshift.cli import cli
from stormshift.engines.spark import SparkEngine
from stormshift.state.connection import connect
from stormshift.state.deadletter import DeadLetters
from stormshift.state.redrive import Redrive
from stormshift.topology.loader import load_topology

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DLTOPO = str(FIXTURES / "dltopo.py")
TUPLE_ID = re.compile(r"^\d+:\d+:\d+$")


def run(spark: Any, graph: Any, ck: Path, redis_url: str, namespace: str, **kw: Any) -> Any:
    kw.setdefault("until_done", True)
    engine = SparkEngine(graph, checkpoint_dir=str(ck), redis_url=redis_url, spark=spark,
                         namespace=namespace, batch_max_tuples=kw.pop("batch", 25), **kw)
    return engine.run()


def commit_fails_once(monkeypatch: Any) -> list[int]:
    """The driver dies after the stages of the next batch, before its commit record."""
    from stormshift.state.commit import CommitLog

    original = CommitLog.record_commit
    refused: list[int] = []

    def flaky(self: Any, txid: int) -> None:
        if not refused:
            refused.append(txid)
            raise RuntimeError(f"injected: driver lost before committing txid {txid}")
        original(self, txid)

    monkeypatch.setattr(CommitLog, "record_commit", flaky)
    return refused


def poison(**overrides: Any) -> Any:
    return load_topology(DLTOPO, name="Poison", overrides=overrides or None)


def final_sums(*summaries: Any) -> dict[str, int]:
    """The checker's last emitted total per key over runs in order (its final state)."""
    out: dict[str, int] = {}
    for s in summaries:
        out.update({k: v[1] for k, v in s.latest("checker").items()})
    return out


def cli_ok(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


# -- adclicks: malformed lines ---------------------------------------------------------------
def _oracle() -> Any:
    spec = importlib.util.spec_from_file_location("adclicks_expected_dl", EXAMPLES / "adclicks" / "expected.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.mark.slow
def test_adclicks_malformed_lines_are_dead_lettered_and_accounted(spark, redis_url, namespace, tmp_path):
    from rich.console import Console

    from stormshift.runner import print_summary

    events, rate = 3000, 0.05
    graph = load_topology(str(EXAMPLES / "adclicks"),
                          overrides={"adclicks.events": events, "adclicks.malformed_rate": rate})
    s = run(spark, graph, tmp_path / "ck", redis_url, namespace, batch=1500)
    oracle = _oracle()
    lines = list(oracle.generated_lines(7, events, malformed_rate=rate))
    bad = [line for line in lines if oracle.parse_record(line) is None]
    assert 100 < len(bad) < 200
    letters = DeadLetters(connect(redis_url), namespace).list()
    # every malformed line once, identical lines included (the multiset, not the set)
    assert Counter(d.values[0] for d in letters) == Counter(bad)
    assert {(d.component, d.source, d.stream, d.reason) for d in letters} == {
        ("parse_bolt", "ad_log_spout", "default", "fail")}
    assert all(TUPLE_ID.match(d.tuple_key) and d.txid >= 0 and d.task in (0, 1) for d in letters)
    assert len({(d.txid, d.tuple_key) for d in letters}) == len(letters)
    assert "fail() on this tuple" in letters[0].error
    assert s.dead_letter_reasons == {"parse_bolt": {"fail": len(bad)}}

    acc = s.accounting()
    top = acc["topology"]
    assert (top["spout_tuples"], top["input"], top["processed"], top["dead_lettered"]) == (
        events, events, events - len(bad), len(bad))
    assert top["holds"] and all(b["holds"] for b in acc["bolts"].values())
    assert acc["bolts"]["ads_ctr_bolt"]["in"] == events - len(bad)
    doc = json.loads(json.dumps(s.to_dict(), default=str))
    assert doc["accounting"]["topology"]["holds"] is True
    assert doc["dead_letter_reasons"] == {"parse_bolt": {"fail": len(bad)}}
    console = Console(record=True, width=200)
    print_summary(graph, s, console)
    assert (f"accounting: input {events:,} = processed {events - len(bad):,} + dead-lettered "
            f"{len(bad):,} (holds)") in console.export_text()

    out = cli_ok("deadletter", "ls", "--namespace", namespace, "--redis", redis_url)
    assert f"dead letters of {namespace}: {len(bad)}" in out
    assert "parse_bolt" in out and "ad_log_spout" in out and letters[0].id in out
    out = cli_ok("deadletter", "ls", str(EXAMPLES / "adclicks"), "--namespace", namespace,
                 "--redis", redis_url, "--json", "--component", "parse_bolt")
    rows = json.loads(out)  # one document
    assert [r["id"] for r in rows] == [d.id for d in letters]
    assert rows[0]["source"] == "ad_log_spout" and rows[0]["reason"] == "fail"
    out = cli_ok("deadletter", "ls", str(EXAMPLES / "adclicks"), "--namespace", namespace,
                 "--redis", redis_url, "--jsonl", "--component", "parse_bolt")
    assert [json.loads(line) for line in out.splitlines()] == rows  # a line per entry


# -- poison kinds, identical tuples, a re-run batch ------------------------------------------
@pytest.mark.slow
def test_poison_kinds_identical_tuples_and_a_rerun_batch(spark, redis_url, namespace, tmp_path, monkeypatch):
    service = tmp_path / "service-up"
    graph = poison(**{"poison.service_file": str(service)})
    refused = commit_fails_once(monkeypatch)
    with pytest.raises(Exception, match="injected: driver lost"):
        run(spark, graph, tmp_path / "ck", redis_url, namespace)
    assert refused == [0]
    dl = DeadLetters(connect(redis_url), namespace)
    before = {(d.tuple_key, d.reason): d.values[0] for d in dl.list()}
    assert sorted(before.values()) == [13, 13, 17, 19, 23], "the lost attempt of txid 0 dead-lettered"
    service.touch()  # the transient failure is over before the batch is re-run
    s = run(spark, graph, tmp_path / "ck", redis_url, namespace)  # re-runs txid 0, then the rest

    letters = dl.list()
    # the re-run discarded what the lost attempt wrote and dead-lettered the same poison again;
    # 23, which failed only in the lost attempt, is processed and not left to be redriven twice
    assert {(d.tuple_key, d.reason) for d in letters if d.txid == 0} == {
        k for k, n in before.items() if n != dltopo.TRANSIENT}
    assert Counter(d.reason for d in letters) == {"raised": 2, "fail": 1, "emit": 1}
    raised = [d for d in letters if d.reason == "raised"]
    # two identical bad tuples of one batch: two entries, one task, distinct tuple ids
    assert [d.values for d in raised] == [[13, "k6"], [13, "k6"]]
    assert len({d.txid for d in raised}) == 1 and len({d.task for d in raised}) == 1
    assert raised[0].tuple_key != raised[1].tuple_key and all(TUPLE_ID.match(d.tuple_key) for d in raised)
    assert "cannot handle 13 yet" in raised[0].error and "ValueError" in raised[0].traceback
    (emit,) = [d for d in letters if d.reason == "emit"]
    assert emit.values == [19, "k5"] and "declares 2 fields" in emit.error
    (failed,) = [d for d in letters if d.reason == "fail"]
    assert failed.values == [17, "k3"] and "fail()" in failed.error
    assert {d.source for d in letters} == {"numbers"}

    # the second run's summary holds the re-run batch: everything is accounted once
    checker = s["checker"]
    assert checker.tuples_in == 41 and checker.dead_lettered == 4 and checker.acks == 37
    assert sum(final_sums(s).values()) == sum(range(40)) - 13 - 17 - 19  # 23 counted, once
    # the committed run of the task: 17's fail(), and the three tuples its first run dead-lettered
    # (13 twice after 3 attempts each, wrong arity at once), skipped by the redo that dropped
    # what their attempts had added to the sums
    assert checker.fails == 1 + 3
    assert s.dead_letter_reasons == {"checker": {"raised": 2, "fail": 1, "emit": 1}}
    top = s.accounting()["topology"]
    assert (top["input"], top["processed"], top["dead_lettered"], top["holds"]) == (41, 37, 4, True)


# -- replay after a fix ------------------------------------------------------------------------
def write_numbers(folder: Path, numbers: list[int]) -> str:
    folder.mkdir()
    (folder / "part-000.jsonl").write_text("".join(json.dumps({"n": n, "key": f"k{n % 7}"}) + "\n"
                                                   for n in numbers))
    return str(folder)


def lines_topology(path: str, fixed: bool, name: str = "PoisonLines") -> Any:
    # one snapshot key for both checkpoints (by default each checkpoint dir keeps its own)
    return load_topology(DLTOPO, name=name, overrides={
        "jsonlines.path": path, "poison.fixed": fixed, "state.hmac_key": "dead-letter-tests"})


@pytest.mark.slow
@pytest.mark.parametrize("name", ["PoisonLines", "PoisonLinesLocal"])
def test_replay_after_fix_processes_each_dead_letter_exactly_once(spark, redis_url, namespace, tmp_path,
                                                                  monkeypatch, name):
    r = connect(redis_url)
    day1 = sorted([*range(40), dltopo.RAISES])  # 13 twice: two identical poison tuples
    first = run(spark, lines_topology(write_numbers(tmp_path / "day1", day1), False, name),
                tmp_path / "ck1", redis_url, namespace)
    dl = DeadLetters(r, namespace)
    assert sorted(d.values[0] for d in dl.list()) == [13, 13, 17, 19]

    replay = ("deadletter", "replay", DLTOPO, "-n", name, "--namespace", namespace,
              "--redis", redis_url)
    out = cli_ok(*replay, "--component", "checker")
    assert "4 dead letter(s)" in out and "exactly once" in out
    assert dl.count() == 0 and len(Redrive(r, namespace).waiting()) == 4
    assert "queued for redrive: 4 waiting" in cli_ok("deadletter", "ls", "--namespace", namespace,
                                                     "--redis", redis_url)
    assert "0 dead letter(s)" in cli_ok(*replay)  # moved already: never twice

    # the fixed bolt, the next day's input, a new checkpoint on the same state;
    # the driver dies before committing its first batch, which is then re-run
    fixed = lines_topology(write_numbers(tmp_path / "day2", list(range(40, 50))), True, name)
    # The Python workers of the shared test session outlive run 1 and keep its live bolt
    # instances; they were initialized with the old conf, so taskstate.TaskCache must not
    # hand them to this run (its key holds the config): the fix is seen at once.
    refused = commit_fails_once(monkeypatch)
    with pytest.raises(Exception, match="injected: driver lost"):
        run(spark, fixed, tmp_path / "ck2", redis_url, namespace, state_mode="adopt")
    assert refused
    second = run(spark, fixed, tmp_path / "ck2", redis_url, namespace, state_mode="adopt")

    assert second["checker"].redriven == 4
    # 13 and its twin are processed now; 17 and 19 are dead-lettered again, once each
    assert sorted((d.values[0], d.reason) for d in dl.list()) == [(17, "fail"), (19, "emit")]
    assert {d.txid for d in dl.list()} == {refused[0]}
    redrive = Redrive(r, namespace)
    assert redrive.waiting() == [] and redrive.claimed() == {}  # trimmed after the commit
    top = second.accounting()["topology"]
    assert (top["input"], top["redriven"], top["processed"], top["dead_lettered"], top["holds"]) == (
        14, 4, 12, 2, True)

    # the same input without any failure, in one run, ends in exactly the same state
    ref = run(spark, lines_topology(write_numbers(tmp_path / "all", [*day1, *range(40, 50)]), True, name),
              tmp_path / "ref", redis_url, namespace + "-ref")
    assert final_sums(first, second) == final_sums(ref)
    assert sum(final_sums(ref).values()) == sum(range(50)) + 13 - 17 - 19
    assert first["checker"].acks + second["checker"].acks == ref["checker"].acks


# -- spout records that are no tuple ---------------------------------------------------------
@pytest.mark.slow
def test_undecodable_spout_records_keyed_by_offset_and_not_redrivable(spark, redis_url, namespace, tmp_path):
    data = tmp_path / "in"
    data.mkdir()
    lines = [json.dumps({"n": n, "key": f"k{n % 7}"}) for n in range(20)]
    lines[5] = lines[9] = "{not json"  # two identical bad records
    (data / "part-000.jsonl").write_text("\n".join(lines) + "\n")
    graph = load_topology(sparktopo.Replayable, overrides={"jsonlines.path": str(data)})
    run(spark, graph, tmp_path / "ck", redis_url, namespace, batch=10)
    letters = DeadLetters(connect(redis_url), namespace).list()
    decode = [d for d in letters if d.reason == "decode"]
    assert [d.values for d in decode] == [["{not json"], ["{not json"]]
    assert {(d.component, d.source, d.txid) for d in decode} == {("numbers", "numbers", -1)}
    keys = [d.tuple_key for d in decode]
    assert len(set(keys)) == 2 and all(k.startswith("part-000.jsonl:") for k in keys)
    (poisoned,) = [d for d in letters if d.reason == "raised"]
    assert poisoned.values == [13, "k6"] and poisoned.component == "sums"

    result = CliRunner().invoke(cli, ["deadletter", "replay", str(FIXTURES / "sparktopo.py"), "-n",
                                      "Replayable", "--namespace", namespace, "--redis", redis_url])
    assert result.exit_code == 0, result.output
    assert "1 dead letter(s)" in result.output
    assert "2 left in the dead-letter stream" in result.output
    assert "fix the source data and append it" in result.output
    assert [d.reason for d in DeadLetters(connect(redis_url), namespace).list()] == ["decode", "decode"]


# -- state layer and planning, no Spark --------------------------------------------------------
def test_tuple_key_keeps_identical_tuples_apart_and_replays_idempotent(redis_url, namespace):
    r = connect(redis_url)
    dl = DeadLetters(r, namespace)
    a = dl.add("bolt", "default", ["x", 1], "ValueError: x", "tb", 4, source="spout", tuple_key="4:0:1",
               task=0, reason="raised")
    b = dl.add("bolt", "default", ["x", 1], "ValueError: x", "tb", 4, source="spout", tuple_key="4:0:2",
               task=0, reason="raised")
    assert a != b
    assert dl.add("bolt", "default", ["x", 1], "ValueError: x", "tb", 4, source="spout",
                  tuple_key="4:0:2", task=0, reason="raised") == b  # a replay of the batch
    legacy = r.xadd(dl.key, {"component": "old", "stream": "s", "values": msgpack.packb([1]),
                             "error": "E", "traceback": "", "txid": 2})
    got = dl.list()
    assert [d.id for d in got] == [a, b, legacy.decode()]
    assert (got[1].source, got[1].tuple_key, got[1].task, got[1].reason) == ("spout", "4:0:2", 0, "raised")
    assert (got[2].source, got[2].tuple_key, got[2].task, got[2].reason, got[2].values) == (
        None, None, None, None, [1])


def test_redrive_moves_each_entry_once_and_a_txid_claims_the_same_entries(redis_url, namespace):
    r = connect(redis_url)
    dl = DeadLetters(r, namespace)
    ids = [dl.add("bolt", "default", [n], "E", "", 1, source="spout", tuple_key=f"1:0:{n}") for n in range(3)]
    redrive = Redrive(r, namespace)
    assert redrive.move(ids[:2] + ["0-1"]) == ids[:2]  # an absent id is skipped
    assert redrive.move(ids[:2]) == []  # moved already: never twice
    assert dl.count() == 1 and [e.values for e in redrive.waiting()] == [[0], [1]]
    claimed = redrive.claim(7)
    assert [e.values for e in claimed] == [[0], [1]] and claimed[0].source == "spout"
    redrive.move(ids[2:])
    assert [e.values for e in redrive.claim(7)] == [[0], [1]]  # a re-run of txid 7: same entries
    assert [e.values for e in redrive.claim(8)] == [[2]]  # what 7 took, 8 never sees
    assert redrive.claimed(above=6) == {7: 2, 8: 1}
    assert redrive.trim(7) == 1 and redrive.claimed() == {8: 1}
    assert redrive.claim(9) == [] and redrive.claimed() == {8: 1, 9: 0}


def test_the_desk_redrives_what_can_go_back_and_says_why_the_rest_stays(redis_url, namespace):
    from stormshift.deadletters import DeadLetterDesk, Queued
    from stormshift.state.commit import CommitLog

    r = connect(redis_url)
    dl = DeadLetters(r, namespace)
    ok = [dl.add("fields_seen", "default", [n, f"k{n}"], "E", "", 2, source="numbers",
                 tuple_key=f"2:0:{n}", task=0, reason="raised") for n in range(3)]
    late = dl.add("fields_seen", "default", [9, "k9"], "E", "", 5, source="numbers",
                  tuple_key="5:0:0", task=0, reason="raised")
    decode = dl.add("numbers", "default", ["?"], "E", "", 2, source="numbers",
                    tuple_key="numbers:0:at-0", task=0, reason="decode")
    CommitLog(r, namespace).record_commit(4)
    desk = DeadLetterDesk(r, namespace, load_topology(sparktopo.Groupings))
    assert [d.id for d in desk.entries(component="fields_seen")] == [*ok, late]
    done = desk.redrive([ok[0], ok[1], late, "0-1"])
    assert done.moved == ok[:2] and done.missing == ["0-1"]
    [(why, ids)] = done.refused.items()
    assert ids == [late] and "txid 5) has not committed yet (committed: 4)" in why
    assert desk.queued() == Queued(waiting=2, claimed={})
    rest = desk.redrive()  # all that is left: ok[2] goes, the late one and the spout record stay
    assert rest.moved == [ok[2]] and sorted(i for ids in rest.refused.values() for i in ids) == sorted([late, decode])
    assert [d.id for d in desk.entries()] == [late, decode] and desk.queued().waiting == 3
    with pytest.raises(ValueError, match="needs the topology"):
        DeadLetterDesk(r, namespace).redrive()


def test_redrive_plan_routes_like_the_grouping_and_refuses_what_cannot_go_back():
    from stormshift.adapters.routing import Router
    from stormshift.cli.deadletter import namespace_of
    from stormshift.deadletters import DeadLetterDesk
    from stormshift.engines.spark.driver.engine import _safe
    from stormshift.engines.spark.driver.redrive import plan_redrive
    from stormshift.engines.spark.protocol import rows as R
    from stormshift.engines.spark.protocol.layout import Layout
    from stormshift.state.deadletter import DeadLetter

    def letter(component: str, values: Any, source: str = "numbers", stream: str = "default",
               reason: str = "raised", task: int | None = 0, txid: int = 3) -> DeadLetter:
        return DeadLetter("1-0", component, stream, values, "E", "", txid, source, "3:0:1", task, reason)

    graph = load_topology(sparktopo.Groupings)
    layout = Layout(graph)
    router = Router(graph, "numbers", 0)
    good = [letter("fields_seen", [n, f"k{n % 7}"]) for n in range(10)]
    plan = plan_redrive(layout, good)
    assert not plan.rejected and plan.counts == {"fields_seen": 10}
    for (dest, kind, src, seq, sid, v), e in zip(plan.rows["fields_seen"], good):
        want = [graph.component(c).task_id(i) for c, i in router.route("default", e.values) if c == "fields_seen"]
        assert dest == want[0] and src == graph.component("numbers").first_task_id
        assert kind == R.Kind.REDRIVEN and sid == layout.stream_code[("numbers", "default")]
        assert msgpack.unpackb(v) == [e.values]  # a chunk of one tuple
    first = plan.rows["fields_seen"][0]
    assert first[3] == 0  # the first redriven row of the batch
    emit = (first[0], R.Kind.TUPLE, first[2], 1 << 40, first[4], first[5])
    ordered = R.sorted_table([R.to_batch(*map(list, zip(first, emit)))])
    assert ordered.column("kind").to_pylist() == [R.Kind.TUPLE, R.Kind.REDRIVEN]  # sorts after every real emit
    (all_row,) = plan_redrive(layout, [letter("all_seen", [1, "k1"], task=1)]).rows["all_seen"]
    assert all_row[0] == graph.component("all_seen").task_id(1)  # only the task that failed it

    refused = plan_redrive(layout, [
        letter("local_seen", [2], source="director", stream="even"),  # fused behind director
        letter("numbers", ["raw"]),
        letter("fields_seen", [1, "k1", "extra"]),
        letter("shuffle_seen", [1, "k1"], stream="nope"),
    ]).rejected
    whys = [why for _, why in refused]
    assert "fused behind 'director'" in whys[0] and "not a bolt" in whys[1]
    assert "do not match the 2 fields" in whys[2] and "does not subscribe" in whys[3]
    desk = DeadLetterDesk(None, "unused", graph)  # judging needs the graph, not Redis
    assert "fix the source data" in desk.refusal(letter("numbers", ["x"], reason="decode"), 9)
    assert "has not committed yet" in desk.refusal(letter("fields_seen", [1, "k1"], txid=5), 4)
    assert desk.refusal(letter("fields_seen", [1, "k1"], txid=4), 4) is None
    assert "fused behind 'director'" in desk.refusal(letter("local_seen", [2], source="director",
                                                            stream="even"), 9)
    assert namespace_of(graph) == _safe(graph.name)


def test_spout_emit_counts_ignore_redriven_rows():
    import pyarrow as pa

    from stormshift.engines.spark.protocol import rows as R

    redriven, emit = R.Kind.REDRIVEN, R.Kind.TUPLE
    table = R.to_batch([1, 1, 1, 2], [emit, emit, redriven, redriven], [5, 5, 5, 6], [0, 3, 0, 1],
                       [0, 0, 0, 0], [b"", b"", b"", b""])
    assert R.max_seq_by_src(pa.Table.from_batches([table])) == {5: 3}


# -- generic spout emits that are no tuple ---------------------------------------------------
def test_bad_spout_emits_are_dead_lettered_failed_and_counted(spark, redis_url, namespace, tmp_path):
    failed = tmp_path / "failed.txt"
    graph = load_topology(DLTOPO, name="BadEmits", overrides={"bademits.failed_file": str(failed)})
    s = run(spark, graph, tmp_path / "ck", redis_url, namespace, batch=5)

    letters = [d for d in DeadLetters(connect(redis_url), namespace).list() if d.source == "bademits"]
    by_n = {str(d.values[0]): d for d in letters}  # values no codec keeps are kept as reprs
    assert sorted(by_n) == ["11", "7"] and {d.reason for d in letters} == {"emit"}
    assert by_n["7"].values == [7] and "declares 2 fields" in by_n["7"].error
    assert "object" in by_n["11"].values[1] and "which Storm cannot send" in by_n["11"].error
    assert {d.tuple_key for d in letters} == {"bademits:0:'m7'", "bademits:0:'m11'"}
    assert failed.read_text().split() == ["m7", "m11"], "the spout is told they can never be delivered"
    # the rest is counted, and the run reports the two with their reasons
    assert sum(final_sums(s).values()) == sum(range(13)) - 7 - 11
    assert s["bademits"].dead_lettered == 2
    assert s.dead_letter_reasons["bademits"] == {"emit": 2}
    assert s.accounting()["topology"]["holds"]
