"""``stormshift state ...``: look at and manage exactly-once state in Redis.

    stormshift state ls [NAMESPACE] [--json]
    stormshift state get NAMESPACE COMPONENT MAP KEY
    stormshift state dump NAMESPACE [--component C] [--map M] [--out FILE]
    stormshift state reset NAMESPACE --yes [--hard]

Each takes ``--redis URL`` (or ``STORMSHIFT_REDIS``); without it the embedded
Redis of the current directory is used -- where there is none, they say so
and start none (``cli/connect.py``: exit 0, ``get`` exits 1). KEY is parsed as JSON when it is valid
JSON (``5``, ``'["a", 1]'``), else taken as a string. What is shown comes from
``state/inspect.py``; this module only parses and prints.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from stormshift.cli.connect import no_namespace, open_state
from stormshift.cli.options import deprecated_alias, json_option, redis_option
from stormshift.display import json_text, visible

__all__ = ["state_group"]


def _dumps(obj: Any) -> str:
    from stormshift.state.inspect import json_default

    return json_text(obj, default=json_default, sort_keys=True)


def _parse_key(text: str) -> Any:
    try:
        v = json.loads(text)
    except ValueError:
        return text
    return tuple(v) if isinstance(v, list) else v


@click.group("state")
@deprecated_alias("--url", "url", "--redis URL after the subcommand (e.g. state ls --redis URL)")
@click.pass_context
def state_group(ctx: click.Context, url: str | None) -> None:
    """Inspect and manage exactly-once state in Redis."""
    ctx.obj = {"url": url}


def _url(redis_url: str | None) -> str | None:
    ctx = click.get_current_context()
    parent = (ctx.parent.obj or {}) if ctx.parent is not None else {}
    return redis_url or parent.get("url")


def _redis(redis_url: str | None, *, reading: bool = True) -> Any:
    """The checked client (``cli/connect.py``); None when a reading command finds no state."""
    return open_state(_url(redis_url), reading=reading)


@state_group.command("ls")
@click.argument("namespace", required=False)
@redis_option()
@json_option
def ls_cmd(namespace: str | None, redis_url: str | None, as_json: bool) -> None:
    """Namespaces, components, key counts, committed txid, epochs, snapshot sizes."""
    from stormshift.errors import StateError
    from stormshift.state.inspect import describe, namespaces

    r = _redis(redis_url)
    if r is None or (namespace and no_namespace(r, namespace, _url(redis_url))):
        return
    found = [namespace] if namespace else namespaces(r)
    if not found:
        from stormshift.state.reach import where

        click.echo(f"no stormshift state in {where(_url(redis_url))}", err=True)
    unreadable = []
    documents: list[dict[str, Any]] = []  # --json: one document, a list of namespaces
    for ns in found:
        try:
            d = describe(r, ns)
        except StateError as exc:  # another stormshift's namespace in a shared Redis
            unreadable.append(str(exc))
            if as_json:
                documents.append({"namespace": ns, "error": str(exc)})
            else:
                click.echo(visible(f"{ns}: not shown: {exc}"))
            continue
        if as_json:
            documents.append(d)
            continue
        # names come from Redis: shown, never interpreted by the terminal
        click.echo(visible(f"{ns}: committed txid {d['committed_txid']}, "
                           f"dead letters {d['dead_letters']}", newlines=False))
        for ck, base in d["checkpoints"].items():
            click.echo(visible(f"  checkpoint {ck}: txid base {base}", newlines=False))
        for m, n in d["maps"].items():
            click.echo(visible(f"  map {m}: {n} keys", newlines=False))
        for task, epoch in d["epochs"].items():
            sizes = d["snapshots_bytes"].get(task, {})
            snap = ", ".join(f"txid {t}: {b} B" for t, b in sorted(sizes.items())) or "no snapshot"
            click.echo(visible(f"  task {task}: epoch {epoch}, {snap}", newlines=False))
    if as_json:  # one document: the namespace asked for, or the list of them all
        click.echo(_dumps(documents[0] if namespace and documents else documents))
    if namespace and unreadable:
        raise SystemExit(1)


@state_group.command("get")
@click.argument("namespace")
@click.argument("component")
@click.argument("map_name", metavar="MAP")
@click.argument("key")
@redis_option()
def get_cmd(namespace: str, component: str, map_name: str, key: str, redis_url: str | None) -> None:
    """A key's value with the txid that wrote it."""
    from stormshift.state.inspect import map_get

    r = _redis(redis_url)
    if r is None or no_namespace(r, namespace, _url(redis_url)):
        raise click.exceptions.Exit(1)
    got = map_get(r, namespace, component, map_name, _parse_key(key))
    if got is None:
        raise click.ClickException(visible(
            f"no key {key!r} in map {map_name!r} of component {component!r} (namespace "
            f"{namespace!r}); `stormshift state ls {namespace}` lists the maps"
        ))
    value, txid = got
    click.echo(_dumps({"key": _parse_key(key), "value": value, "txid": txid}))


@state_group.command("dump")
@click.argument("namespace")
@click.option("--component", default=None, help="Only maps of this component.")
@click.option("--map", "map_name", default=None, help="Only this map.")
@click.option("--out", type=click.File("w"), default=None, metavar="FILE",
              help="JSON lines file (default stdout).")
@deprecated_alias("-o", "old_out", "--out FILE (-o is KEY=VALUE in every other command)",
                  type=click.File("w"))
@redis_option()
def dump_cmd(namespace: str, component: str | None, map_name: str | None, out: Any, old_out: Any,
             redis_url: str | None) -> None:
    """Every map entry as JSON lines: component, map, key, value, txid."""
    from stormshift.state.inspect import map_items, map_kinds

    out = out or old_out or sys.stdout
    r = _redis(redis_url)
    if r is None or no_namespace(r, namespace, _url(redis_url)):
        return
    n = 0
    for comp, name in map_kinds(r, namespace):
        if (component and comp != component) or (map_name and name != map_name):
            continue
        for key, (value, txid) in map_items(r, namespace, comp, name).items():
            out.write(_dumps({"component": comp, "map": name, "key": key, "value": value, "txid": txid}) + "\n")
            n += 1
    if out is not sys.stdout:
        click.echo(f"dumped {n} entries", err=True)


@state_group.command("reset")
@click.argument("namespace")
@click.option("--yes", is_flag=True, help="Confirm: delete this namespace's state.")
@click.option("--hard", is_flag=True, help="Also drop the commit record and checkpoint bindings.")
@redis_option()
def reset_cmd(namespace: str, yes: bool, hard: bool, redis_url: str | None) -> None:
    """Delete a namespace's maps, snapshots and dedup state (epochs are always kept)."""
    from stormshift.state.commit import reset_namespace

    if not yes:
        raise click.ClickException(
            f"refusing to delete state namespace {namespace!r} without --yes "
            "(maps, snapshots and dedup state are lost; running topologies must be stopped)"
        )
    from stormshift.state.lease import refuse_if_live

    r = _redis(redis_url)
    if r is None:
        return
    refuse_if_live(r, namespace, f"state reset {namespace}")  # exit 2: a live run's state
    n = reset_namespace(r, namespace, keep_fences=not hard)
    click.echo(f"deleted {n} keys of namespace {namespace!r}")
