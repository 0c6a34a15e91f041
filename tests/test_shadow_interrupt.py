"""Ctrl-C / SIGTERM during a shadow ends the shadow, not only the side that was running.

Seen on ``examples/pixelcount`` without its broker: SIGTERM stopped the legacy side, and the
shadow went on to run the port (which then waited on the broker for ever). The command must
exit 130 at once, with no port run started and no verdict drawn from half a run.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

SPOUT = '''
import time

from streamparse import Bolt, Spout


class Ticks(Spout):
    outputs = ["n"]

    def initialize(self, conf, ctx):
        self.n = 0

    def next_tuple(self):
        time.sleep(0.02)  # a slow source: the run lasts until it is stopped
        self.n += 1
        self.emit([self.n % 10])


class Count(Bolt):
    outputs = ["n", "count"]

    def initialize(self, conf, ctx):
        self.counts = {}

    def process(self, tup):
        n = tup.values[0]
        self.counts[n] = self.counts.get(n, 0) + 1
        self.emit([n, self.counts[n]])
'''
TOPOLOGY = '''
from streamparse import Grouping, Topology

from parts import Count, Ticks


class Slow(Topology):
    ticks = Ticks.spec()
    count = Count.spec(inputs={ticks: Grouping.fields("n")})
'''


def test_sigterm_during_the_legacy_side_ends_the_shadow_with_130(tmp_path: Path) -> None:
    (tmp_path / "topologies").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "config.json").write_text('{"topology_specs": "topologies/"}')
    (tmp_path / "src" / "parts.py").write_text(SPOUT)
    (tmp_path / "topologies" / "slow.py").write_text(TOPOLOGY)
    proc = subprocess.Popen(
        [sys.executable, "-m", "stormshift", "shadow", str(tmp_path), "--port-engine", "local",
         "--max-tuples", "1000000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    assert proc.stderr is not None
    first = proc.stderr.readline()  # "legacy: local engine ...": the legacy side runs
    assert first.startswith("legacy:"), first
    time.sleep(2)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=max(5.0, deadline - time.monotonic()))
    assert proc.returncode == 130, out + err
    assert "port:" not in err and "SAFE TO SWITCH" not in out and "DIFFERS" not in out
    assert "Traceback" not in out + err
