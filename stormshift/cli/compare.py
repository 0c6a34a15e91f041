"""``stormshift compare PATH --live``: the live shadow's check, as a click command.

Mounted by the ``stormshift`` group; a thin shell over ``shadow.live`` and the
shadow's two reports. Meant for cron or CI during a migration. Exit code: 0
when every mapped leaf stream agrees within tolerance, 1 when they diverge, 2
for load, mapping or config errors (nothing compared).
"""

from __future__ import annotations

import click

from stormshift.cli.options import json_option, load_graph, redis_option, topology_options
from stormshift.cli.shadow import ShadowUsageError
from stormshift.display import console, json_text
from stormshift.errors import StormshiftError

__all__ = ["compare_command"]

EPILOG = (
    "\b\nExit codes:\n"
    "  0  every mapped leaf stream equal within tolerance\n"
    "  1  the port diverges from the legacy's outputs\n"
    "  2  load, mapping or config error (nothing compared)\n"
    "  3  NOTHING COMPARED: no mapped leaf stream held a key on either side\n"
    "\b\nWhere the legacy wrote each leaf stream (see migrations_guide, Live shadow):\n"
    "  -o 'shadow.legacy={\"spend_bolt:default\": {\"redis_hash\": \"spend:*\",\n"
    "      \"key\": \"field\", \"value\": \"json:spend\"}}'"
)


@click.command("compare", epilog=EPILOG)
@click.argument("path")
@topology_options
@click.option("--live", is_flag=True, help="Compare a running port's sink with the legacy's "
                                           "own outputs (required: the only mode so far).")
@click.option("--port-sink", required=True, metavar="jsonl:DIR|redis:STREAM",
              help="The --sink the port runs with.")
@click.option("--since", metavar="WHEN", help="Window start: a duration ago (15m, 1h, 2d), "
                                              "epoch ms or ISO-8601 with a zone; default: all.")
@click.option("--until", metavar="WHEN", help="Window end (exclusive), same forms and now; "
                                              "default: no end.")
@redis_option("Redis of the port's sink (and of the legacy's outputs without "
              "--legacy-redis); default redis://127.0.0.1:6379.")
@redis_option("Redis the legacy topology writes to, when not --redis.", flag="--legacy-redis",
              dest="legacy_redis_url", envvar=None)
@click.option("--report", "report_path", type=click.Path(dir_okay=False),
              help="Write the self-contained HTML report to this file.")
@json_option
@click.pass_context
def compare_command(ctx: click.Context, path: str, name: str | None, environment: str | None,
                    config_options: tuple[str, ...], live: bool, port_sink: str,
                    since: str | None, until: str | None, redis_url: str | None,
                    legacy_redis_url: str | None, report_path: str | None,
                    as_json: bool) -> None:
    """Compare the port's outputs with the legacy topology's own outputs, key by key."""
    from stormshift.shadow.live import execute_live, plan_live
    from stormshift.shadow.report_html import write_html
    from stormshift.shadow.report_text import print_report

    if not live:
        raise ShadowUsageError("only --live is supported; fix: add --live (for the offline "
                               "comparison of two runs, use stormshift shadow)")
    try:
        graph = load_graph(path, name, environment, config_options)
        plan = plan_live(graph, port_sink=port_sink, since=since, until=until,
                         redis_url=redis_url, legacy_redis_url=legacy_redis_url)
        result = execute_live(plan)
    except (StormshiftError, ValueError) as exc:
        raise ShadowUsageError(str(exc)) from exc
    if report_path:
        written = write_html(result, report_path)
        if not as_json:
            console(stderr=True).print(f"report: {written}")
    if as_json:
        click.echo(json_text(result.to_dict(), default=str, indent=2))
    else:
        print_report(result, console())
    ctx.exit(result.exit_code)
