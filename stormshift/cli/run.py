"""``stormshift run PATH``: run a topology on the Spark or the local engine, then report.

The exit code says how the run went (``exit_codes.py``); ``--json`` prints the
summary with it as ``"exit_code"``.
"""

from __future__ import annotations

from typing import Literal

import click

from stormshift.cli.exit_codes import EPILOG, run_exit_code
from stormshift.cli.options import (
    checkpoint_option,
    conf_option,
    json_option,
    load_graph,
    master_option,
    par_option,
    parse_confs,
    redis_option,
    run_control_options,
    state_mode,
    topology_options,
)
from stormshift.display import console, json_text

__all__ = ["run_command"]


@click.command("run", epilog=EPILOG)
@click.argument("path")
@topology_options
@par_option
@click.option("--engine", type=click.Choice(["spark", "local"]), default="spark", show_default=True)
@click.option("--max-tuples", type=int, metavar="N", help=(
    "Stop after exactly N spout tuples in all (every spout and spout task together, split "
    "evenly in a fixed order, so both engines take the same tuples whatever the batch size); "
    "the last batch is cut at N and committed. Spark: N counts from the checkpoint's start, so "
    "a rerun with a larger N continues where the last one stopped. Stops at end of input if "
    "that comes first (as --until-done); --duration stops it earlier."))
@click.option("--duration", type=float, metavar="SECS", help=(
    "Stop after SECS seconds, counted from the first batch (Spark's start-up excluded); the "
    "batch in flight commits first. Whichever of --max-tuples, --until-done and --duration "
    "comes first ends the run."))
@click.option("--log-level", type=click.Choice(["debug", "info", "warn", "error"],
                                               case_sensitive=False),
              help="Level of components' self.logger lines (default: the topology's "
                   "pystorm.log.level, else info).")
@click.option("--log-file", type=click.Path(dir_okay=False),
              help="Where components' log lines go (default .stormshift/logs/NAME.log).")
@run_control_options(trigger_default=0.0)
@master_option(default="local[*]", show_default=True)
@checkpoint_option()
@click.option("--namespace", metavar="NS", help=(
    "Spark: the state namespace in Redis (default: the topology's name). A shadow port runs "
    "under its own (e.g. shadow-NAME) with its own --checkpoint, so it never shares state "
    "keys with the production run."))
@click.option("--takeover", is_flag=True, help=(
    "Spark: replace the live run of the namespace (its lease, in Redis): it stops at its next "
    "lease renewal, commits nothing after this run took over and exits 6. Without it a live "
    "run there refuses this one (exit 2, naming it; `stormshift stop NS` stops it)."))
@redis_option()
@conf_option("Spark setting for the session (e.g. spark.speculation=true); repeatable.")
@click.option("--metrics-port", type=click.IntRange(0, 65535), metavar="PORT", help=(
    "Serve the run's metrics in the Prometheus text format on http://HOST:PORT/metrics "
    "(stormshift_* per component and task; 0: any free port, printed at start)."))
@click.option("--metrics-host", default="127.0.0.1", show_default=True, metavar="HOST",
              help="Address the metrics endpoint binds to (0.0.0.0: every interface).")
@json_option
def run_command(path: str, name: str | None, environment: str | None,
                config_options: tuple[str, ...], pars: tuple[str, ...],
                engine: Literal["spark", "local"],
                max_tuples: int | None, duration: float | None, log_level: str | None,
                log_file: str | None, trigger_secs: float,
                until_done: bool, batch_max_tuples: int | None, sink: str | None,
                reset_state: bool, adopt_state: bool, master: str, checkpoint_dir: str | None,
                namespace: str | None, takeover: bool, redis_url: str | None,
                confs: tuple[str, ...],
                metrics_port: int | None, metrics_host: str, as_json: bool) -> None:
    """Run a topology (a project dir, topologies/NAME.py, or module:Class)."""
    from stormshift.runner import RunOptions, print_summary, run_topology

    mode = state_mode(reset_state, adopt_state)
    if log_level:  # captured lines are filtered at the source, as pystorm does
        config_options = (*config_options, f"pystorm.log.level={log_level.lower()}")
    graph = load_graph(path, name, environment, config_options, pars)
    if engine == "local":
        _warn_unused_by_local(click.get_current_context())
    options = RunOptions(
        engine=engine, max_tuples=max_tuples, duration_secs=duration, until_done=until_done,
        master=master, checkpoint_dir=checkpoint_dir, trigger_secs=trigger_secs,
        batch_max_tuples=batch_max_tuples, redis_url=redis_url, sink=sink,
        state_mode=mode,  # type: ignore[arg-type]
        spark_conf=tuple(parse_confs(confs).items()), log_file=log_file, log_level=log_level,
        namespace=namespace, metrics_port=metrics_port, metrics_host=metrics_host,
        takeover=takeover,
    )
    summary = run_topology(graph, options, progress=None if as_json else console(stderr=True))
    code = run_exit_code(summary)
    out = console()
    if as_json:
        click.echo(json_text({**summary.to_dict(), "exit_code": code}, default=str, indent=2))
    else:
        print_summary(graph, summary, out)
    if code:
        raise click.exceptions.Exit(code)


def _warn_unused_by_local(ctx: click.Context) -> None:
    """The local engine keeps no state in Redis and no checkpoint: say so when the command
    line gives it options only the Spark engine uses (it never writes to that state)."""
    flags = {"redis_url": "--redis", "namespace": "--namespace", "checkpoint_dir": "--checkpoint",
             "reset_state": "--reset-state", "adopt_state": "--adopt-state",
             "takeover": "--takeover"}
    given = [flag for param, flag in flags.items()
             if ctx.get_parameter_source(param) is click.core.ParameterSource.COMMANDLINE]
    if given:
        click.echo(f"warning: {', '.join(given)} not used: the local engine keeps no state in "
                   "Redis and no checkpoint (nothing there is read or written)", err=True)
    if ctx.get_parameter_source("sink") is click.core.ParameterSource.COMMANDLINE:
        click.echo("warning: --sink not used: the local engine keeps leaf emits in memory for "
                   "the summary (Storm semantics, no sink); --engine spark writes them to "
                   f"{ctx.params.get('sink')}", err=True)
