"""A bolt that writes its own Redis with a hard-coded target, under shadow (issue 50 item 2).

The target cannot be changed with ``-o`` (it is written in the code), so each side's redis-py
clients are sent to a scratch server of that side's own (``stormshift/engines/external.py``,
``stormshift/shadow/scratch.py``): the real target gets 0 writes, and the two sides' writes
are compared key by key like any final state. On both port engines; the port that writes
other numbers is blamed for exactly those keys.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import redis
from click.testing import CliRunner

from stormshift.cli.shadow import shadow_command
from stormshift.shadow.findings import analyse
from stormshift.shadow.run import ShadowOptions, execute, plan_shadow
from stormshift.topology.loader import load_topology

pytestmark = pytest.mark.redis

WORDS = '''

class Words(Spout):
    outputs = ["word"]

    def initialize(self, conf, ctx):
        self.words = iter(["cat", "dog", "owl", "cat", "emu", "dog", "cat"] * 60)

    def next_tuple(self):
        self.emit([next(self.words)])
'''
BOLT = '''
import redis
from streamparse import Bolt, Spout

''' + WORDS + '''

class Board(Bolt):
    outputs = ["word", "score"]

    def initialize(self, conf, ctx):
        # hard-coded, as real projects do: no config key to point elsewhere
        self.r = redis.StrictRedis(host="127.0.0.1", port={port}, db=0)

    def process(self, tup):
        word = tup.values[0]
        self.r.hincrby("{key}:seen", word, 1)
        score = self.r.zincrby("{key}:board", {step}, word)
        self.emit([word, int(score)])
'''
TOPOLOGY = '''
from streamparse import Grouping, Topology

from parts import Board, Words


class Boards(Topology):
    words = Words.spec()
    board = Board.spec(inputs={words: Grouping.fields("word")}, par=2)
'''


def write_project(root: Path, parts: str, name: str, topology: str) -> Path:
    """A streamparse project at ``root``: ``src/parts.py`` and ``topologies/NAME.py``."""
    (root / "topologies").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "config.json").write_text('{"topology_specs": "topologies/"}')
    (root / "src" / "parts.py").write_text(parts)
    (root / "topologies" / f"{name}.py").write_text(topology)
    return root


def project(root: Path, key: str, port: int, step: int = 1) -> Path:
    return write_project(root, BOLT.format(port=port, key=key, step=step), "boards", TOPOLOGY)


@pytest.fixture
def real_target(redis_url: str) -> Any:
    """The production Redis the bolt hard-codes (the suite's server) and a key no one else
    uses; the test asserts the shadow never wrote it."""
    client = redis.Redis.from_url(redis_url)
    key = f"t-hardcoded-{uuid.uuid4().hex[:10]}"
    yield client, key
    for k in client.scan_iter(match=f"{key}*"):
        client.delete(k)


def test_hardcoded_target_is_never_written_and_both_sides_writes_are_compared(
        tmp_path: Path, real_target: Any) -> None:
    client, key = real_target
    path = project(tmp_path / "legacy", key, client.connection_pool.connection_kwargs["port"])
    done = CliRunner().invoke(shadow_command, [str(path), "--port-engine", "local",
                                               "--max-tuples", "400", "--json"])
    assert done.exit_code == 0, done.output
    assert list(client.scan_iter(match=f"{key}*")) == []  # 0 writes to the real target
    import json

    doc = json.loads(done.output)
    (board,) = [s for s in doc["state"] if s["state"] == "board.redis"]
    # 4 words in the hash and in the sorted set, each a key of its own
    assert board["legacy_keys"] == board["port_keys"] == board["same"] == 8, board


def test_a_port_that_writes_other_numbers_is_blamed_for_those_keys(
        tmp_path: Path, real_target: Any) -> None:
    client, key = real_target
    port_number = client.connection_pool.connection_kwargs["port"]
    legacy = project(tmp_path / "legacy", key, port_number)
    port = project(tmp_path / "port", key, port_number, step=2)
    done = CliRunner(env={"COLUMNS": "200"}).invoke(
        shadow_command, [str(legacy), "--port", str(port), "--port-engine", "local",
                         "--max-tuples", "400"])
    assert done.exit_code == 1, done.output  # PORT DIFFERS
    assert "PORT DIFFERS" in done.output
    assert f"{key}:board[cat]" in done.output  # the member that differs, named
    assert list(client.scan_iter(match=f"{key}*")) == []


@pytest.mark.spark
def test_the_port_on_spark_writes_its_own_scratch_redis_too(
        tmp_path: Path, real_target: Any, spark: Any, redis_url: str) -> None:
    client, key = real_target
    path = project(tmp_path / "legacy", key, client.connection_pool.connection_kwargs["port"])
    options = ShadowOptions(port_engine="spark", spark=spark, redis_url=redis_url,
                            namespace=f"t-shadow-{uuid.uuid4().hex[:8]}", max_tuples=400,
                            findings=analyse(path), batch_max_tuples=100)
    result = execute(plan_shadow(load_topology(path), options))
    assert result.verdict.exit_code == 0, result.verdict.line
    (board,) = [s for s in result.states if s.label == "board.redis"]
    assert board.legacy_keys == board.port_keys == board.same == 8
    assert list(client.scan_iter(match=f"{key}*")) == []


FILE_BOLT = '''
import json
from pathlib import Path

from streamparse import Bolt, Spout

''' + WORDS + '''

class Audit(Bolt):
    outputs = ["word", "n"]

    def initialize(self, conf, ctx):
        self.counts = {{}}
        # hard-coded production files, as real projects write them
        self.out = open("{target}/audit.log", "a")

    def process(self, tup):
        word = tup.values[0]
        self.counts[word] = self.counts.get(word, 0) + {step}
        self.out.write(json.dumps({{"word": word, "n": self.counts[word]}}) + "\\n")
        self.out.flush()
        Path("{target}/last-" + word + ".txt").write_text(str(self.counts[word]))
        self.emit([word, self.counts[word]])
'''
FILE_TOPOLOGY = '''
from streamparse import Grouping, Topology

from parts import Audit, Words


class Audits(Topology):
    words = Words.spec()
    audit = Audit.spec(inputs={words: Grouping.fields("word")}, par=2)
'''


def file_project(root: Path, target: Path, step: int = 1) -> Path:
    return write_project(root, FILE_BOLT.format(target=target, step=step), "audits",
                         FILE_TOPOLOGY)


def test_hardcoded_files_are_never_written_and_both_sides_lines_are_compared(
        tmp_path: Path) -> None:
    target = tmp_path / "production"
    target.mkdir()
    (target / "audit.log").write_text("yesterday's line\n")
    path = file_project(tmp_path / "legacy", target)
    done = CliRunner().invoke(shadow_command, [str(path), "--port-engine", "local",
                                               "--max-tuples", "400", "--json"])
    assert done.exit_code == 0, done.output
    # the real files: untouched (no line appended, no file created)
    assert sorted(p.name for p in target.iterdir()) == ["audit.log"]
    assert (target / "audit.log").read_text() == "yesterday's line\n"
    import json

    doc = json.loads(done.output)
    (files,) = [s for s in doc["state"] if s["state"] == "audit.files"]
    # 400 audit lines (each distinct: a word and its running count) + 4 last-WORD.txt lines
    assert files["legacy_keys"] == files["port_keys"] == files["same"] == 404, files
    assert any("scratch directory" in w for w in doc["warnings"]), doc["warnings"]


def test_a_port_that_writes_other_lines_is_blamed_for_those_lines(tmp_path: Path) -> None:
    target = tmp_path / "production"
    target.mkdir()
    legacy = file_project(tmp_path / "legacy", target)
    port = file_project(tmp_path / "port", target, step=2)
    done = CliRunner(env={"COLUMNS": "200"}).invoke(
        shadow_command, [str(legacy), "--port", str(port), "--port-engine", "local",
                         "--max-tuples", "400"])
    assert done.exit_code == 1, done.output
    assert "PORT DIFFERS" in done.output and "audit.files" in done.output
    assert list(target.iterdir()) == []


@pytest.mark.spark
def test_the_port_on_spark_writes_its_own_scratch_files_too(
        tmp_path: Path, spark: Any, redis_url: str) -> None:
    target = tmp_path / "production"
    target.mkdir()
    path = file_project(tmp_path / "legacy", target)
    options = ShadowOptions(port_engine="spark", spark=spark, redis_url=redis_url,
                            namespace=f"t-shadow-{uuid.uuid4().hex[:8]}", max_tuples=400,
                            findings=analyse(path), batch_max_tuples=100)
    result = execute(plan_shadow(load_topology(path), options))
    assert result.verdict.exit_code == 0, result.verdict.line
    (files,) = [s for s in result.states if s.label == "audit.files"]
    assert files.legacy_keys == files.port_keys == files.same == 404
    assert list(target.iterdir()) == []


def test_a_raw_http_client_write_still_refuses_and_says_it_cannot_be_redirected(
        tmp_path: Path) -> None:
    root = tmp_path / "legacy"
    file_project(root, tmp_path)
    parts = root / "src" / "parts.py"
    parts.write_text(parts.read_text().replace(
        "import json\n", "import http.client\nimport json\n").replace(
        "        self.emit([word, self.counts[word]])",
        "        http.client.HTTPConnection('billing.internal').request('POST', '/hits', word)\n"
        "        self.emit([word, self.counts[word]])"))
    done = CliRunner(env={"COLUMNS": "200"}).invoke(
        shadow_command, [str(root), "--port-engine", "local", "--max-tuples", "50"])
    assert done.exit_code == 2, done.output
    assert "HTTP through http.client cannot be redirected" in done.output
    assert "audit.log" not in done.output  # the file writes are redirected, not refused


CALL_BOLT = '''
import confluent_kafka
import requests
from confluent_kafka import Producer
from streamparse import Bolt, Spout

''' + WORDS + '''

class Billing(Bolt):
    outputs = ["word", "n"]

    def initialize(self, conf, ctx):
        self.counts = {{}}
        self.http = requests.Session()
        # hard-coded production targets, as real projects write them
        self.producer = Producer({{"bootstrap.servers": "127.0.0.1:{kafka_port}"}})
        self.other = confluent_kafka.Producer({{"bootstrap.servers": "127.0.0.1:{kafka_port}"}})
        self.delivered = 0

    def _done(self, err, msg):
        self.delivered += 1

    def process(self, tup):
        word = tup.values[0]
        self.counts[word] = self.counts.get(word, 0) + {step}
        self.http.post("http://127.0.0.1:{http_port}/hits", json={{"word": word, "n": self.counts[word]}})
        requests.get("http://127.0.0.1:{http_port}/rate")  # a read: it goes out
        self.producer.produce("hits", value=word.encode(), key=word, on_delivery=self._done)
        self.producer.poll(0)
        self.other.produce("audit", word.encode())
        self.emit([word, self.counts[word]])
'''
CALL_TOPOLOGY = FILE_TOPOLOGY.replace("Audit", "Billing").replace("audit", "billing")


@pytest.fixture
def production_http() -> Any:
    """A real HTTP server standing for production: it counts what reaches it by method."""
    import http.server
    import threading
    from collections import Counter

    seen: Counter[str] = Counter()

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            seen[self.command] += 1
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        do_GET = do_POST = _answer

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], seen
    server.shutdown()


def call_project(root: Path, http_port: int, step: int = 1) -> Path:
    parts = CALL_BOLT.format(http_port=http_port, kafka_port=1, step=step)
    return write_project(root, parts, "billing", CALL_TOPOLOGY)


def test_http_posts_and_kafka_produces_are_recorded_per_side_and_never_sent(
        tmp_path: Path, production_http: Any) -> None:
    port, seen = production_http
    path = call_project(tmp_path / "legacy", port)
    done = CliRunner().invoke(shadow_command, [str(path), "--port-engine", "local",
                                               "--max-tuples", "400", "--json"])
    assert done.exit_code == 0, done.output
    assert seen["POST"] == 0  # production got no write
    assert seen["GET"] == 800  # the reads went out, on both sides
    import json

    doc = json.loads(done.output)
    states = {s["state"]: s for s in doc["state"]}
    # 400 distinct posts (a word and its running count); kafka: 4 words x 2 topics
    assert states["billing.http"]["legacy_keys"] == states["billing.http"]["same"] == 400
    assert states["billing.kafka"]["legacy_keys"] == states["billing.kafka"]["same"] == 8
    assert states["billing.counts"]["same"] == 4


def test_a_port_that_posts_other_bodies_is_blamed_for_those_requests(
        tmp_path: Path, production_http: Any) -> None:
    port, seen = production_http
    legacy = call_project(tmp_path / "legacy", port)
    ported = call_project(tmp_path / "port", port, step=2)
    done = CliRunner(env={"COLUMNS": "200"}).invoke(
        shadow_command, [str(legacy), "--port", str(ported), "--port-engine", "local",
                         "--max-tuples", "400"])
    assert done.exit_code == 1, done.output
    assert "billing.http" in done.output and "PORT DIFFERS" in done.output
    assert seen["POST"] == 0


@pytest.mark.spark
def test_the_port_on_spark_records_its_http_and_kafka_writes_too(
        tmp_path: Path, production_http: Any, spark: Any, redis_url: str) -> None:
    port, seen = production_http
    path = call_project(tmp_path / "legacy", port)
    options = ShadowOptions(port_engine="spark", spark=spark, redis_url=redis_url,
                            namespace=f"t-shadow-{uuid.uuid4().hex[:8]}", max_tuples=400,
                            findings=analyse(path), batch_max_tuples=100)
    result = execute(plan_shadow(load_topology(path), options))
    states = {s.label: s for s in result.states}
    assert result.verdict.exit_code == 0, result.verdict.line
    assert states["billing.http"].port_keys == states["billing.http"].same == 400
    assert states["billing.kafka"].port_keys == states["billing.kafka"].same == 8
    assert seen["POST"] == 0
