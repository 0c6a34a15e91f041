"""Every option that more than one command takes, defined once.

One name per concept in every command:

- ``--redis URL`` (env ``STORMSHIFT_REDIS``): the state server; without it the
  embedded Redis of the current directory (started, and stopped on exit, by
  the command). Its shape is checked as it is parsed (``state/url.py``): a
  malformed URL is one line, exit 2, in every command that takes the option,
  before the command runs; whether the server answers is checked by the
  command when it is about to use it (``cli/connect.py``, the Spark engine's
  start-up), after the checks that need no server.
- ``-n/--name`` (``STORMSHIFT_NAME``), ``-e/--environment``
  (``STORMSHIFT_ENVIRONMENT``) and ``-o/--option KEY=VALUE``: how a topology is
  loaded; every command that loads one takes all three. ``-o`` overrides a
  topology config entry (like streamparse's ``sparse run -o``): the value is
  parsed as JSON when it parses (``20000``, ``true``, ``null``, ``"x"``), else
  kept as the string, so ``-o a.path=/data/x`` needs no quoting. The values
  of secret entries (``private.is_secret_key``) are masked in everything the
  command shows from then on, errors included.
- ``--master`` (``STORMSHIFT_MASTER``), ``--checkpoint``
  (``STORMSHIFT_CHECKPOINT``), ``--conf KEY=VALUE`` (a Spark setting, kept as
  a string like spark-submit's ``--conf``) and the run options ``run`` and
  ``submit`` share.
- ``--par COMPONENT=N`` (repeatable): a component's parallelism instead of the
  declared one (``storm rebalance -e``); ``run``, ``inspect``, ``plan`` and
  ``submit`` take it.
- ``--json``: machine-readable output.

Options of one command only read ``STORMSHIFT_<COMMAND>_<OPTION>`` (click's
``auto_envvar_prefix``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import click

__all__ = [
    "checkpoint_option", "conf_option", "deprecated_alias", "json_option", "load_graph",
    "master_option", "par_option", "parse_confs", "parse_overrides", "redis_option",
    "run_control_options",
    "split_pair", "state_mode", "topology_options",
]

F = TypeVar("F", bound=Callable[..., Any])


def _stack(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    def apply(fn: F) -> F:
        for decorator in reversed(decorators):
            fn = decorator(fn)
        return fn

    return apply


def redis_option(help: str = "Redis URL of the state server (default: embedded Redis of the "
                              "current directory).", flag: str = "--redis",
                 dest: str = "redis_url", envvar: str | None = "STORMSHIFT_REDIS"
                 ) -> Callable[[F], F]:
    """A Redis URL option whose shape is checked as it is parsed (module doc)."""
    return click.option(flag, dest, envvar=envvar, metavar="URL", default=None, help=help,
                        callback=_checked_url)


def _checked_url(_ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--redis`` (or the environment's URL when it is not given) checked, or InfraError."""
    from stormshift.state.reach import configured_url
    from stormshift.state.url import check_url

    url = configured_url(value) if getattr(param, "envvar", None) else value
    if url:
        check_url(url)
    return value


json_option: Callable[[F], F] = click.option("--json", "as_json", is_flag=True,
                                             help="Machine-readable JSON output.")

topology_options: Callable[[F], F] = _stack(
    click.option("-n", "--name", envvar="STORMSHIFT_NAME", default=None,
                 help="Topology name (topologies/NAME.py) in a project dir."),
    click.option("-e", "--environment", envvar="STORMSHIFT_ENVIRONMENT", default=None,
                 help="Environment for par dicts / config.json envs."),
    click.option("-o", "--option", "config_options", multiple=True, metavar="KEY=VALUE",
                 help="Override a topology config entry (value parsed as JSON, else text); "
                      "repeatable."),
)


par_option: Callable[[F], F] = click.option(
    "--par", "pars", multiple=True, metavar="COMPONENT=N",
    help="Run COMPONENT with N tasks instead of its declared par (storm rebalance -e); on an "
         "existing checkpoint its state is re-split from the next batch, or the run is refused "
         "before any batch with the reason. Repeatable.")


def master_option(**kw: Any) -> Callable[[F], F]:
    kw.setdefault("help", "Spark master URL (local[N], spark://, yarn, k8s://).")
    return click.option("--master", envvar="STORMSHIFT_MASTER", **kw)


def checkpoint_option(help: str = "Spark checkpoint directory.") -> Callable[[F], F]:
    return click.option("--checkpoint", "checkpoint_dir", envvar="STORMSHIFT_CHECKPOINT",
                        metavar="DIR", help=help)


def conf_option(help: str) -> Callable[[F], F]:
    return click.option("--conf", "confs", multiple=True, metavar="KEY=VALUE", help=help)


def run_control_options(trigger_default: float | None) -> Callable[[F], F]:
    """How a run is driven: the options ``run`` has and ``submit`` forwards to it."""
    return _stack(
        click.option("--trigger", "trigger_secs", type=float, default=trigger_default,
                     show_default=trigger_default is not None,
                     help="Seconds between micro-batches (0: as fast as possible)."),
        click.option("--until-done", is_flag=True, help="Run until every spout reaches end of input."),
        click.option("--batch-max-tuples", type=int, help="Tuples per spout task per batch."),
        click.option("--sink", help="Where leaf emits go: jsonl:DIR, redis:STREAM or drop."),
        click.option("--reset-state", is_flag=True,
                     help="Wipe existing state bound to another checkpoint."),
        click.option("--adopt-state", is_flag=True,
                     help="Continue existing state from a new checkpoint."),
    )


def state_mode(reset_state: bool, adopt_state: bool) -> str:
    """``--reset-state`` / ``--adopt-state`` as the engine's ``state_mode``."""
    if reset_state and adopt_state:
        raise click.UsageError("--reset-state and --adopt-state exclude each other")
    return "reset" if reset_state else "adopt" if adopt_state else "strict"


def deprecated_alias(flag: str, dest: str, instead: str, **kw: Any) -> Callable[[F], F]:
    """A hidden old spelling that still works and says, in one line, what to use instead."""

    def warn(_ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        if value is not None:
            click.echo(f"warning: {flag} is deprecated; use {instead}", err=True)
        return value

    return click.option(flag, dest, hidden=True, default=None, expose_value=True,
                        callback=warn, **kw)


def split_pair(text: str, flag: str) -> tuple[str, str]:
    """``KEY=VALUE`` -> ``(KEY, VALUE)``; a clear usage error otherwise (which shows no
    text that may be a secret: a value without its key is not shown)."""
    from stormshift.private import mask_option

    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        shown = repr(mask_option(text)) if sep else "a value without '=' (not shown)"
        raise click.BadParameter(f"{shown} is not KEY=VALUE (e.g. {flag} adclicks.events=20000)",
                                 param_hint=flag)
    return key, value


def _json_or_text(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


def parse_overrides(pairs: Iterable[str]) -> dict[str, Any]:
    """Topology config overrides from ``-o`` values (later ones win); the secret ones'
    values masked in all this process shows from now on (``private.hide_secrets``)."""
    from stormshift.private import hide_secrets

    out: dict[str, Any] = {}
    for text in pairs:
        key, value = split_pair(text, "-o")
        out[key] = _json_or_text(value)
        hide_secrets({key: value})  # as typed, and as parsed ('"x"' is x)
        hide_secrets({key: out[key]})
    return out


def secret_options(pairs: Iterable[str]) -> tuple[list[str], list[str]]:
    """``-o`` texts split into (those that may be shown, those that hold a secret:
    ``private.is_secret_option``), each in the given order."""
    from stormshift.private import is_secret_option

    shown: list[str] = []
    secret: list[str] = []
    for text in pairs:
        key, value = split_pair(text, "-o")
        (secret if is_secret_option(key, value) else shown).append(text)
    return shown, secret


def parse_confs(pairs: Iterable[str]) -> dict[str, str]:
    """Spark settings from ``--conf`` values (later ones win)."""
    return dict(split_pair(text, "--conf") for text in pairs)


def load_graph(path: str, name: str | None, environment: str | None,
               config_options: Iterable[str] = (), pars: Iterable[str] = ()) -> Any:
    """The topology graph at ``path`` as ``-n``, ``-e``, ``-o`` and ``--par`` ask."""
    from stormshift.display import visible
    from stormshift.private import hide_secrets
    from stormshift.topology.loader import load_topology
    from stormshift.topology.rebalance import parse_pars, with_par

    overrides = parse_overrides(config_options)
    wanted = parse_pars(pars)
    graph = load_topology(path, name=name, environment=environment, overrides=overrides or None)
    hide_secrets(graph.config)  # the project's own secret entries (config.json) too
    for warning in graph.warnings:  # e.g. a mistyped -o key: "did you mean ..."
        click.echo(visible(f"warning: {warning}"), err=True)
    return with_par(graph, wanted) if wanted else graph
