"""The ``stormshift`` command: a thin shell over the library.

Every option also reads a ``STORMSHIFT_<OPTION>`` environment variable
(e.g. ``STORMSHIFT_REDIS``, ``STORMSHIFT_MASTER``). Errors stormshift raises
on purpose are printed as one clear message (exit 2), never as a traceback;
nothing below this module calls ``sys.exit``.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Literal

import click
from rich.console import Console

from stormshift.errors import StormshiftError

console = Console(stderr=True)
out = Console()


def _load(path: str, name: str | None, environment: str | None,
          overrides: dict[str, Any] | None = None) -> Any:
    from stormshift.topology.loader import load_topology

    return load_topology(path, name=name, environment=environment, overrides=overrides or None)


@click.group(context_settings={"auto_envvar_prefix": "STORMSHIFT", "help_option_names": ["-h", "--help"]})
@click.version_option(package_name="stormshift")
def cli() -> None:
    """Run streamparse (Storm) topologies unchanged on Spark, exactly once."""


@cli.command()
@click.argument("path")
@click.option("-n", "--name", help="Topology name (topologies/NAME.py) in a project dir.")
@click.option("-e", "--environment", help="Environment for par dicts / config.json envs.")
@click.option("--json", "as_json", is_flag=True, help="Print the graph as JSON.")
def inspect(path: str, name: str | None, environment: str | None, as_json: bool) -> None:
    """Print a topology's graph: components, par, streams and fields, groupings."""
    from stormshift.topology.render import graph_to_dict, render_graph

    graph = _load(path, name, environment)
    if as_json:
        out.print_json(json.dumps(graph_to_dict(graph)))
        return
    for table in _as_list(render_graph(graph)):
        out.print(table)


def _as_list(obj: Any) -> list[Any]:
    return list(obj) if isinstance(obj, (list, tuple)) else [obj]


@cli.command()
@click.argument("path")
@click.option("-n", "--name", help="Topology name (topologies/NAME.py) in a project dir.")
@click.option("-e", "--environment", help="Environment for par dicts / config.json envs.")
@click.option("--engine", type=click.Choice(["spark", "local"]), default="spark", show_default=True)
@click.option("--max-tuples", type=int, help="Stop after this many spout tuples.")
@click.option("--duration", type=float, help="Stop after this many seconds.")
@click.option("--until-done", is_flag=True, help="Run until every spout reaches end of input.")
@click.option("--master", default="local[*]", show_default=True, help="Spark master URL.")
@click.option("--checkpoint", "checkpoint_dir", help="Spark checkpoint directory.")
@click.option("--trigger", "trigger_secs", type=float, default=0.0, show_default=True,
              help="Seconds between micro-batches (0: as fast as possible).")
@click.option("--batch-max-tuples", type=int, help="Tuples per spout task per batch.")
@click.option("--redis", "redis_url", help="Redis URL (default: embedded server).")
@click.option("--sink", help="Where leaf emits go: jsonl:DIR, redis:STREAM or drop.")
@click.option("--reset-state", is_flag=True, help="Wipe existing state bound to another checkpoint.")
@click.option("--adopt-state", is_flag=True, help="Continue existing state from a new checkpoint.")
@click.option("--json", "as_json", is_flag=True, help="Print the final summary as JSON.")
@click.option("-o", "--option", "config_options", multiple=True, metavar="KEY=VALUE",
              help="Override a topology config entry (value parsed as JSON, else text); repeatable.")
@click.option("--conf", "confs", multiple=True, metavar="KEY=VALUE",
              help="Spark setting for the session (e.g. spark.speculation=true); repeatable.")
def run(path: str, name: str | None, environment: str | None, engine: Literal["spark", "local"],
        max_tuples: int | None, duration: float | None, until_done: bool, master: str,
        checkpoint_dir: str | None, trigger_secs: float, batch_max_tuples: int | None,
        redis_url: str | None, sink: str | None, reset_state: bool, adopt_state: bool,
        as_json: bool, config_options: tuple[str, ...], confs: tuple[str, ...]) -> None:
    """Run a topology (a project dir, topologies/NAME.py, or module:Class)."""
    from stormshift.cli_options import parse_confs, parse_overrides
    from stormshift.runner import RunOptions, run_topology

    if reset_state and adopt_state:
        raise click.UsageError("--reset-state and --adopt-state exclude each other")
    graph = _load(path, name, environment, parse_overrides(config_options))
    options = RunOptions(
        engine=engine, max_tuples=max_tuples, duration_secs=duration, until_done=until_done,
        master=master, checkpoint_dir=checkpoint_dir, trigger_secs=trigger_secs,
        batch_max_tuples=batch_max_tuples, redis_url=redis_url, sink=sink,
        state_mode="reset" if reset_state else "adopt" if adopt_state else "strict",
        spark_conf=tuple(parse_confs(confs).items()),
    )
    summary = run_topology(graph, options, progress=None if as_json else console)
    if as_json:
        out.print_json(json.dumps(summary.to_dict(), default=str))
    else:
        from stormshift.runner import print_summary

        print_summary(graph, summary, out)


def _mount_optional() -> None:
    """Sub-command groups that live beside their layer."""
    for module, attr in (
        ("stormshift.submit_cli", "submit_command"),
        ("stormshift.state.commands", "state"),
        ("stormshift.deadletter_cli", "deadletter_group"),
    ):
        try:
            mod = __import__(module, fromlist=[attr])
        except ModuleNotFoundError as exc:
            if exc.name == module:
                continue
            raise
        cli.add_command(getattr(mod, attr))


_mount_optional()


def main(argv: list[str] | None = None) -> int:
    """Console entry point: one clear line for our own errors, exit code 2."""
    try:
        cli.main(args=argv, prog_name="stormshift", standalone_mode=False)
    except click.exceptions.Abort:
        console.print("aborted")
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except StormshiftError as exc:
        console.print(f"[bold red]error:[/] {exc}", markup=True, highlight=False)
        return 2
    except KeyboardInterrupt:
        console.print("interrupted")
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
