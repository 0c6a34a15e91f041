"""``stormshift state ...``: operator commands (mounted by cli.py).

    stormshift state ls [NAMESPACE] [--json]
    stormshift state get NAMESPACE COMPONENT MAP KEY
    stormshift state dump NAMESPACE [--component C] [--map M] [-o FILE]
    stormshift state reset NAMESPACE --yes [--hard]

``--url`` (or ``STORMSHIFT_REDIS_URL``) picks the server; without it the
embedded Redis of the current directory is used. KEY is parsed as JSON when it
is valid JSON (``5``, ``'["a", 1]'``), else taken as a string.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from stormshift.state import keys as K
from stormshift.state.commit import CommitLog, reset_namespace
from stormshift.state.connection import connect
from stormshift.state.deadletter import DeadLetters
from stormshift.state.inspect import map_get, map_items, map_kinds, namespaces
from stormshift.state.snapshots import SnapshotStore

__all__ = ["state"]


def json_default(x: Any) -> Any:
    """``json.dumps`` default for state and dead-letter values: bytes as text (or hex), tuples as lists."""
    if isinstance(x, bytes):
        try:
            return x.decode()
        except UnicodeDecodeError:
            return {"hex": x.hex()}
    if isinstance(x, tuple):
        return list(x)
    return repr(x)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, default=json_default, sort_keys=True, ensure_ascii=False)


def _parse_key(text: str) -> Any:
    try:
        v = json.loads(text)
    except ValueError:
        return text
    return tuple(v) if isinstance(v, list) else v


def _snapshot_sizes(r: Any, ns: str) -> dict[str, dict[int, int]]:
    store = SnapshotStore.__new__(SnapshotStore)  # sizes need no HMAC key: nothing is verified
    store.r, store.namespace = r, ns
    return {f"{c}:{t}": v for (c, t), v in store.sizes().items()}


def describe(r: Any, ns: str) -> dict[str, Any]:
    """Everything ``ls`` shows for one namespace, as plain data."""
    log = CommitLog(r, ns)
    epochs = {k.decode(): int(v) for k, v in sorted(r.hgetall(K.epochs_key(ns)).items())}
    return {
        "namespace": ns,
        "committed_txid": log.committed(),
        "checkpoints": log.checkpoints(),
        "epochs": epochs,
        "maps": {f"{c}:{m}": n for (c, m), n in map_kinds(r, ns).items()},
        "snapshots_bytes": _snapshot_sizes(r, ns),
        "dead_letters": DeadLetters(r, ns).count(),
    }


@click.group("state")
@click.option("--url", envvar="STORMSHIFT_REDIS_URL", default=None, help="Redis URL (default: embedded).")
@click.pass_context
def state(ctx: click.Context, url: str | None) -> None:
    """Inspect and manage exactly-once state in Redis."""
    ctx.obj = {"url": url}


def _redis(ctx: click.Context) -> Any:
    return connect(ctx.obj.get("url"))


@state.command("ls")
@click.argument("namespace", required=False)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per namespace.")
@click.pass_context
def ls_cmd(ctx: click.Context, namespace: str | None, as_json: bool) -> None:
    """Namespaces, components, key counts, committed txid, epochs, snapshot sizes."""
    r = _redis(ctx)
    for ns in [namespace] if namespace else namespaces(r):
        d = describe(r, ns)
        if as_json:
            click.echo(_dumps(d))
            continue
        click.echo(f"{ns}: committed txid {d['committed_txid']}, dead letters {d['dead_letters']}")
        for ck, base in d["checkpoints"].items():
            click.echo(f"  checkpoint {ck}: txid base {base}")
        for m, n in d["maps"].items():
            click.echo(f"  map {m}: {n} keys")
        for task, epoch in d["epochs"].items():
            sizes = d["snapshots_bytes"].get(task, {})
            snap = ", ".join(f"txid {t}: {b} B" for t, b in sorted(sizes.items())) or "no snapshot"
            click.echo(f"  task {task}: epoch {epoch}, {snap}")


@state.command("get")
@click.argument("namespace")
@click.argument("component")
@click.argument("map_name", metavar="MAP")
@click.argument("key")
@click.pass_context
def get_cmd(ctx: click.Context, namespace: str, component: str, map_name: str, key: str) -> None:
    """A key's value with the txid that wrote it."""
    got = map_get(_redis(ctx), namespace, component, map_name, _parse_key(key))
    if got is None:
        raise click.ClickException(
            f"no key {key!r} in map {map_name!r} of component {component!r} (namespace "
            f"{namespace!r}); `stormshift state ls {namespace}` lists the maps"
        )
    value, txid = got
    click.echo(_dumps({"key": _parse_key(key), "value": value, "txid": txid}))


@state.command("dump")
@click.argument("namespace")
@click.option("--component", default=None)
@click.option("--map", "map_name", default=None)
@click.option("-o", "--out", type=click.File("w"), default="-", help="JSON lines file (default stdout).")
@click.pass_context
def dump_cmd(ctx: click.Context, namespace: str, component: str | None, map_name: str | None, out: Any) -> None:
    """Every map entry as JSON lines: component, map, key, value, txid."""
    r = _redis(ctx)
    n = 0
    for comp, name in map_kinds(r, namespace):
        if (component and comp != component) or (map_name and name != map_name):
            continue
        for key, (value, txid) in map_items(r, namespace, comp, name).items():
            out.write(_dumps({"component": comp, "map": name, "key": key, "value": value, "txid": txid}) + "\n")
            n += 1
    if out is not sys.stdout:
        click.echo(f"dumped {n} entries", err=True)


@state.command("reset")
@click.argument("namespace")
@click.option("--yes", is_flag=True, help="Confirm: delete this namespace's state.")
@click.option("--hard", is_flag=True, help="Also drop the commit record and checkpoint bindings.")
@click.pass_context
def reset_cmd(ctx: click.Context, namespace: str, yes: bool, hard: bool) -> None:
    """Delete a namespace's maps, snapshots and dedup state (epochs are always kept)."""
    if not yes:
        raise click.ClickException(
            f"refusing to delete state namespace {namespace!r} without --yes "
            "(maps, snapshots and dedup state are lost; running topologies must be stopped)"
        )
    n = reset_namespace(_redis(ctx), namespace, keep_fences=not hard)
    click.echo(f"deleted {n} keys of namespace {namespace!r}")
