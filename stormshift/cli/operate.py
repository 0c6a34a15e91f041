"""``stormshift stop NS`` and ``stormshift ps``: Storm's ``kill`` and ``list`` for live runs.

Both read the runs' leases in Redis (``state/lease.py``), so they work from any shell
or host that reaches the state server. ``stop`` asks the live run to stop at a batch
boundary, as SIGTERM does (the batch in flight commits; the run exits 130), and waits
until its lease is released; ``ps`` lists every run that holds a lease.

Exit codes: 0 done; 1 nothing to stop, or the run did not stop within ``--timeout``;
2 as every command (Redis unreachable, a bad option).
"""

from __future__ import annotations

import json
import time
from typing import Any

import click

from stormshift.cli.connect import open_state
from stormshift.cli.options import json_option, redis_option
from stormshift.display import visible
from stormshift.state.client import Redis

__all__ = ["ps_command", "stop_command"]


@click.command("stop")
@click.argument("namespace", metavar="NS")
@redis_option()
@click.option("--timeout", "timeout_secs", type=click.FloatRange(0), default=300.0,
              show_default=True, metavar="SECS",
              help="How long to wait for the run to stop (0: ask, do not wait).")
def stop_command(namespace: str, redis_url: str | None, timeout_secs: float) -> None:
    """Stop the live run of namespace NS at a batch boundary (as SIGTERM would), wherever
    it runs, and wait until it released the namespace (storm kill)."""
    from stormshift.state.lease import ago, describe, request_stop

    r = open_state(redis_url, reading=True)
    if r is None:
        raise click.exceptions.Exit(1)
    now_ms, holder, asked = request_stop(r, namespace)
    if not asked:
        if holder is None:
            click.echo(visible(f"no live run of namespace {namespace!r}: nothing to stop "
                               "(`stormshift ps` lists the live runs)"), err=True)
        else:
            click.echo(visible(f"the run of namespace {namespace!r} (host {holder.host}, pid "
                               f"{holder.pid}) stopped renewing its lease "
                               f"{ago(now_ms - holder.renewed_ms)} ago: it is not running; the "
                               "next `stormshift run` takes over"), err=True)
        raise click.exceptions.Exit(1)
    assert holder is not None
    if timeout_secs == 0:
        click.echo(visible(f"asked the run of namespace {namespace!r} ({describe(holder, now_ms)}) "
                           "to stop"))
        return
    deadline = time.monotonic() + timeout_secs
    while time.monotonic() < deadline:
        if _released(r, namespace, holder.token, embedded=redis_url is None):
            click.echo(visible(f"stopped the run of namespace {namespace!r} (host {holder.host}, "
                               f"pid {holder.pid}) at a batch boundary; its lease is released"))
            return
        time.sleep(0.2)
    click.echo(visible(f"the run of namespace {namespace!r} (host {holder.host}, pid "
                       f"{holder.pid}) has not stopped after {timeout_secs:g} s (a long batch?); "
                       "it stops after its batch in flight, or run `stormshift stop` again "
                       "with a longer --timeout"), err=True)
    raise click.exceptions.Exit(1)


def _released(r: Redis, namespace: str, token: str, *, embedded: bool) -> bool:
    """Whether the run holding ``token`` gave the lease back. An embedded Redis is the
    run's own and goes down with it: its server gone means the run ended."""
    from stormshift.state.connection import TRANSIENT
    from stormshift.state.keys import lease_key

    try:
        held = r.hget(lease_key(namespace), "holder")
    except TRANSIENT:
        return embedded
    return held is None or held.decode() != token


@click.command("ps")
@redis_option()
@json_option
def ps_command(redis_url: str | None, as_json: bool) -> None:
    """The live runs on the state server: namespace, topology, host, pid, start, checkpoint,
    last lease renewal, batches committed (storm list)."""
    from stormshift.state.lease import live_runs

    r = open_state(redis_url, reading=True)
    runs: list[tuple[int, Any]] = list(live_runs(r)) if r is not None else []
    if as_json:
        click.echo(json.dumps({"runs": [h.to_dict(now) for now, h in runs]}, sort_keys=True))
        return
    if not runs:
        click.echo("no live runs")
        return
    from rich.table import Table

    from stormshift.display import console

    table = Table(title=f"live runs: {len(runs)}")
    for header in ("namespace", "topology", "host", "started", "checkpoint", "renewed",
                   "batches", "state"):
        table.add_column(header)
    for now_ms, h in runs:  # one record per block when the row is wider than the screen
        row = h.to_dict(now_ms)
        state = "live" if row["live"] else "lapsed (not renewing: its driver died)"
        if row["stopping"]:
            state += ", stopping"
        table.add_row(h.namespace, h.topology, f"{h.host} pid {h.pid}", str(row["started"]),
                      str(h.checkpoint), f"{row['renewed_secs_ago']} s ago",
                      f"{h.batches} committed", state)
    console().print(table)
