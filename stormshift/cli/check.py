"""The ``stormshift check`` click command (mounted by the CLI package).

It sets its own exit code (``ctx.exit``): 0 nothing or info only, 1
warnings, 3 errors, 2 when the topology cannot be loaded at all.
"""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.markup import escape

from stormshift.check.report import EXIT_LOAD
from stormshift.errors import StormshiftError

__all__ = ["check_command"]

HELP = """Find what in a streamparse project will not port as is.

Reads the project's sources (ast) and runs the topology briefly on the local
engine (in this process; no Spark, no Redis; --no-run skips it). Each finding
names file:line, why it matters on Spark, the fix and its section of
migrations_guide/check.md.

\b
Exit codes:
  0  nothing found, or info only
  1  warnings, no errors
  2  the topology could not be loaded
  3  errors found
"""


@click.command("check", help=HELP)
@click.argument("path", type=click.Path(exists=True))
@click.option("-n", "--name", help="Topology name (topologies/NAME.py) in a project dir.")
@click.option("-e", "--environment", help="Environment for par dicts / config.json envs.")
@click.option("-o", "--option", "config_options", multiple=True, metavar="KEY=VALUE",
              help="Override a topology config entry (value parsed as JSON, else text); repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (for CI).")
@click.option("--no-run", is_flag=True, help="Static analysis only: skip the short local run.")
@click.pass_context
def check_command(ctx: click.Context, path: str, name: str | None, environment: str | None,
                  config_options: tuple[str, ...], as_json: bool, no_run: bool) -> None:
    from stormshift.check.runner import run_check
    from stormshift.cli.options import parse_overrides

    overrides = parse_overrides(config_options)
    try:
        report = run_check(path, name=name, environment=environment,
                           overrides=overrides or None, dynamic=not no_run)
    except StormshiftError as exc:
        Console(stderr=True).print(f"[bold red]error:[/] {escape(str(exc))}", markup=True, highlight=False,
                      soft_wrap=True)
        ctx.exit(EXIT_LOAD)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        report.print(Console())
    ctx.exit(report.exit_code)
