"""``stormshift shadow PATH``: the offline shadow as a click command (``shadow_command``).

Mounted by the ``stormshift`` group; a thin shell over ``check``'s static
analysis (``shadow/findings.py``), ``run_shadow`` and the two reports. Exit
codes: ``EPILOG`` (the verdicts are ``shadow/verdict.py``'s).
"""

from __future__ import annotations

from typing import Any

import click

from stormshift.cli.options import (
    conf_option,
    json_option,
    master_option,
    parse_confs,
    parse_overrides,
    redis_option,
    topology_options,
)
from stormshift.display import console, json_text, visible
from stormshift.errors import StormshiftError

__all__ = ["EXIT_DIVERGE", "EXIT_EQUAL", "EXIT_USAGE", "ShadowUsageError", "shadow_command"]

EXIT_EQUAL, EXIT_DIVERGE, EXIT_USAGE = 0, 1, 2

EPILOG = (
    "\b\nExit codes (the verdict line):\n"
    "  0  SAFE TO SWITCH: no port difference (keys that differ by Storm's\n"
    "     replays or crash loss, input the legacy did not finish, a\n"
    "     nondeterministic component or rounding are counted, not blamed)\n"
    "  1  PORT DIFFERS: keys differ in the port\n"
    "  2  load, input or config error, or refused: a component writes\n"
    "     outside the framework (nothing ran)\n"
    "  3  NOTHING COMPARED: no leaf stream emitted, no bolt holds state,\n"
    "     no component logged\n"
    "  4  MOSTLY FAILED: on both sides a bolt failed most of its input\n"
    "\b\nResults per stream (any stream: leaf, or one a bolt reads), and the\n"
    "float tolerance (default rel 1e-9):\n"
    "  -o 'shadow.results={\"bolt:default\": {\"mode\": \"sum\", \"key\": [\"k\"]}}'\n"
    "  -o 'shadow.tolerance={\"abs\": 0.01, \"rel\": 1e-6}'\n"
    "\b\nFinal state left out (a bolt, or BOLT.ATTRIBUTE / BOLT.MAP):\n"
    "  -o 'shadow.state={\"ignore\": [\"bolt.started_at\"]}'"
)


class ShadowUsageError(click.ClickException):
    """A load, input or config error: shown as one line, exit code 2."""

    exit_code = EXIT_USAGE


@click.command("shadow", epilog=EPILOG)
@click.argument("path")
@topology_options
@click.option("--input", "input_text", default="spout", show_default=True,
              metavar="spout|jsonl:DIR|redis:STREAM[:START-END]",
              help="What both sides read: the project's spouts, JSON-lines files, or a Redis "
                   "Stream range (copied once, so both sides read the same entries).")
@click.option("--port", "port_path", metavar="PATH",
              help="The port's own project (a ported copy of PATH, same -n/-o); default PATH.")
@click.option("--namespace", envvar="STORMSHIFT_SHADOW_NAMESPACE", metavar="NS",
              help="The port's state namespace in Redis (default shadow-<topology>; reset first).")
@click.option("--legacy-faults", metavar="SPEC",
              help="Storm failures on the legacy side, e.g. fail:count@3+10-12,crash:count[1]@50.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False),
              help="Write the self-contained HTML report to this file.")
@json_option
@click.option("--max-tuples", type=int, metavar="N", help="Exactly N spout tuples on both sides.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the legacy run.")
@click.option("--port-engine", type=click.Choice(["spark", "local"]), default="spark",
              show_default=True,
              help="local: a dry run without Spark (with --legacy-faults: what Storm's "
                   "failures alone change).")
@master_option(default="local[2]", show_default=True)
@redis_option("Redis of the port's state (and of a redis: input); default: embedded.")
@click.option("--batch-max-tuples", type=int, help="Port: tuples per spout task per batch.")
@conf_option("Spark setting for the port's session; repeatable.")
@click.option("--allow-external-writes", is_flag=True,
              help="Run even though a component writes where the shadow cannot redirect it "
                   "(SQL, raw sockets; Redis, files, requests/urllib HTTP and confluent_kafka it "
                   "sends to scratch targets per side): "
                   "with the flag nothing is redirected and both sides write, so point them "
                   "at scratch targets first (-o for both, --legacy-option for the legacy "
                   "side alone).")
@click.option("--legacy-option", "legacy_options", multiple=True, metavar="KEY=VALUE",
              help="Like -o, for the legacy side only (e.g. its own scratch target of an "
                   "external write); repeatable.")
@click.pass_context
def shadow_command(ctx: click.Context, path: str, name: str | None, environment: str | None,
                   config_options: tuple[str, ...], input_text: str, port_path: str | None,
                   namespace: str | None, legacy_faults: str | None,
                   report_path: str | None, as_json: bool, max_tuples: int | None, seed: int,
                   port_engine: str, master: str, redis_url: str | None,
                   batch_max_tuples: int | None, confs: tuple[str, ...],
                   allow_external_writes: bool, legacy_options: tuple[str, ...]) -> None:
    """Run the same input through the legacy (Storm semantics) and the port (Spark); compare
    every leaf stream key by key."""
    from stormshift.shadow.report_html import write_html
    from stormshift.shadow.report_text import print_report
    from stormshift.shadow.run import ShadowOptions, execute, plan_shadow

    out, err = console(), console(stderr=True)
    try:
        overrides = parse_overrides(config_options)
        legacy_overrides = {**overrides, **parse_overrides(legacy_options)}
        graph = _load(path, name, environment, legacy_overrides)
        port_graph = _load(port_path or path, name, environment, overrides) \
            if port_path or legacy_options else None
        findings = _analyse(path, name, environment, legacy_overrides)
        port_findings = _analyse(port_path, name, environment, overrides) if port_path else None
        options = ShadowOptions(
            findings=findings, port_findings=port_findings,
            allow_external_writes=allow_external_writes,
            input=input_text, legacy_faults=legacy_faults, max_tuples=max_tuples, seed=seed,
            port_engine=port_engine, master=master, redis_url=redis_url,
            batch_max_tuples=batch_max_tuples, spark_conf=parse_confs(confs), namespace=namespace,
        )
        plan = plan_shadow(graph, options, port_graph=port_graph)
        if port_engine == "spark":  # its state server answers, before either side runs
            from stormshift.state.reach import reach

            reach(redis_url)
    except (StormshiftError, ValueError) as exc:
        raise ShadowUsageError(str(exc)) from exc
    progress = None if as_json else (lambda line: err.print(line, soft_wrap=True))
    result = execute(plan, on_progress=progress)
    if report_path:
        written = write_html(result, report_path)
        if not as_json:
            err.print(f"report: {written}")
    if as_json:
        click.echo(json_text(result.to_dict(), default=str, indent=2))
    else:
        print_report(result, out)
    ctx.exit(result.exit_code)


def _load(path: str, name: str | None, environment: str | None, overrides: dict[str, Any]) -> Any:
    from stormshift.topology.loader import load_topology

    graph = load_topology(path, name=name, environment=environment, overrides=overrides or None)
    for warning in graph.warnings:  # e.g. a mistyped -o key: "did you mean ..."
        click.echo(visible(f"warning: {warning}"), err=True)
    return graph


def _analyse(path: str, name: str | None, environment: str | None,
             overrides: dict[str, Any]) -> Any:
    """``check``'s static findings of a project dir or topology file (None for ``module:Class``:
    no sources to read)."""
    from pathlib import Path

    from stormshift.shadow.findings import analyse

    target = Path(path)
    if not (target.is_dir() or target.suffix == ".py"):
        return None
    return analyse(path, name, environment, overrides or None)
