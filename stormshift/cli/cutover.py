"""``stormshift cutover PROJECT``, ``stormshift cutover status`` and ``stormshift handback``.

``cutover`` reads where the legacy stands (``cutover.position``) twice, ``--settle``
seconds apart, and refuses (exit 2, one line, nothing written) while it still moves;
then it seeds the port's state maps from the legacy's store (``cutover.seed``) in one
transaction and starts the production run from exactly that position. Run again with
the same ``--checkpoint`` after a crash, it resumes the run (nothing is seeded twice).
``handback`` stops the port at a batch boundary, writes its state back into the legacy's
store, commits its position where the legacy resumes from, and records the hand-back.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import click

from stormshift.cli.connect import open_state
from stormshift.cli.exit_codes import run_exit_code
from stormshift.cli.options import (
    checkpoint_option,
    json_option,
    load_graph,
    master_option,
    redis_option,
    topology_options,
)
from stormshift.display import console, json_text, visible
from stormshift.errors import CutoverRefused
from stormshift.state.client import Redis
from stormshift.topology.graph import TopologyGraph

__all__ = ["cutover_group", "handback_command"]


class _DefaultGroup(click.Group):
    """``cutover PROJECT ...`` runs ``start``; ``cutover status ...`` the subcommand."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["start", *args]
        return super().parse_args(ctx, args)


@click.group("cutover", cls=_DefaultGroup)
def cutover_group() -> None:
    """Switch production from the legacy topology to its port (`cutover PROJECT -n NAME
    --checkpoint DIR`), and see how both stand (`cutover status PROJECT -n NAME`)."""


def _namespace(graph: TopologyGraph, namespace: str | None) -> str:
    return namespace or graph.name


def _positions(graph: TopologyGraph, r: Redis) -> tuple[dict[str, dict[str, Any]], dict[str, Any], int]:
    """``(spout -> offsets, spout -> position spec, live members)`` of the legacy now."""
    from stormshift.cutover.legacy import group_members, read_position
    from stormshift.cutover.plan import position_spec

    offsets, specs, members = {}, {}, 0
    for spout in graph.spouts:
        if not spout.capabilities.replayable:
            raise CutoverRefused(f"cutover: spout {spout.name!r} of the port is not replayable "
                                 "(Kafka, Redis Streams, JSON lines): it cannot start at the "
                                 "legacy's position; fix: use a replayable source")
        specs[spout.name] = position_spec(spout.config, spout.name)
        offsets[spout.name] = read_position(specs[spout.name], spout.config, r)
        members += group_members(specs[spout.name], spout.config)
    return offsets, specs, members


def _check_still(graph: TopologyGraph, r: Redis, settle_secs: float) -> tuple[dict[str, Any], str | None]:
    from stormshift.cutover.plan import refusal

    first, specs, members = _positions(graph, r)
    time.sleep(settle_secs)
    second, _, more = _positions(graph, r)
    groups = [s.get("kafka_group") for s in specs.values() if s.get("kafka_group")]
    flat1 = {f"{s}/{p}": o for s, offs in first.items() for p, o in offs.items()}
    flat2 = {f"{s}/{p}": o for s, offs in second.items() for p, o in offs.items()}
    return second, refusal(flat1, flat2, settle_secs, max(members, more),
                           ", ".join(map(str, groups)) or None)


def _seed(graph: TopologyGraph, r: Redis, ns: str, starts: dict[str, Any], checkpoint: str, force: bool,
          say: Any) -> None:
    from stormshift.cutover.seed import seed_port

    record, written = seed_port(graph, r, ns, starts, checkpoint, force)
    say(f"cut over: namespace {ns!r} seeded at txid {record['seed_txid']} with {written} "
        f"entries ({', '.join(f'{k}: {n}' for k, n in record['seeded'].items()) or 'no seed'});"
        f" the port starts at {json.dumps(starts, sort_keys=True)}")


@cutover_group.command("start")
@click.argument("path")
@topology_options
@checkpoint_option("The production run's durable Spark checkpoint (a new one at each cut-over).")
@click.option("--namespace", metavar="NS", help="The port's state namespace (default: the "
              "topology's name).")
@redis_option()
@master_option(default="local[*]", show_default=True)
@click.option("--until-done", is_flag=True, help="Stop at the end of a bounded input.")
@click.option("--duration", type=float, metavar="SECS", help="Stop after SECS seconds.")
@click.option("--batch-max-tuples", type=int, help="Tuples per spout task per batch.")
@click.option("--sink", help="Where leaf emits go besides cutover.sink: jsonl:DIR, redis:STREAM.")
@click.option("--settle", "settle_secs", type=click.FloatRange(0), default=5.0, show_default=True,
              metavar="SECS", help="How long the legacy's position must stay still.")
@click.option("--force", is_flag=True, help="Cut over even while the legacy seems to move.")
@json_option
def start_command(path: str, name: str | None, environment: str | None,
                  config_options: tuple[str, ...], checkpoint_dir: str | None,
                  namespace: str | None, redis_url: str | None, master: str, until_done: bool,
                  duration: float | None, batch_max_tuples: int | None, sink: str | None,
                  settle_secs: float, force: bool, as_json: bool) -> None:
    """Cut over: seed the port from the legacy's store at the legacy's position, then run
    it as production from exactly there."""
    from stormshift.cutover.record import LIVE, read_record
    from stormshift.errors import LeaseHeldError
    from stormshift.runner import RunOptions, print_summary, run_topology
    from stormshift.state.lease import holder_alive, read_lease, refusal

    if not checkpoint_dir:
        raise click.UsageError("cutover needs --checkpoint DIR: the production run's checkpoint")
    graph = load_graph(path, name, environment, config_options)
    ns = _namespace(graph, namespace)
    checkpoint = os.path.abspath(checkpoint_dir)
    r = open_state(redis_url, reading=False)
    now_ms, holder = read_lease(r, ns)
    if holder is not None and holder.live(now_ms) and holder_alive(holder):
        raise LeaseHeldError(refusal(holder, now_ms, "cutover"))  # a dead driver's: the run takes over
    say = (lambda _line: None) if as_json else (lambda line: click.echo(visible(line), err=True))
    record = read_record(r, ns)
    if record and record["status"] == LIVE:
        if record["checkpoint"] != checkpoint:
            raise CutoverRefused(
                f"cutover refused: namespace {ns!r} is already cut over to checkpoint "
                f"{record['checkpoint']}; nothing was written. Resume it with that --checkpoint, "
                f"or `stormshift handback` first")
        starts = record["start"]
        say(f"resuming the cut-over of namespace {ns!r} (seeded at txid {record['seed_txid']})")
    else:
        offsets_dir = os.path.join(checkpoint, "spark", "offsets")
        if os.path.isdir(offsets_dir) and os.listdir(offsets_dir):
            raise CutoverRefused(
                f"cutover refused: checkpoint {checkpoint} holds batches of an earlier query; a "
                "cut-over starts a new one at the legacy's position. Use a new --checkpoint DIR")
        starts, why = _check_still(graph, r, settle_secs)
        if why and not force:
            raise CutoverRefused(f"cutover refused: {why}; nothing was written (--force to "
                                 "cut over anyway)")
        if why:
            say(f"warning: --force: {why}")
        _seed(graph, r, ns, starts, checkpoint, force, say)
    graph = load_graph(path, name, environment,
                       (*config_options, f"stormshift.start_offsets={json.dumps(starts)}"))
    options = RunOptions(engine="spark", until_done=until_done, duration_secs=duration,
                         master=master, checkpoint_dir=checkpoint, trigger_secs=0.0,
                         batch_max_tuples=batch_max_tuples, redis_url=redis_url, sink=sink,
                         state_mode="adopt", namespace=ns)
    summary = run_topology(graph, options, progress=None if as_json else console(stderr=True))
    code = run_exit_code(summary)
    if as_json:
        click.echo(json_text({**summary.to_dict(), "exit_code": code}, default=str, indent=2))
    else:
        print_summary(graph, summary, console())
    if code:
        raise click.exceptions.Exit(code)


@cutover_group.command("status")
@click.argument("path")
@topology_options
@click.option("--namespace", metavar="NS", help="The port's state namespace.")
@redis_option()
@json_option
def status_command(path: str, name: str | None, environment: str | None,
                   config_options: tuple[str, ...], namespace: str | None,
                   redis_url: str | None, as_json: bool) -> None:
    """Each side's position and lag, the port's last commit, and the legacy's target
    compared with the port's state since the cut."""
    from stormshift.cutover.status import status

    graph = load_graph(path, name, environment, config_options)
    ns = _namespace(graph, namespace)
    r = open_state(redis_url, reading=True)
    if r is None:
        raise click.exceptions.Exit(1)
    report = status(graph, r, ns)
    if as_json:
        click.echo(json.dumps(report, sort_keys=True, default=str))
        return
    for line in report["lines"]:
        click.echo(visible(line))


@click.command("handback")
@click.argument("path")
@topology_options
@click.option("--namespace", metavar="NS", help="The port's state namespace.")
@redis_option()
@click.option("--timeout", "timeout_secs", type=click.FloatRange(0), default=300.0,
              show_default=True, metavar="SECS", help="How long to wait for the port to stop.")
@json_option
def handback_command(path: str, name: str | None, environment: str | None,
                     config_options: tuple[str, ...], namespace: str | None,
                     redis_url: str | None, timeout_secs: float, as_json: bool) -> None:
    """Hand production back to the legacy: stop the port at a batch boundary, write its
    state into the legacy's store, commit its position for the legacy, record it."""
    from stormshift.cutover.handback import handback

    graph = load_graph(path, name, environment, config_options)
    ns = _namespace(graph, namespace)
    r = open_state(redis_url, reading=False)
    result = handback(graph, r, ns, timeout_secs,
                      say=(lambda _l: None) if as_json else (lambda l: click.echo(visible(l))))
    if as_json:
        click.echo(json.dumps(result, sort_keys=True, default=str))
