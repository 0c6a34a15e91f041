"""Redis outages during ``stormshift run``: the fault harness's cases, with the console kept.

``test_redis_outage.py`` needs what ``fault_harness.Case`` drops: the whole stderr of
each run (no stack trace may reach the console; the driver's outage lines must), a
chosen restart delay of the killed server (long enough for the driver's once-a-second
ping to see the outage), a server that stays down (the bound), and kills at seeded
moments of a run rather than at fault points (``Killer``).
"""

from __future__ import annotations

import os
import random
import re
import signal
import threading
import time
from pathlib import Path
from typing import Any

import redis

from support.fault_harness import Case, Outcome, SupervisedRedis

DOWN = re.compile(r"^Redis at \S+ unreachable \(", re.MULTILINE)
BACK = re.compile(r"^Redis at \S+ is back after \d+\.\d s down$", re.MULTILINE)
#: what a stack trace looks like on a console: Python's and the JVM's
TRACES = ("Traceback (most recent call last)", "\tat org.", "\tat java.", "Caused by:")


class SturdyRedis(SupervisedRedis):
    """A supervised server whose start is tried again when the exec itself failed
    (seen once on a loaded machine: ``OSError: [Errno 14] Bad address`` from Popen)."""

    def start(self) -> None:
        for attempt in range(3):
            try:
                return super().start()
            except OSError:
                if attempt == 2:
                    raise
                time.sleep(0.5)


class OutageCase(Case):
    """A ``Case`` whose Redis comes back after ``restart_delay`` s (or never: None), and
    whose runs' whole stdout/stderr are kept in ``outputs``."""

    def __init__(self, *args: Any, restart_delay: float | None = 3.0, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.restart_delay = restart_delay
        self.redis = SturdyRedis(restart_delay=restart_delay or 0.0)
        self.outputs: list[tuple[int, str, str]] = []
        self.started = 0.0

    def _once(self) -> tuple[int, str, str]:
        self.started = time.monotonic()
        code, stdout, stderr = super()._once()
        self.outputs.append((code, stdout, stderr))
        (self.tmp / f"run-{len(self.outputs)}.stderr").write_text(stderr, encoding="utf-8")
        return code, stdout, stderr

    def run(self) -> Outcome:
        if self.restart_delay is not None:
            return super().run()
        return self.run_until_the_bound()

    def run_until_the_bound(self) -> Outcome:
        """One run against a server killed for good by its fault (never supervised); then
        the server back (same port, same appendonly dir) and the same command again, to
        the end: the first run's exit, the second's results."""
        self.redis.start()
        out = Outcome()
        try:
            for _ in range(2):
                out.runs += 1
                code, _stdout, stderr = self._once()
                out.exit_codes.append(code)
                out.logs.append(stderr[-4000:])
                if self.redis.proc is None or self.redis.proc.poll() is not None:
                    self.redis.start()  # "rerun the same command when Redis is back"
            self._collect(out)
        finally:
            self.redis.close()
        return out

    @property
    def stderr(self) -> str:
        return "\n".join(err for _code, _out, err in self.outputs)


class Killer:
    """SIGKILLs the case's redis-server at seeded moments: after the run committed batch
    ``after[i]``, plus a seeded 0..1.5 s; the supervisor restarts it."""

    def __init__(self, case: OutageCase, after: list[int], seed: int):
        self.case, self.after = case, after
        self.rng = random.Random(seed)
        self.killed: list[tuple[int, float]] = []  # (committed seen, seconds into the run)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="redis-killer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _committed(self) -> int:
        from stormshift.state.commit import CommitLog

        try:
            r = redis.Redis.from_url(self.case.redis.url, socket_timeout=1, retry=None)
            return CommitLog(r, self.case.namespace).committed()
        except redis.RedisError:
            return -2

    def _loop(self) -> None:
        for target in self.after:
            while not self._stop.is_set() and self._committed() < target:
                time.sleep(0.05)
            if self._stop.wait(self.rng.uniform(0.0, 1.5)):
                return
            pid = int(self.case.redis.pidfile.read_text().strip())
            os.kill(pid, signal.SIGKILL)
            self.killed.append((target, time.monotonic() - self.case.started))
            while not self._stop.is_set() and self.case.redis.restarts < len(self.killed):
                time.sleep(0.05)  # the supervisor brought it back before the next one


def outage_log(case: Case) -> str:
    """The workers', planner's and hosts' outage lines (``STORMSHIFT_REDIS_OUTAGE_LOG``)."""
    path = Path(case.checkpoint) / "stormshift-redis-outages.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""
