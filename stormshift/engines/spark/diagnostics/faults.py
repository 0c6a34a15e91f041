"""Fault injection at named points of the Spark engine (the exactly-once suite's lever).

Off unless ``STORMSHIFT_FAULTS`` holds a JSON list of faults; then every
process of a run (driver, planner, Python workers: they inherit the
environment in local mode; set ``spark.executorEnv.*`` on a cluster) reads
it once. A fault::

    {"name": "kill-between-stages", "at": "stage.start",
     "when": {"txid": 3, "component": "ads_ctr_bolt", "task": 0, "attempt": 0},
     "action": "kill_run", "secs": 0}

fires the first time ``hit(at, **ctx)`` is called with a context matching
every key of ``when`` -- and only once per ``STORMSHIFT_FAULT_DIR`` (an
O_EXCL marker file), so a restarted run goes past it. Points:

- ``driver.before_stages`` (txid): ticks planned, no stage started;
- ``driver.after_commit`` (txid): Redis says committed, Spark's commit log not yet;
- ``stage.start`` (txid, component = stage head, task, attempt);
- ``task.midway`` (txid, component, task, attempt): half the task's input processed (a
  fused member: half its in-process queue, its head and the members before it done);
- ``task.before_close`` (txid, component, task, attempt): the member ran, its commit not sent;
- ``task_host.midway`` (txid, component, task, attempt): as ``task.midway``, only in a task
  host (``task/task_host.py``; with hosts on, every ``task.*`` point runs in the host, so
  ``kill_self`` there kills the host, not the worker);
- ``task_host.sent`` (txid, component = stage head, task, attempt, slot): a worker handed its
  partition to its task host and waits for the rows (``kill_self``: the worker dies while
  the host runs the task);
- ``source.after_wal_append`` (spout, task, head): a chunk logged, offset not yet planned.
- ``source.after_chunk_log`` (spout, task, chunk): an executor-side spout's read logged
  its chunk, no row sent yet (``source/read/chunk_read.py``).
- ``source.spout_host_emitted`` (spout, task, chunk): a spout host emitted a chunk, the
  worker that asked for it got nothing yet (``source/spouthost/spout_host.py``).

Actions: ``kill_run`` (SIGKILL the run's whole process group: driver, JVM,
planner, workers -- the harness starts each run in its own session),
``kill_self`` (SIGKILL this process: a Python worker dies mid-task),
``sleep`` (``secs``: a slow attempt), ``kill_redis`` (SIGKILL the pid in the
file ``STORMSHIFT_FAULT_REDIS_PIDFILE``; the harness restarts the server),
``zombie`` (see ``zombie``), ``raise`` (the attempt fails; Spark retries it),
``restart`` (call ``resume``: at ``source.after_wal_append`` it replaces the
spout task's instance by a fresh one -- a restarted spout process that
re-emits from its own start).
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

from stormshift.errors import FaultSpecError

__all__ = ["FaultInjected", "active", "attempt_number", "hit", "in_task", "midway", "zombie"]

ENV = "STORMSHIFT_FAULTS"
DIR_ENV = "STORMSHIFT_FAULT_DIR"
PIDFILE_ENV = "STORMSHIFT_FAULT_REDIS_PIDFILE"


class FaultInjected(RuntimeError):
    """Raised by the ``raise`` and ``zombie`` actions: the attempt fails on purpose."""


def _load() -> list[dict[str, Any]]:
    text = os.environ.get(ENV)
    if not text:
        return []
    faults = json.loads(text)
    for f in faults:
        if not {"name", "at", "action"} <= set(f):
            raise FaultSpecError(f"{ENV}: fault {f!r} needs name, at and action")
    return faults


_FAULTS = _load()
PGID_ENV = "STORMSHIFT_FAULT_PGID"
if _FAULTS and PGID_ENV not in os.environ:
    # The driver (first to import this) records the run's process group before the JVM
    # starts; Python workers inherit it (pyspark's daemon moves them to its own group).
    os.environ[PGID_ENV] = str(os.getpgrp())


def active() -> bool:
    return bool(_FAULTS)


_IN_TASK: dict[str, Any] = {}  # a task host's request: its attempt (no TaskContext there)


def in_task(attempt: int | None, host: bool = False) -> None:
    """A task host runs a request of Spark task attempt ``attempt`` (None: it is done)."""
    _IN_TASK.clear()
    if attempt is not None:
        _IN_TASK.update(attempt=attempt, host=host)


def attempt_number() -> int:
    """This Spark task's attempt number (0 outside a task)."""
    if _IN_TASK:
        return int(_IN_TASK["attempt"])
    try:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        return ctx.attemptNumber() if ctx is not None else 0
    except Exception:  # noqa: BLE001 - not in a Spark task
        return 0


def _claim(name: str) -> bool:
    """True exactly once per fault name and fault dir (across processes and restarts)."""
    folder = os.environ.get(DIR_ENV)
    if not folder:
        return True
    try:
        fd = os.open(os.path.join(folder, f"fired-{name}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as fh:
        fh.write(f"{os.getpid()} {time.time()}\n")
    return True


def _matching(at: str, ctx: dict[str, Any]) -> dict[str, Any] | None:
    for f in _FAULTS:
        if f["at"] != at:
            continue
        when = f.get("when", {})
        if all(ctx.get(k) == v for k, v in when.items()) and _claim(f["name"]):
            return f
    return None


def hit(at: str, resume: Callable[[], None] | None = None, **ctx: Any) -> None:
    """Fire the fault planned at ``at`` for ``ctx``, if any (no-op when faults are off).

    ``resume`` is what the attempt does next (its writes); only ``zombie`` uses it.
    """
    if not _FAULTS:
        return
    if "attempt" not in ctx and at.startswith(("stage.", "task.")):
        ctx["attempt"] = attempt_number()
    fault = _matching(at, ctx)
    if fault is None:
        return
    action = fault["action"]
    _record(fault, ctx)
    if action == "kill_run":
        os.killpg(int(os.environ.get(PGID_ENV, os.getpgrp())), signal.SIGKILL)
    elif action == "kill_self":
        os.kill(os.getpid(), signal.SIGKILL)
    elif action == "sleep":
        time.sleep(float(fault.get("secs", 5)))
    elif action == "kill_redis":
        with open(os.environ[PIDFILE_ENV], encoding="utf-8") as fh:
            os.kill(int(fh.read().strip()), signal.SIGKILL)
    elif action == "raise":
        raise FaultInjected(f"fault {fault['name']!r} at {at} {ctx}")
    elif action == "restart":
        if resume is not None:
            resume()
    elif action == "zombie":
        zombie(fault, ctx, resume)
    else:
        raise FaultSpecError(f"{ENV}: unknown action {action!r} in fault {fault['name']!r}")


def zombie(fault: dict[str, Any], ctx: dict[str, Any], resume: Callable[[], None] | None) -> None:
    """Leave this attempt behind as a zombie, and fail it so Spark runs a retry.

    A forked copy of the attempt waits, paused, until the namespace's
    committed txid reaches the batch (its retry committed), then does the
    writes the attempt had left (``resume``) and records in the fault dir how
    many were fenced. The attempt itself raises, so Spark retries the task.
    """
    pid = os.fork()
    if pid == 0:  # the paused copy: never returns to Spark's worker loop
        code = 0
        try:
            _wait_committed(int(ctx["txid"]), float(fault.get("secs", 120)))
            outcome = "written"
            try:
                if resume is not None:
                    resume()
            except Exception as exc:  # noqa: BLE001 - recorded, the point of the test
                outcome = f"{type(exc).__name__}: {exc}"
            _record(fault, {**ctx, "zombie": outcome})
        except BaseException:  # noqa: BLE001
            code = 1
        finally:
            os._exit(code)
    raise FaultInjected(f"fault {fault['name']!r}: attempt left as zombie (pid {pid})")


def _wait_committed(txid: int, timeout: float) -> None:
    from stormshift.state.commit import CommitLog
    from stormshift.state.connection import connect

    r = connect(os.environ["STORMSHIFT_FAULT_REDIS_URL"])
    log = CommitLog(r, os.environ["STORMSHIFT_FAULT_NAMESPACE"])
    deadline = time.monotonic() + timeout
    while log.committed() < txid:
        if time.monotonic() > deadline:
            raise TimeoutError(f"zombie: txid {txid} never committed")
        time.sleep(0.2)


def _record(fault: dict[str, Any], ctx: dict[str, Any]) -> None:
    """Append what happened to ``<fault dir>/events.jsonl`` (the suite's table reads it)."""
    folder = os.environ.get(DIR_ENV)
    if not folder:
        return
    line = json.dumps({"fault": fault["name"], "action": fault["action"], "pid": os.getpid(),
                       **{k: v for k, v in ctx.items() if isinstance(v, (int, str, float))}})
    with open(os.path.join(folder, "events.jsonl"), "a", encoding="utf-8") as fh:
        fh.write(line + "\n")


def midway(chunks: Iterator[Any], ctx: dict[str, Any]) -> Iterator[Any]:
    """``(src, sid, value lists)`` chunks unchanged, calling the ``task.midway`` fault point
    after half of their tuples (a chunk is cut there). Reads all chunks first, to count."""
    held = list(chunks)
    seen, half = 0, sum(len(c[2]) for c in held) // 2
    for src, sid, values_list in held:
        if seen <= half < seen + len(values_list):
            cut = half - seen
            yield src, sid, values_list[:cut]
            hit("task.midway", **ctx)
            if _IN_TASK.get("host"):
                hit("task_host.midway", **ctx)
            yield src, sid, values_list[cut:]
        else:
            yield src, sid, values_list
        seen += len(values_list)
