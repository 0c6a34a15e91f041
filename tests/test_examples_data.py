"""The example projects, their data generator and their independent oracle.

Nothing here uses a stormshift engine: the examples are checked the way
Storm runs them (pystorm's own multilang loop, fed through its JSON
serializer), and ``expected.py`` is checked against hand-computed totals.
"""

from __future__ import annotations

import collections
import hashlib
import importlib
import importlib.util
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.examples_fixtures import ExampleImport, StormTask, tuple_msg

ROOT = Path(__file__).resolve().parent.parent
WORDCOUNT = ROOT / "examples" / "wordcount"
ADCLICKS = ROOT / "examples" / "adclicks"


def _load_file(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


adgen = _load_file("adclicks_adgen", ADCLICKS / "src" / "adgen.py")
expected = _load_file("adclicks_expected", ADCLICKS / "expected.py")


def _lines(**kw) -> list[str]:
    return list(adgen.generate_lines(adgen.GenConfig(**kw)))


@pytest.fixture(scope="module")
def day() -> list[str]:
    return _lines(seed=7, events=20_000)


# -- generator ----------------------------------------------------------------
def test_same_seed_gives_same_bytes_and_script_matches(tmp_path):
    out = tmp_path / "day.jsonl"
    subprocess.run(
        [
            sys.executable,
            str(ADCLICKS / "src" / "adgen.py"),
            "--seed",
            "7",
            "--events",
            "3000",
            "--out",
            str(out),
        ],
        check=True,
    )
    in_process = "".join(line + "\n" for line in _lines(seed=7, events=3000))
    assert out.read_bytes() == in_process.encode("utf-8")
    assert _lines(seed=7, events=3000) == _lines(seed=7, events=3000)
    assert _lines(seed=8, events=3000) != _lines(seed=7, events=3000)


def test_exact_line_count_all_well_formed_by_default(day):
    assert len(day) == 20_000
    assert all(expected.parse_record(line) is not None for line in day)
    # the fast writer and json.dumps agree byte for byte
    assert all(adgen.to_line(json.loads(line)) == line for line in day[:2000])


def test_ad_popularity_is_skewed_and_advertisers_own_several_ads(day):
    recs = [json.loads(line) for line in day]
    per_ad = collections.Counter(r["ad_id"] for r in recs)
    top_tenth = sum(sorted(per_ad.values(), reverse=True)[: adgen.GenConfig().ads // 10])
    assert top_tenth / len(recs) > 0.5
    ads_of = collections.defaultdict(set)
    for r in recs:
        ads_of[r["advertiser_id"]].add(r["ad_id"])
    owning_several = sum(1 for ads in ads_of.values() if len(ads) >= 2)
    assert owning_several > len(ads_of) / 2
    assert all(
        len({r["advertiser_id"] for r in recs if r["ad_id"] == ad}) == 1 for ad in list(per_ad)[:50]
    )


def test_ctr_and_money_are_realistic(day):
    recs = [json.loads(line) for line in day]
    kinds = collections.Counter(r["event_type"] for r in recs)
    assert 0.01 <= kinds["click"] / kinds["impression"] <= 0.03
    assert all(type(r["cost"]) is int and r["cost"] >= 0 for r in recs)
    click_costs = [r["cost"] for r in recs if r["event_type"] == "click"]
    assert sum(1 for c in click_costs if c > 0) > len(click_costs) / 2  # mostly CPC ads
    imp_costs = {r["cost"] for r in recs if r["event_type"] == "impression"}
    assert 0 in imp_costs and max(imp_costs) <= 5_000  # CPM ads: at most $5 CPM


def test_duplicates_are_client_retries_at_the_configured_rate(day):
    seen: dict[str, str] = {}
    duplicates = 0
    for line in day:
        event_id = json.loads(line)["event_id"]
        if event_id in seen:
            duplicates += 1
            assert seen[event_id] == line  # a retry repeats the very same record
        seen[event_id] = line
    assert 0.006 <= duplicates / len(day) <= 0.014  # default rate 1 %
    assert _count_duplicates(_lines(seed=7, events=20_000, duplicate_rate=0.0)) == 0


def _count_duplicates(lines: list[str]) -> int:
    ids = collections.Counter(json.loads(line)["event_id"] for line in lines)
    return sum(n - 1 for n in ids.values())


def test_events_arrive_out_of_order_and_some_late(day):
    cfg = adgen.GenConfig(seed=7, events=20_000)
    late = out_of_order = 0
    newest_ms = 0
    seen = set()
    for i, line in enumerate(day):
        rec = json.loads(line)
        if rec["event_id"] in seen:
            continue
        seen.add(rec["event_id"])
        arrival_ms = cfg.day_start_ms + i * adgen.DAY_MS // cfg.events
        late += arrival_ms - rec["ts"] > 2 * 60_000
        out_of_order += rec["ts"] < newest_ms
        newest_ms = max(newest_ms, rec["ts"])
    assert 0.01 <= late / len(seen) <= 0.03  # default late rate 2 %
    assert out_of_order / len(seen) > 0.02  # 5 s of jitter; more at 200k lines a day
    ts = [json.loads(line)["ts"] for line in day]
    assert max(ts) - min(ts) > 0.9 * adgen.DAY_MS  # the lines cover a day


def test_malformed_rate_is_honoured_and_both_parsers_agree():
    lines = _lines(seed=3, events=20_000, malformed_rate=0.05)
    with ExampleImport(ADCLICKS):
        parse_line = importlib.import_module("bolts.parse").parse_line
    rejected_by_bolt = []
    for line in lines:
        try:
            parse_line(line)
        except ValueError:
            rejected_by_bolt.append(line)
    rejected_by_oracle = [line for line in lines if expected.parse_record(line) is None]
    assert rejected_by_bolt == rejected_by_oracle
    assert 0.04 <= len(rejected_by_oracle) / len(lines) <= 0.06


# -- expected.py ----------------------------------------------------------------
def _rec(ad, adv, kind, eid, cost, ts=1_700_000_000_000):
    return json.dumps(
        {
            "slot_id": "s1",
            "advertiser_id": adv,
            "ad_id": ad,
            "event_type": kind,
            "user_id": "u1",
            "event_id": eid,
            "ts": ts,
            "cost": cost,
        }
    )


HAND_MADE = [
    _rec("ad-1", "adv-A", "impression", "e1", 0),
    _rec("ad-1", "adv-A", "impression", "e2", 0),
    _rec("ad-1", "adv-A", "click", "e3", 1_500_000),
    _rec("ad-1", "adv-A", "click", "e3", 1_500_000),  # client retry
    _rec("ad-2", "adv-A", "impression", "e4", 2_000),  # CPM ad: $2 CPM
    _rec("ad-3", "adv-B", "impression", "e5", 0),
    _rec("ad-3", "adv-B", "click", "e6", 700_000),
    '{"slot_id": "s1", "ad_id": "ad-3"',  # truncated
    _rec("ad-3", "adv-B", "view", "e7", 0),  # unknown event type
    _rec("ad-3", "adv-B", "click", "e8", "0.70"),  # money as a string
]


def test_expected_legacy_totals_count_duplicates():
    got = expected.compute(HAND_MADE)
    assert got.ctr_by_ad == {
        "ad-1": (2, 2, 3_000_000),
        "ad-2": (1, 0, 2_000),
        "ad-3": (1, 1, 700_000),
    }
    assert got.spend_by_advertiser == {"adv-A": 3_002_000, "adv-B": 700_000}
    assert (got.lines, got.counted, got.malformed, got.duplicates) == (10, 7, 3, 1)
    assert got.ctr_by_ad["ad-1"].ctr == 1.0


def test_expected_dedup_counts_each_event_once():
    got = expected.compute(HAND_MADE, dedup=True)
    assert got.ctr_by_ad["ad-1"] == (2, 1, 1_500_000)
    assert got.ctr_by_ad["ad-1"].ctr == 0.5
    assert got.spend_by_advertiser == {"adv-A": 1_502_000, "adv-B": 700_000}
    assert got.total_spend == 2_202_000


def test_summarize_lists_top_ads_by_spend_and_totals():
    got = expected.compute(HAND_MADE, dedup=True)
    buf = io.StringIO()
    text = expected.summarize(got.ctr_by_ad, got.spend_by_advertiser, file=buf)
    assert buf.getvalue() == text + "\n"
    rows = text.splitlines()
    assert [r.split()[0] for r in rows[2:5]] == ["ad-1", "ad-3", "ad-2"]
    assert "50.00%" in rows[2] and "$1.50" in rows[2]
    assert "4 impressions, 2 clicks, CTR 50.00%, ad spend $2.20" in text
    assert "2 advertisers billed $2.20" in text


# -- the projects ------------------------------------------------------------------
def test_examples_never_import_stormshift():
    """Plain streamparse code, except adclicks' event-time reports (``bolts/windows.py``:
    windowed bolts, written for stormshift; the legacy topology never imports them)."""
    written_for_stormshift = ADCLICKS / "src" / "bolts" / "windows.py"
    for path in (
        list(WORDCOUNT.rglob("*.py"))
        + list((ADCLICKS / "src").rglob("*.py"))
        + list((ADCLICKS / "topologies").rglob("*.py"))
    ):
        if path == written_for_stormshift:
            continue
        assert not re.search(r"^\s*(from|import)\s+stormshift", path.read_text(), re.MULTILINE), (
            path
        )


def test_wordcount_is_the_streamparse_quickstart():
    quickstart = Path(importlib.import_module("streamparse.bootstrap").__file__).parent / "project"
    for rel in [
        "src/bolts/wordcount.py",
        "src/spouts/words.py",
        "topologies/wordcount.py",
        "fabfile.py",
    ]:
        assert (WORDCOUNT / rel).read_text() == (quickstart / rel).read_text(), rel
    for name in [
        "config.json",
        "project.clj",
        "README.md",
        ".gitignore",
        "virtualenvs/wordcount.txt",
    ]:
        assert (WORDCOUNT / name).is_file(), name


def test_both_examples_load_as_graphs():
    from stormshift.topology.loader import load_topology

    wc = load_topology(WORDCOUNT, name="wordcount")
    assert [(c.name, c.par) for c in wc.components.values()] == [
        ("word_spout", 1),
        ("count_bolt", 2),
    ]
    assert str(wc.component("count_bolt").inputs[0].grouping) == "fields(word)"
    ad = load_topology(ADCLICKS, name="adclicks", overrides={"adclicks.events": 500})
    assert {c.name: c.par for c in ad.components.values()} == {
        "ad_log_spout": 1,
        "parse_bolt": 2,
        "ads_ctr_bolt": 2,
        "client_spent_bolt": 2,
        # event-time reports (adclicks.windows, on by default): parse_bolt's "events" stream
        "ad_ctr_minute_bolt": 2,
        "advertiser_day_bolt": 2,
        "user_sessions_bolt": 2,
        "minute_ctr_bolt": 2,
        "daily_spend_bolt": 2,
        "budget_alert_bolt": 2,
        "user_sessions_report_bolt": 2,
    }
    groupings = {c.name: [str(i.grouping) for i in c.inputs] for c in ad.components.values()}
    assert groupings["parse_bolt"] == ["shuffle"]
    assert groupings["ads_ctr_bolt"] == ["fields(ad_id)"]
    assert groupings["client_spent_bolt"] == ["fields(advertiser_id)"]
    assert ad.component("ads_ctr_bolt").outputs["default"].fields == (
        "ad_id",
        "impressions",
        "clicks",
        "spend",
    )
    assert ad.config["adclicks.events"] == 500 and ad.config["adclicks.seed"] == 7


# -- the examples under pystorm's own loop (what Storm runs) ----------------------
def _crc_task(value: str, par: int) -> int:
    return int(hashlib.md5(value.encode()).hexdigest(), 16) % par


def test_adclicks_under_pystorm_matches_expected(tmp_path):
    conf = {
        "adclicks.seed": 11,
        "adclicks.events": 3000,
        "adclicks.malformed_rate": 0.02,
        # the legacy part only: the event-time reports are stormshift WindowedBolts, which
        # pystorm's loop does not host (parse_bolt then emits nothing on "events")
        "adclicks.windows": False,
        "pystorm.log.path": str(tmp_path),
    }
    with ExampleImport(ADCLICKS) as imp:
        spout = StormTask(
            imp.cls("spouts.adlog", "AdLogSpout"), conf, "ad_log_spout", [1], 1, tmp_path
        )
        parse = StormTask(imp.cls("bolts.parse", "ParseBolt"), conf, "parse_bolt", [2], 2, tmp_path)
        ctr = [
            StormTask(imp.cls("bolts.ctr", "AdsCtrBolt"), conf, "ads_ctr_bolt", [3, 4], t, tmp_path)
            for t in (3, 4)
        ]
        spent = [
            StormTask(
                imp.cls("bolts.spend", "ClientSpentBolt"),
                conf,
                "client_spent_bolt",
                [5, 6],
                t,
                tmp_path,
            )
            for t in (5, 6)
        ]
        last_ctr, last_spend, acked, failed = {}, {}, [], []
        while True:
            try:
                (emit,) = spout.command({"command": "next"}, emits=True)
            except StopIteration:
                break
            (reply,) = parse.command(tuple_msg(str(emit["id"]), "ad_log_spout", 1, emit["tuple"]))
            (acked if reply["command"] == "ack" else failed).append(emit["id"])
            spout.command({"command": reply["command"], "id": emit["id"]})
            for values in reply.get("emits", []):
                task = ctr[_crc_task(values[2], 2)]
                (out,) = task.command(tuple_msg("p", "parse_bolt", 2, values), emits=True)["emits"]
                last_ctr[out[0]] = tuple(out[1:])
                task = spent[_crc_task(values[1], 2)]
                (out,) = task.command(tuple_msg("p", "parse_bolt", 2, values), emits=True)["emits"]
                last_spend[out[0]] = out[1]
        oracle = expected.compute(expected.generated_lines(11, 3000, malformed_rate=0.02))
        assert last_ctr == {ad: tuple(t) for ad, t in oracle.ctr_by_ad.items()}
        assert last_spend == oracle.spend_by_advertiser
        assert len(failed) == oracle.malformed > 0 and len(acked) == oracle.counted
        assert spout.instance.failed == oracle.malformed


def test_adclicks_spout_splits_input_by_task_and_reads_files(tmp_path):
    path = tmp_path / "day.jsonl"
    lines = _lines(seed=5, events=101)
    path.write_text("".join(line + "\n" for line in lines))
    conf = {"adclicks.path": str(path), "pystorm.log.path": str(tmp_path)}
    with ExampleImport(ADCLICKS) as imp:
        cls = imp.cls("spouts.adlog", "AdLogSpout")
        got = {}
        for task_id in (7, 8):
            spout = StormTask(cls, conf, "ad_log_spout", [7, 8], task_id, tmp_path)
            got[task_id] = []
            while True:
                try:
                    (emit,) = spout.command({"command": "next"}, emits=True)
                except StopIteration:
                    break
                got[task_id].append((emit["id"], emit["tuple"][0]))
    assert got[7] == [(i, line) for i, line in enumerate(lines) if i % 2 == 0]
    assert got[8] == [(i, line) for i, line in enumerate(lines) if i % 2 == 1]


def test_wordcount_under_pystorm_counts_like_the_quickstart(tmp_path):
    conf = {"pystorm.log.path": str(tmp_path)}
    with ExampleImport(WORDCOUNT) as imp:
        spout = StormTask(
            imp.cls("spouts.words", "WordSpout"), conf, "word_spout", [3], 3, tmp_path
        )
        bolts = [
            StormTask(
                imp.cls("bolts.wordcount", "WordCountBolt"), conf, "count_bolt", [1, 2], t, tmp_path
            )
            for t in (1, 2)
        ]
        counts = {}
        for _ in range(400):
            (emit,) = spout.command({"command": "next"}, emits=True)
            word = emit["tuple"][0]
            reply = bolts[_crc_task(word, 2)].command(
                tuple_msg("w", "word_spout", 3, [word]), emits=True
            )
            ((w, n),) = reply["emits"]
            counts[w] = n
    assert counts == {"dog": 1000, "cat": 100, "zebra": 100, "elephant": 100}
