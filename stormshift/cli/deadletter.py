"""``stormshift deadletter ...``: look at dead letters and send them back after a fix.

    stormshift deadletter ls [PROJECT | --namespace NS] [--component C] [--json | --jsonl]
    stormshift deadletter replay PROJECT [--component C] [--id ID ...]

``replay`` does not run anything: it MOVES the chosen dead letters (each once,
atomically) into the namespace's redrive stream; the next batch that a
``stormshift run`` of the project (Spark engine) runs takes them, exactly once.
Both subcommands go through the public ``stormshift.deadletters.DeadLetterDesk``
(its docstring defines the words), never the driver or the state layout. A batch runs when there
is input: a bounded run whose checkpoint already reached its end plans none,
so give it new input, or a new checkpoint with ``--adopt-state``. Only dead
letters of bolts can go back: a spout record that could not be decoded (reason
``decode``) never was a tuple -- fix the source data and append it again.

``--redis`` (or ``STORMSHIFT_REDIS``) picks the server; without it the
embedded Redis of the current directory is used, as ``stormshift run`` does.
PROJECT is loaded as ``stormshift run`` loads it (``-n``, ``-e``, ``-o``, so a
``-o stormshift.replacements=...`` that replaces a JavaSpout works here too);
its namespace is the one ``stormshift run`` uses: the topology name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import click

from stormshift.cli.connect import no_namespace, open_state
from stormshift.cli.options import json_option, load_graph, redis_option, topology_options
from stormshift.display import cell, console, cut, json_text
from stormshift.topology.graph import TopologyGraph

__all__ = ["deadletter_group", "letters_table", "namespace_of"]

VALUES_WIDTH = 120


def namespace_of(graph: TopologyGraph) -> str:
    """The state namespace ``stormshift run`` gives ``graph`` (as ``SparkEngine`` does)."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "-", graph.name)[:100] or "topology"


def _target(project: str | None, namespace: str | None, name: str | None,
            environment: str | None, config_options: Sequence[str]) -> str:
    if namespace:
        return namespace
    if not project:
        raise click.UsageError("give a PROJECT (its topology name is the namespace) or --namespace NS")
    return namespace_of(load_graph(project, name, environment, config_options))


def _project_options(fn: Any) -> Any:
    for option in reversed([
        topology_options,
        redis_option("Redis URL (default: embedded, as `stormshift run`)."),
        click.option("--namespace", default=None,
                     help="State namespace (default: PROJECT's topology name)."),
        click.option("--component", default=None, help="Only dead letters of this component."),
    ]):
        fn = option(fn)
    return fn


@click.group("deadletter")
def deadletter_group() -> None:
    """Dead letters: tuples that could not be processed, with their reason."""


def letters_table(ns: str, letters: Sequence[Any], component: str | None = None) -> Any:
    """A rich table of dead letters that fits 80 columns: the error is shown whole (wrapped),
    long values are shortened."""
    from rich.table import Table

    from stormshift.state.inspect import json_default

    table = Table(title=f"dead letters of {ns}: {len(letters)}"
                        + (f" of {component}" if component else ""), show_lines=True)
    table.add_column("entry", no_wrap=True)  # ids stay whole: `replay --id` takes them
    table.add_column("tuple", overflow="fold", max_width=18)
    table.add_column("reason", overflow="fold")
    table.add_column("error", overflow="fold")
    table.add_column("values", overflow="fold", max_width=24)
    for d in letters:
        table.add_row(cell(f"{d.id}\ntxid {d.txid}"),
                      cell(f"{d.component}\nfrom {d.source or '?'}/{d.stream}"),
                      cell(d.reason or "?"), cell(d.error.strip()),
                      cell(cut(json.dumps(d.values, default=json_default, ensure_ascii=False),
                               VALUES_WIDTH)))
    return table


@deadletter_group.command("ls")
@click.argument("project", required=False)
@_project_options
@json_option
@click.option("--jsonl", "as_jsonl", is_flag=True,
              help="One JSON object per line, one per entry (for streaming tools).")
@click.option("--limit", type=int, default=None, help="At most this many entries.")
def ls_cmd(project: str | None, name: str | None, environment: str | None,
           config_options: tuple[str, ...], redis_url: str | None, namespace: str | None,
           component: str | None, as_json: bool, as_jsonl: bool, limit: int | None) -> None:
    """List dead letters oldest first: entry, tuple, reason, the whole error, values."""
    from stormshift.deadletters import DeadLetterDesk
    from stormshift.state.inspect import json_default

    ns = _target(project, namespace, name, environment, config_options)
    r = open_state(redis_url, reading=True)
    if r is None or no_namespace(r, ns, redis_url):
        return
    desk = DeadLetterDesk(r, ns)
    letters = desk.entries(component=component, limit=limit)
    if as_jsonl:
        for d in letters:
            click.echo(json_text(d.as_dict(), default=json_default))
        return
    if as_json:  # one document, as every --json is
        click.echo(json_text([d.as_dict() for d in letters], default=json_default, indent=2))
        return
    console().print(letters_table(ns, letters, component))
    queued = desk.queued()
    if queued.waiting or queued.claimed:
        held = sum(queued.claimed.values())
        click.echo(f"queued for redrive: {queued.waiting} waiting for the next run"
                   + (f", {held} taken by uncommitted txid(s) {sorted(queued.claimed)}"
                      if queued.claimed else ""))


@deadletter_group.command("replay")
@click.argument("project")
@_project_options
@click.option("--id", "ids", multiple=True, help="Only this entry id (repeatable).")
def replay_cmd(project: str, name: str | None, environment: str | None,
               config_options: tuple[str, ...], redis_url: str | None, namespace: str | None,
               component: str | None, ids: tuple[str, ...]) -> None:
    """Send dead letters back (after a fix): the next `stormshift run PROJECT` processes them once."""
    from stormshift.deadletters import DeadLetterDesk

    graph = load_graph(project, name, environment, config_options)
    ns = namespace or namespace_of(graph)
    if component is not None and component not in graph.components:
        raise click.UsageError(f"no component {component!r} in topology {graph.name!r}; "
                               f"components are {sorted(graph.components)}")
    r = open_state(redis_url, reading=True)
    if r is None or no_namespace(r, ns, redis_url):
        return
    done = DeadLetterDesk(r, ns, graph).redrive(ids, component=component)
    if done.missing:
        click.echo(f"not in the dead-letter stream of {ns}: {', '.join(done.missing)}", err=True)
    click.echo(f"{len(done.moved)} dead letter(s) of {ns} queued for redrive; the next batch of "
               f"`stormshift run {project}` processes each exactly once")
    for why, entry_ids in done.refused.items():
        shown = ", ".join(entry_ids[:5]) + (" ..." if len(entry_ids) > 5 else "")
        click.echo(f"{len(entry_ids)} left in the dead-letter stream ({shown}): {why}", err=True)
