"""STORMSHIFT_PROFILE: a profiled task yields exactly what it would, and says where time went."""

from __future__ import annotations

import json
import pstats

from stormshift.engines.spark.diagnostics.profiling import profiled


def _work(n: int):
    for i in range(n):
        yield sum(range(i * 100))


def test_off_by_default_returns_the_generator_itself(monkeypatch):
    monkeypatch.delenv("STORMSHIFT_PROFILE", raising=False)
    gen = _work(3)
    assert profiled("stage-1-x", gen) is gen


def test_time_mode_records_wall_and_cpu_and_keeps_items(monkeypatch, tmp_path):
    monkeypatch.setenv("STORMSHIFT_PROFILE", str(tmp_path))
    monkeypatch.setenv("STORMSHIFT_PROFILE_MODE", "time")
    assert list(profiled("stage-7-parse_bolt", _work(50))) == list(_work(50))
    (line,) = (tmp_path / "tasks.jsonl").read_text().splitlines()
    record = json.loads(line)
    assert record["label"] == "stage-7-parse_bolt"
    assert record["wall_s"] >= record["cpu_s"] * 0.5 > 0
    assert not list(tmp_path.glob("*.prof"))


def test_cprofile_mode_writes_a_loadable_profile(monkeypatch, tmp_path):
    monkeypatch.setenv("STORMSHIFT_PROFILE", str(tmp_path))
    monkeypatch.delenv("STORMSHIFT_PROFILE_MODE", raising=False)
    assert list(profiled("source-spout", _work(20))) == list(_work(20))
    (prof,) = tmp_path.glob("source-spout-*.prof")
    stats = pstats.Stats(str(prof))
    assert any(func[2] == "_work" for func in stats.stats)
