"""``stormshift submit PATH``: print (or run) the spark-submit command for a project.

Options after the known ones (e.g. ``--deploy-mode cluster --executor-memory
4g``) are passed to spark-submit; the run options are forwarded to the driver's
``stormshift run``, except what may hold a secret: ``--redis`` (its URL, a
password maybe) and every ``-o`` entry that names a secret or holds a URL with
a password (``private.is_secret_key`` has the rule). Those are shipped in files
only the user can read (0600, ``--files``) that the driver reads at start; they
are never printed nor put on spark-submit's or the driver's argv.
"""

from __future__ import annotations

import shlex

import click

from stormshift.cli.options import (
    checkpoint_option,
    conf_option,
    load_graph,
    master_option,
    par_option,
    parse_confs,
    parse_overrides,
    redis_option,
    run_control_options,
    secret_options,
    state_mode,
    topology_options,
)
from stormshift.private import mask_text

__all__ = ["run_args", "submit_command"]


@click.command(
    "submit",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
)
@click.argument("path")
@topology_options
@par_option
@master_option(required=True)
@click.option("--run", "do_run", is_flag=True, help="Run spark-submit instead of only printing it.")
@checkpoint_option("Checkpoint dir (must be reachable by the driver).")
@redis_option("Redis URL the cluster reaches (required in practice); shipped in a 0600 "
              "file, never printed nor on argv.")
@click.option("--namespace", metavar="NS",
              help="The state namespace in Redis (default: the topology's name).")
@run_control_options(trigger_default=None)
@click.option("--takeover", is_flag=True,
              help="Replace the live run of the namespace (forwarded to the driver's run).")
@click.option("--build-dir", help="Where to write the zips (default PROJECT/_build/stormshift).")
@click.option("--requirements", metavar="FILE",
              help="The project's Python dependencies (pip requirements; default: the project's "
                   "requirements.txt if it has one), their wheels (compiled ones included) "
                   "shipped as an archive on --archives.")
@click.option("--no-ship-stormshift", is_flag=True,
              help="Do not ship stormshift.zip (the cluster has stormshift installed).")
@click.option("--spark-submit", "spark_submit", help="spark-submit to use (default: PATH, then pyspark's).")
@conf_option("Spark setting, passed to spark-submit as --conf; repeatable.")
@click.argument("spark_args", nargs=-1, type=click.UNPROCESSED)
def submit_command(path: str, name: str | None, environment: str | None,
                   config_options: tuple[str, ...], pars: tuple[str, ...], master: str,
                   do_run: bool,
                   checkpoint_dir: str | None, redis_url: str | None, namespace: str | None,
                   trigger_secs: float | None, until_done: bool, batch_max_tuples: int | None, sink: str | None,
                   reset_state: bool, adopt_state: bool, takeover: bool, build_dir: str | None,
                   requirements: str | None,
                   no_ship_stormshift: bool, spark_submit: str | None, confs: tuple[str, ...],
                   spark_args: tuple[str, ...]) -> None:
    """Ship a streamparse project to a Spark cluster with spark-submit."""
    from stormshift.engines.spark import build_submit_plan, run_submit

    mode = state_mode(reset_state, adopt_state)
    parse_overrides(config_options)  # checked here; the driver parses them again
    forwarded = run_args(checkpoint_dir, None, trigger_secs, until_done, batch_max_tuples, sink)
    forwarded += ["-e", environment] if environment else []
    forwarded += ["--namespace", namespace] if namespace else []
    forwarded += {"reset": ["--reset-state"], "adopt": ["--adopt-state"]}.get(mode, [])
    shown_options, secret = secret_options(config_options)  # the secret ones: in a file
    forwarded += ["--takeover"] if takeover else []
    forwarded += [arg for text in shown_options for arg in ("-o", text)]
    forwarded += [arg for text in pars for arg in ("--par", text)]
    conf_args = [arg for key, value in parse_confs(confs).items() for arg in ("--conf", f"{key}={value}")]
    graph = load_graph(path, name, environment, config_options, pars)
    plan = build_submit_plan(
        graph, master, name=name, environment=environment, run_args=forwarded,
        spark_args=[*conf_args, *spark_args], build_dir=build_dir, ship_stormshift=not no_ship_stormshift,
        spark_submit=spark_submit, redis_url=redis_url,  # in 0600 files, never on argv
        secret_options=secret, requirements=requirements,
    )
    click.echo(mask_text(shlex.join(plan.command)))  # (nothing to mask: a last guard)
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
