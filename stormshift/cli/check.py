"""The ``stormshift check`` click command (mounted by the CLI package).

It sets its own exit code (``ctx.exit``): 0 nothing or info only, 1
warnings, 3 errors, 2 when the topology cannot be loaded at all.
"""

from __future__ import annotations

import click

from stormshift.check.dynamic import DEFAULT_MAX_TUPLES, DEFAULT_WALL_SECS
from stormshift.check.report import EXIT_LOAD
from stormshift.display import console, json_text, styled
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
@click.option("--max-tuples", type=click.IntRange(min=1), default=DEFAULT_MAX_TUPLES,
              show_default=True, metavar="N", help="The short run stops after N spout tuples.")
@click.option("--duration", type=click.FloatRange(min=0, min_open=True), default=DEFAULT_WALL_SECS,
              show_default=True, metavar="SECS",
              help="The short run's budget: past SECS seconds it is stopped and the report says "
                   "what it saw (a spout that sleeps or blocks never ends check).")
@click.pass_context
def check_command(ctx: click.Context, path: str, name: str | None, environment: str | None,
                  config_options: tuple[str, ...], as_json: bool, no_run: bool, max_tuples: int,
                  duration: float) -> None:
    from stormshift.check.runner import run_check
    from stormshift.cli.options import parse_overrides

    overrides = parse_overrides(config_options)
    try:
        report = run_check(path, name=name, environment=environment,
                           overrides=overrides or None, dynamic=not no_run,
                           max_tuples=max_tuples, wall_secs=duration)
    except StormshiftError as exc:
        console(stderr=True).print(styled(("error:", "bold red"), f" {exc}"), soft_wrap=True)
        ctx.exit(EXIT_LOAD)
    if as_json:
        click.echo(json_text(report.to_dict(), indent=2))
    else:
        report.print(console())
    ctx.exit(report.exit_code)
