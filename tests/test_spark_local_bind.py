"""A local master keeps Spark's UI and driver ports on 127.0.0.1 (issue 33.5)."""

from __future__ import annotations

import os
import stat
import urllib.request
from pathlib import Path
from typing import Any

import psutil

from stormshift.engines.spark import SparkEngine
from stormshift.engines.spark.runtime.session import local_bind_conf, loopback_ui
from stormshift.topology.loader import load_topology

ROOT = Path(__file__).resolve().parents[1]
LOOPBACK = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}


def test_cluster_masters_and_the_users_settings_are_left_alone(monkeypatch: Any) -> None:
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    assert local_bind_conf("local[2]", {}) == {"spark.driver.bindAddress": "127.0.0.1",
                                                "spark.driver.host": "127.0.0.1"}
    assert local_bind_conf("local[2]", {"spark.driver.host": "10.0.0.5"}) == {
        "spark.driver.bindAddress": "127.0.0.1"}
    assert local_bind_conf("spark://head:7077", {}) == {}
    assert local_bind_conf("yarn", {}) == {}
    for master, conf in (("spark://head:7077", {}), ("local[2]", {"spark.driver.bindAddress": "0.0.0.0"})):
        with loopback_ui(master, conf):
            assert "SPARK_LOCAL_IP" not in os.environ
    with loopback_ui("local[*]", {}):
        assert os.environ["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert "SPARK_LOCAL_IP" not in os.environ  # only while the JVM starts
    monkeypatch.setenv("SPARK_LOCAL_IP", "10.0.0.5")
    with loopback_ui("local[2]", {}):
        assert os.environ["SPARK_LOCAL_IP"] == "10.0.0.5"


def listening(pids: list[int]) -> set[tuple[str, int]]:
    found = set()
    for pid in pids:
        try:
            conns = psutil.Process(pid).net_connections(kind="inet")
        except psutil.NoSuchProcess:
            continue
        found |= {(c.laddr.ip, c.laddr.port) for c in conns if c.status == psutil.CONN_LISTEN}
    return found


def test_a_local_run_listens_on_loopback_only_and_prints_a_ui_link_that_answers(
        spark: Any, redis_url: str, namespace: str, tmp_path: Path) -> None:
    graph = load_topology(ROOT / "examples" / "wordcount")
    engine = SparkEngine(graph, checkpoint_dir=str(tmp_path / "ck"), redis_url=redis_url,
                         spark=spark, namespace=namespace, batch_max_tuples=100)
    lines: list[str] = []
    summary = engine.run(on_progress=lines.append, max_tuples=300)
    assert summary.spout_tuples == 300
    links = [line for line in lines if line.startswith("Spark UI: ")]
    assert len(links) == 1 and lines.index(links[0]) == 0, lines[:3]
    link = links[0].removeprefix("Spark UI: ")
    assert link.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(link, timeout=10) as answer:
        assert answer.status == 200

    me = psutil.Process()
    jvm = [p.pid for p in me.children(recursive=True) if "java" in p.name()]
    assert jvm, "the driver JVM is a child of this process"
    ports = listening(jvm + [p.pid for p in me.children(recursive=True)])
    assert int(link.rsplit(":", 1)[1].strip("/")) in {port for _, port in ports}
    assert ports and {ip for ip, _ in ports} <= LOOPBACK, sorted(ports)
    key = tmp_path / "ck" / "stormshift-state.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600  # (33.4: the snapshot key is private)
