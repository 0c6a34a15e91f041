"""The exit code of ``stormshift run``: a pure function of what the run did.

A CI job or a cron can rely on these (also in ``stormshift run --help`` and
the README):

====  =====================================================================
0     clean: finished, nothing dead-lettered, failed or lost, accounting holds
2     load, config, usage or infrastructure error (nothing ran)
3     finished, but tuples were dead-lettered (Spark; a built-in spout's bad
      records on both engines) or failed / lost (local), or a component raised
      (e.g. a spout's next_tuple: no tuple to dead-letter)
4     the accounting does not hold (tuples unaccounted for); wins over 3
5     the run failed at run time (e.g. the Spark streaming query failed, or Redis
      stayed unreachable past ``stormshift.redis_outage_s``: ``state/outage.py``)
6     taken over: another run took the namespace's lease (``run --takeover``); this
      run stopped and committed nothing after that
130   interrupted (Ctrl-C, SIGTERM, ``stormshift stop``)
====  =====================================================================
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ACCOUNTING", "CLEAN", "EPILOG", "FAILED_TUPLES", "INTERRUPTED", "RUN_FAILED", "TAKEN_OVER",
    "USAGE",
    "run_exit_code",
]

CLEAN = 0
USAGE = 2
FAILED_TUPLES = 3
ACCOUNTING = 4
RUN_FAILED = 5
TAKEN_OVER = 6
INTERRUPTED = 130

EPILOG = (
    "\b\nExit codes:\n"
    "  0    clean: nothing dead-lettered, failed or lost; the accounting holds\n"
    "  2    load, config, usage or infrastructure error (nothing ran)\n"
    "  3    finished, but tuples were dead-lettered (spark; a built-in spout's bad\n"
    "       records on both engines) or failed/lost (local),\n"
    "       or a component raised (the summary lists each error)\n"
    "  4    the accounting does not hold (tuples unaccounted for); wins over 3\n"
    "  5    the run failed at run time (e.g. the Spark streaming query failed,\n"
    "       or Redis unreachable past -o stormshift.redis_outage_s, default 180)\n"
    "  6    taken over: another run took the namespace (run --takeover); this run\n"
    "       stopped and committed nothing after that\n"
    "  130  interrupted (Ctrl-C, SIGTERM, stormshift stop)"
)


def _failed_tuples(summary: Any) -> int:
    """Tuples that did not make it: dead-lettered (bolts, and records a built-in spout
    dead-lettered, on both engines), lost, and (local engine) failed by bolts."""
    local = summary.engine == "local"
    n = summary.total("dead_lettered")
    for stats in summary.components.values():
        n += getattr(stats, "lost", 0) or 0
        if local and stats.kind != "spout":
            n += stats.fails
    return n


def run_exit_code(summary: Any) -> int:
    """The exit code for a run that returned ``summary`` (a ``RunSummary``)."""
    if summary.stop_reason == "interrupted":
        return INTERRUPTED
    if not summary.accounting()["topology"]["holds"]:
        return ACCOUNTING
    if _failed_tuples(summary) or getattr(summary, "problems", None):
        return FAILED_TUPLES
    return CLEAN
