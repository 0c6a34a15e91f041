"""The live shadow (stormshift/shadow/live.py, legacy_outputs.py, ``stormshift compare --live``).

Unit tier: the ``shadow.legacy`` mapping language and its errors, extractors on
hand-made records, window bounds, and whole live compares over JSON-lines
outputs on both sides (files only). Spark tier: the legacy topology of
``tests/fixtures/live`` runs on the local engine and writes spend per
advertiser into Redis hashes as a Storm shop's last bolt does; the port runs
on Spark under a shadow namespace, reading the same Redis Stream, into a
Redis Stream sink; the live compare agrees, then reports a value changed in
the legacy's hash by its key.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from stormshift.cli import cli
from stormshift.errors import StormshiftError
from stormshift.shadow.compare import DivergenceKind
from stormshift.shadow.extractors import LegacyMappingError, Record, parse_extractor
from stormshift.shadow.legacy_outputs import glob_regex, parse_mappings
from stormshift.shadow.live import LIVE_DIFFERENCE, Window, compare_live, parse_when
from stormshift.shadow.results import result_specs
from stormshift.topology.loader import load_topology

LIVE = Path(__file__).resolve().parent / "fixtures" / "live"
DAY_MS = 86_400_000
T0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z
ADVERTISERS = [f"adv-{i}" for i in range(7)]


def events(n: int = 300) -> list[dict[str, Any]]:
    """Deterministic ad events over three days (costs in micro-dollars)."""
    return [{"advertiser_id": ADVERTISERS[(i * 5) % 7], "cost": 1000 + (i * 37) % 900,
             "ts": T0 + i * (3 * DAY_MS // n)} for i in range(n)]


def expected_spend(evs: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for e in evs:
        out[e["advertiser_id"]] = out.get(e["advertiser_id"], 0) + e["cost"]
    return out


def port_graph(**overrides: Any) -> Any:
    return load_topology(LIVE, name="port", overrides=overrides or None)


def specs() -> list[Any]:
    return result_specs(port_graph())


# -- the mapping language ------------------------------------------------------------------
def test_mapping_of_the_fixture_reads_hash_fields_and_json_values() -> None:
    (mapping,) = parse_mappings(port_graph().config, specs()).values()
    assert (mapping.source, mapping.target, mapping.label) == (
        "redis_hash", "spend:*", "spend_bolt:default")
    record = Record("spend:2024-05-02", '{"spend": 1234, "ts": 1714600000000}', "adv-3",
                    ("2024-05-02",))
    assert mapping.row(record) == (1714600000000, ["adv-3", 1234, 1714600000000])


def test_extractors_sources_and_casts() -> None:
    rec = Record("spend:eu:adv-1", "12.5", None, ("eu", "adv-1"), write_ms=7)
    assert parse_extractor("*2", "x").apply(rec) == "adv-1"
    assert parse_extractor("*", "x").apply(rec) == "eu"
    assert parse_extractor("value", "x").apply(rec) == 12.5  # a JSON number becomes a number
    assert parse_extractor("value|text", "x").apply(rec) == "12.5"
    assert parse_extractor("value|int", "x").apply(Record("k", "42")) == 42
    assert parse_extractor("name", "x").apply(rec) == "spend:eu:adv-1"
    nested = Record("k", '{"t": {"s": 1714521600}, "a": [5, 6]}')
    assert parse_extractor("json:t.s|s", "x").apply(nested) == T0
    assert parse_extractor("json:a.1", "x").apply(nested) == 6
    assert parse_extractor("json:a", "x").apply(nested) == [5, 6]
    assert parse_extractor("value|iso", "x").apply(Record("k", "2024-05-01T00:00:00Z")) == T0
    with pytest.raises(LegacyMappingError, match=r"legacy record k = .*json:b.*no 'b'"):
        parse_extractor("json:b", "x").apply(nested)
    with pytest.raises(LegacyMappingError, match="not JSON"):
        parse_extractor("json:a", "x").apply(Record("k", "oops"))
    with pytest.raises(LegacyMappingError, match="cast int failed"):
        parse_extractor("value|int", "x").apply(Record("k", "ten"))


def test_glob_pattern_groups_per_wildcard() -> None:
    assert glob_regex("spend:*:day-*").fullmatch("spend:eu:day-3").groups() == ("eu", "3")  # type: ignore[union-attr]
    assert glob_regex("a?[bc]").fullmatch("axc") is not None
    assert glob_regex("a.b*").fullmatch("aXb1") is None  # '.' is literal


@pytest.mark.parametrize(("entry", "message"), [
    (None, "shadow.legacy is missing.*fix: -o 'shadow.legacy="),
    ({"nope:default": {"redis_hash": "x"}},
     r"'nope:default', which is not a leaf stream.*\['spend_bolt:default'\]"),
    ({"spend_bolt": "spend:*"}, "must be an object"),
    ({"spend_bolt": {"key": "field"}}, "names no source.*exactly one of"),
    ({"spend_bolt": {"redis_hash": "a", "jsonl": "b"}}, r"names \['redis_hash', 'jsonl'\]"),
    ({"spend_bolt": {"redis_hash": "s:*", "valeu": "value"}}, r"unknown keys \['valeu'\]"),
    ({"spend_bolt": {"redis_hash": "s:*", "value": ["json:spend", "json:ts"]}},
     r"gives 2 extractor\(s\).*port's 1 value field\(s\) \['spend'\]"),
    ({"spend_bolt": {"redis_key": "s:*:*"}}, "key is required here.*advertiser_id"),
    ({"spend_bolt": {"redis_key": "s:*", "key": "field"}}, "'field' reads a hash field"),
    ({"spend_bolt": {"redis_hash": "s:*", "key": "*2"}}, r"needs 2 '\*'.*which has 1"),
    ({"spend_bolt": {"redis_hash": "s:*", "value": "json:spend|decimal"}},
     "cast 'decimal'.*not one of"),
    ({"spend_bolt": {"redis_hash": "s:*", "value": "spend"}},
     "'spend' in 'spend' is no extractor source"),
])
def test_mapping_errors_say_what_to_fix(entry: Any, message: str) -> None:
    config = {**port_graph().config, "shadow.legacy": entry}
    with pytest.raises(LegacyMappingError, match=message):
        parse_mappings(config, specs())


# -- window ------------------------------------------------------------------------------
def test_window_bounds_from_durations_ms_and_iso() -> None:
    now = T0 + DAY_MS
    assert parse_when("1h", now) == now - 3_600_000
    assert parse_when("90s", now) == now - 90_000
    assert parse_when("now", now) == now
    assert parse_when(str(T0), now) == T0
    assert parse_when("2024-05-01T02:00:00+02:00", now) == T0
    assert parse_when(None, now) is None
    for bad in ("yesterday", "2024-05-01T00:00:00"):  # naive datetimes are refused
        with pytest.raises(StormshiftError, match="ISO-8601 with a zone"):
            parse_when(bad, now)
    window = Window(T0, T0 + 10)
    assert [window.keeps(t) for t in (T0 - 1, T0, T0 + 9, T0 + 10, None)] == [
        False, True, True, False, True]
    with pytest.raises(StormshiftError, match="window is empty"):
        Window(T0, T0)


# -- a whole live compare over JSON lines (no Redis) ------------------------------------------
def write_port_sink(root: Path, evs: list[dict[str, Any]], batch: int = 100) -> None:
    """The jsonl sink's layout the Spark engine writes (<component>/<stream>/<txid>-<task>)."""
    folder = root / "spend_bolt" / "default"
    folder.mkdir(parents=True)
    spend: dict[str, int] = {}
    for txid in range(0, len(evs), batch):
        lines = []
        for e in evs[txid:txid + batch]:
            spend[e["advertiser_id"]] = spend.get(e["advertiser_id"], 0) + e["cost"]
            lines.append(json.dumps([e["advertiser_id"], spend[e["advertiser_id"]], e["ts"]]))
        (folder / f"{txid // batch:012d}-0002.jsonl").write_text("\n".join(lines) + "\n")


def write_legacy_jsonl(path: Path, evs: list[dict[str, Any]]) -> None:
    """A legacy bolt appending its running totals as JSON objects."""
    spend: dict[str, int] = {}
    with path.open("w") as fh:
        for e in evs:
            spend[e["advertiser_id"]] = spend.get(e["advertiser_id"], 0) + e["cost"]
            fh.write(json.dumps({"adv": e["advertiser_id"], "total": spend[e["advertiser_id"]],
                                 "at": e["ts"] / 1000}) + "\n")


JSONL_MAPPING = {"spend_bolt": {"jsonl": "", "key": "json:adv", "value": "json:total",
                                "event_time": "json:at|s"}}


def jsonl_mapping(path: Path) -> dict[str, Any]:
    return {"spend_bolt": {**JSONL_MAPPING["spend_bolt"], "jsonl": str(path)}}


def test_live_compare_of_json_lines_agrees_then_reports_the_changed_key(tmp_path: Path) -> None:
    evs = events()
    write_port_sink(tmp_path / "sink", evs)
    legacy = tmp_path / "legacy" / "spend.jsonl"
    legacy.parent.mkdir()
    write_legacy_jsonl(legacy, evs)
    agreed = compare_live(port_graph(), port_sink=f"jsonl:{tmp_path / 'sink'}",
                          legacy=jsonl_mapping(legacy.parent))
    (stream,) = agreed.streams
    assert agreed.exit_code == 0 and stream.same == len(ADVERTISERS) and not agreed.warnings
    changed = [e if i != 250 else {**e, "cost": e["cost"] + 1} for i, e in enumerate(evs)]
    write_legacy_jsonl(legacy, changed)
    result = compare_live(port_graph(), port_sink=f"jsonl:{tmp_path / 'sink'}",
                          legacy=jsonl_mapping(legacy))
    (d,) = result.streams[0].divergences
    assert result.exit_code == 1
    assert (d.key, d.kind, d.cause) == (evs[250]["advertiser_id"], DivergenceKind.VALUE_DIFFERS,
                                        LIVE_DIFFERENCE)
    assert d.legacy[0] - d.port[0] == 1 and d.event_time == evs[250]["ts"]


def test_window_leaves_out_keys_in_flight_while_the_port_lags(tmp_path: Path) -> None:
    """The legacy keeps the latest value per key (one line per key here, like a hash); the
    port has not yet processed b's last event: --until before it compares the settled keys."""
    legacy = tmp_path / "state.jsonl"
    legacy.write_text("\n".join(json.dumps(r) for r in (
        {"adv": "a", "total": 5, "at": (T0 + 1000) / 1000},
        {"adv": "b", "total": 9, "at": (T0 + 9000) / 1000},
        {"adv": "c", "total": 2, "at": (T0 - DAY_MS) / 1000})) + "\n")
    write_port_sink(tmp_path / "sink", [
        {"advertiser_id": "c", "cost": 2, "ts": T0 - DAY_MS},
        {"advertiser_id": "a", "cost": 5, "ts": T0 + 1000},
        {"advertiser_id": "b", "cost": 4, "ts": T0 + 2000}])
    run = {"port_sink": f"jsonl:{tmp_path / 'sink'}", "legacy": jsonl_mapping(legacy)}
    lagging = compare_live(port_graph(), **run)
    assert [d.key for d in lagging.streams[0].divergences] == ["b"]
    settled = compare_live(port_graph(), **run, since=str(T0), until=str(T0 + 5000))
    (stream,) = settled.streams
    assert settled.exit_code == 0 and stream.same == 1  # a; b in flight; c before the window
    assert "1 keys written at or after the window's end" in settled.warnings[0]


def test_command_exit_codes_json_and_report(tmp_path: Path) -> None:
    evs = events()
    write_port_sink(tmp_path / "sink", evs)
    legacy = tmp_path / "spend.jsonl"
    write_legacy_jsonl(legacy, [{**e, "cost": e["cost"] * 2} if i == 3 else e
                                for i, e in enumerate(evs)])
    base = ["compare", str(LIVE), "-n", "port", "--live", "--port-sink",
            f"jsonl:{tmp_path / 'sink'}", "-o", f"shadow.legacy={json.dumps(jsonl_mapping(legacy))}"]
    runner = CliRunner()
    done = runner.invoke(cli, [*base, "--json", "--report", str(tmp_path / "live.html")])
    assert done.exit_code == 1, done.output
    doc = json.loads(done.output)
    assert doc["live"] is True and doc["streams"][0]["divergences"][0]["key"] == \
        evs[3]["advertiser_id"]
    html = (tmp_path / "live.html").read_text(encoding="utf-8")
    assert "spend_bolt:default" in html and "production topology" in html
    text = runner.invoke(cli, [*base, "--since", "2024-05-02T00:00:00Z"])
    assert text.exit_code == 1 and "PORT DIFFERS" in text.output and "live" in text.output
    assert max(len(line) for line in text.output.splitlines()) <= 80


@pytest.mark.parametrize(("extra", "message"), [
    (["-o", 'shadow.legacy={"spend_bolt": {"redis_hash": "s:*", "key": "*3"}}'],
     r"needs 3 '\*'"),
    (["-o", "shadow.legacy=null"], "shadow.legacy is missing"),
    (["--since", "last tuesday"], "is not understood"),
    (["--port-sink", "kafka:x"], "--port-sink 'kafka:x'"),
])
def test_command_config_errors_exit_2_before_reading_anything(extra: list[str],
                                                              message: str) -> None:
    done = CliRunner().invoke(cli, ["compare", str(LIVE), "-n", "port", "--live",
                                    "--port-sink", "jsonl:/nonexistent", *extra])
    assert done.exit_code == 2, done.output
    assert "Error:" in done.output and re.search(message, done.output), done.output


def test_compare_without_live_is_a_usage_error() -> None:
    done = CliRunner().invoke(cli, ["compare", str(LIVE), "-n", "port", "--port-sink", "jsonl:x"])
    assert done.exit_code == 2 and "--live" in done.output


def test_run_takes_a_shadow_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    from stormshift import runner

    seen: dict[str, Any] = {}

    def fake(graph: Any, options: Any, progress: Any = None) -> Any:
        seen["options"] = options
        raise StormshiftError("stop here")

    monkeypatch.setattr(runner, "run_topology", fake)
    done = CliRunner().invoke(cli, ["run", str(LIVE), "-n", "port", "--namespace", "shadow-port",
                                    "--sink", "redis:shadow:spend"])
    assert seen["options"].namespace == "shadow-port", done.output
    assert seen["options"].sink == "redis:shadow:spend"


# -- Spark: legacy writes Redis hashes, the port runs beside it -------------------------------
@pytest.fixture
def live_run(spark: Any, redis_url: str, namespace: str, tmp_path: Path) -> Any:
    """The legacy (local engine) and the port (Spark, shadow namespace) on one Redis Stream."""
    import redis

    from stormshift.engines.local import LocalEngine
    from stormshift.engines.spark import SparkEngine

    client = redis.Redis.from_url(redis_url)
    stream = f"{namespace}:events"
    evs = events()
    for i, e in enumerate(evs):
        client.xadd(stream, {"payload": json.dumps(e)}, id=f"{1000 + i}-0")
    source = {"redis_streams.keys": [stream], "redis_streams.url": redis_url,
              "redis_streams.bounded": True}
    legacy_graph = load_topology(LIVE, name="legacy", overrides={
        **source, "live.redis_url": redis_url, "live.hash_prefix": f"{namespace}:spend:"})
    LocalEngine(legacy_graph).run()
    hashes = sorted(k.decode() for k in client.scan_iter(match=f"{namespace}:spend:*"))
    before = {k: client.hgetall(k) for k in hashes}
    sink = f"{namespace}:port-out"
    port = port_graph(**source)
    summary = SparkEngine(port, spark=spark, redis_url=redis_url, namespace=f"shadow-{namespace}",
                          checkpoint_dir=str(tmp_path / "checkpoint"), sink=f"redis:{sink}",
                          until_done=True, batch_max_tuples=120).run()
    assert summary.total("dead_lettered") == 0
    assert {k: client.hgetall(k) for k in hashes} == before  # the port never wrote them
    mapping = {"spend_bolt:default": {"redis_hash": f"{namespace}:spend:*", "key": "field",
                                      "value": "json:spend", "event_time": "json:ts"}}
    return port, client, evs, hashes, sink, mapping


@pytest.mark.spark
@pytest.mark.redis
def test_live_compare_agrees_then_reports_a_changed_hash_value(live_run: Any,
                                                               redis_url: str) -> None:
    port, client, evs, hashes, sink, mapping = live_run
    assert [h.rsplit(":", 1)[1] for h in hashes] == ["2024-05-01", "2024-05-02", "2024-05-03"]
    result = compare_live(port, port_sink=f"redis:{sink}", redis_url=redis_url, legacy=mapping)
    (stream,) = result.streams
    assert result.exit_code == 0, [d.to_dict() for d in stream.divergences]
    assert stream.same == len(ADVERTISERS) and stream.port_emits == len(evs)
    latest = {}
    for h in hashes:  # the legacy's own view of the result: the latest day's total
        for adv, raw in client.hgetall(h).items():
            latest[adv.decode()] = json.loads(raw)["spend"]
    assert latest == expected_spend(evs)
    since_day2 = compare_live(port, port_sink=f"redis:{sink}", redis_url=redis_url,
                              legacy=mapping, since="2024-05-02T00:00:00Z")
    assert since_day2.exit_code == 0 and since_day2.streams[0].legacy_emits < stream.legacy_emits

    victim = "adv-3"
    raw = json.loads(client.hget(hashes[-1], victim))
    client.hset(hashes[-1], victim, json.dumps({**raw, "spend": raw["spend"] + 500}))
    done = CliRunner().invoke(cli, [
        "compare", str(LIVE), "-n", "port", "--live", "--port-sink", f"redis:{sink}",
        "--redis", redis_url, "-o", f"shadow.legacy={json.dumps(mapping)}", "--json"])
    assert done.exit_code == 1, done.output
    (d,) = json.loads(done.output)["streams"][0]["divergences"]
    assert (d["key"], d["kind"], d["legacy"], d["port"]) == (
        victim, "value differs", [raw["spend"] + 500], [raw["spend"]])


@pytest.mark.spark
@pytest.mark.redis
def test_live_compare_mapping_error_against_real_outputs_exits_2(live_run: Any,
                                                                  redis_url: str) -> None:
    _, _, _, _, sink, mapping = live_run
    wrong = {"spend_bolt": {**mapping["spend_bolt:default"], "value": "json:amount"}}
    done = CliRunner().invoke(cli, [
        "compare", str(LIVE), "-n", "port", "--live", "--port-sink", f"redis:{sink}",
        "--redis", redis_url, "-o", f"shadow.legacy={json.dumps(wrong)}"])
    assert done.exit_code == 2, done.output
    assert "extractor 'json:amount': it has no 'amount'" in done.output
