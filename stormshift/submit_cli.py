"""``stormshift submit``: print (or run) the spark-submit command for a project.

Mounted by ``stormshift.cli``. Options after the known ones (e.g.
``--deploy-mode cluster --executor-memory 4g``) are passed to spark-submit.
"""

from __future__ import annotations

import shlex

import click

from stormshift.engines.spark.submit import build_submit_plan, run_submit

__all__ = ["submit_command"]


@click.command(
    "submit",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
)
@click.argument("path")
@click.option("-n", "--name", help="Topology name (topologies/NAME.py) in a project dir.")
@click.option("-e", "--environment", help="Environment for par dicts / config.json envs.")
@click.option("--master", required=True, help="Spark master URL (spark://, yarn, k8s://, local[N]).")
@click.option("--run", "do_run", is_flag=True, help="Run spark-submit instead of only printing it.")
@click.option("--checkpoint", "checkpoint_dir", help="Checkpoint dir (must be reachable by the driver).")
@click.option("--redis", "redis_url", help="Redis URL the cluster reaches (required in practice).")
@click.option("--trigger", "trigger_secs", type=float, help="Seconds between micro-batches.")
@click.option("--until-done", is_flag=True, help="Stop when every spout reaches end of input.")
@click.option("--batch-max-tuples", type=int, help="Tuples per spout task per batch.")
@click.option("--sink", help="Where leaf emits go: jsonl:DIR, redis:STREAM or drop.")
@click.option("--reset-state", is_flag=True, help="Wipe existing state bound to another checkpoint.")
@click.option("--adopt-state", is_flag=True, help="Continue existing state from a new checkpoint.")
@click.option("--build-dir", help="Where to write the zips (default PROJECT/_build/stormshift).")
@click.option("--no-ship-stormshift", is_flag=True,
              help="Do not ship stormshift.zip (the cluster has stormshift installed).")
@click.option("--spark-submit", "spark_submit", help="spark-submit to use (default: PATH, then pyspark's).")
@click.option("-o", "--option", "config_options", multiple=True, metavar="KEY=VALUE",
              help="Override a topology config entry (value parsed as JSON, else text); repeatable.")
@click.option("--conf", "confs", multiple=True, metavar="KEY=VALUE",
              help="Spark setting, passed to spark-submit as --conf; repeatable.")
@click.argument("spark_args", nargs=-1, type=click.UNPROCESSED)
def submit_command(path: str, name: str | None, environment: str | None, master: str, do_run: bool,
                   checkpoint_dir: str | None, redis_url: str | None, trigger_secs: float | None,
                   until_done: bool, batch_max_tuples: int | None, sink: str | None,
                   reset_state: bool, adopt_state: bool, build_dir: str | None, no_ship_stormshift: bool, spark_submit: str | None,
                   config_options: tuple[str, ...], confs: tuple[str, ...],
                   spark_args: tuple[str, ...]) -> None:
    """Ship a streamparse project to a Spark cluster with spark-submit."""
    from stormshift.cli_options import parse_confs, parse_overrides
    from stormshift.topology.loader import load_topology

    if reset_state and adopt_state:
        raise click.UsageError("--reset-state and --adopt-state exclude each other")
    overrides = parse_overrides(config_options)  # checked here; the driver parses them again
    forwarded = run_args(checkpoint_dir, redis_url, trigger_secs, until_done, batch_max_tuples, sink)
    forwarded += ["--reset-state"] if reset_state else ["--adopt-state"] if adopt_state else []
    forwarded += [arg for text in config_options for arg in ("-o", text)]
    conf_args = [arg for key, value in parse_confs(confs).items() for arg in ("--conf", f"{key}={value}")]
    graph = load_topology(path, name=name, environment=environment, overrides=overrides or None)
    plan = build_submit_plan(
        graph, master, name=name, environment=environment, run_args=forwarded,
        spark_args=[*conf_args, *spark_args], build_dir=build_dir, ship_stormshift=not no_ship_stormshift,
        spark_submit=spark_submit,
    )
    click.echo(shlex.join(plan.command))
    if do_run:
        code = run_submit(plan.command)
        if code:
            raise click.ClickException(f"spark-submit exited with code {code}")


def run_args(checkpoint_dir: str | None, redis_url: str | None, trigger_secs: float | None,
             until_done: bool, batch_max_tuples: int | None, sink: str | None) -> list[str]:
    """The ``stormshift run`` options forwarded to the driver."""
    args: list[str] = []
    for flag, value in (("--checkpoint", checkpoint_dir), ("--redis", redis_url),
                        ("--trigger", trigger_secs), ("--batch-max-tuples", batch_max_tuples),
                        ("--sink", sink)):
        if value is not None:
            args += [flag, str(value)]
    if until_done:
        args.append("--until-done")
    return args
