"""The ``stormshift`` command: a thin shell over the library.

Runs in the driver process (the one ``stormshift`` or ``python -m stormshift``
starts; under ``stormshift submit``, spark-submit's driver runs it too). It
parses options, loads the topology, calls ``stormshift.runner`` or ``state/``,
prints, and turns the outcome into an exit code; nothing below this package
calls ``sys.exit``.

- ``run.py``, ``plan.py``, ``inspect.py``, ``submit.py``, ``state.py``, ``deadletter.py``,
  ``check.py``, ``shadow.py``, ``compare.py``, ``top.py``: one command (group) each;
  ``operate.py``: ``stop`` and ``ps`` (a run's lease, ``state/lease.py``).
- ``options.py``: every option more than one command takes, defined once
  (``--redis`` / ``STORMSHIFT_REDIS`` everywhere, ``-n``, ``-e``, ``-o``,
  ``--json``, ``--master``, ``--checkpoint``).
- ``exit_codes.py``: the exit code of a run, from its summary.

Errors stormshift raises on purpose are printed as one clear message, never as
a traceback (with ``--json`` also as ``{"exit_code", "error"}`` on stdout): exit 2
before a run starts (a live run of the namespace too), 5 when the run fails at run time,
6 when another run took its namespace over (``run --takeover``); 130 on Ctrl-C, SIGTERM
or ``stormshift stop``. A Redis error no command foresaw (a server that goes away,
or refuses a password, in a command that did not check it first) is worded by
``state/reach.describe`` the same way: one line with the fix, exit 2. Every
message is masked (``private.mask_text``): no URL password, no secret ``-o``
value. An embedded Redis server the command started is stopped when it exits,
however it exits.
"""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

import click

from stormshift.cli import exit_codes
from stormshift.cli.check import check_command
from stormshift.cli.compare import compare_command
from stormshift.cli.cutover import cutover_group, handback_command
from stormshift.cli.deadletter import deadletter_group
from stormshift.cli.inspect import inspect_command
from stormshift.cli.operate import ps_command, stop_command
from stormshift.cli.plan import plan_command
from stormshift.cli.run import run_command
from stormshift.cli.shadow import shadow_command
from stormshift.cli.state import state_group
from stormshift.cli.submit import submit_command
from stormshift.cli.top import top_command
from stormshift.display import console as safe_console
from stormshift.display import styled
from stormshift.errors import LeaseLostError, RunFailedError, StormshiftError
from stormshift.private import mask_text

__all__ = ["cli", "main"]

console = safe_console(stderr=True)


@click.group(context_settings={"auto_envvar_prefix": "STORMSHIFT", "help_option_names": ["-h", "--help"]})
@click.version_option(package_name="stormshift")
def cli() -> None:
    """Run streamparse (Storm) topologies unchanged on Spark, exactly once."""


for _command in (inspect_command, run_command, plan_command, submit_command, state_group,
                 deadletter_group, check_command, shadow_command, compare_command, top_command,
                 stop_command, ps_command, cutover_group, handback_command):
    cli.add_command(_command)


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM ends the command like Ctrl-C does (cleanup runs, exit 130)."""

    def interrupt(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _as_json(argv: list[str] | None, code: int, error: str) -> int:
    """With ``--json``, an error is a JSON object on stdout too (``exit_code``, ``error``):
    a script reading the output always gets one. Returns ``code``."""
    args = sys.argv[1:] if argv is None else argv
    if "--json" in args:
        click.echo(json.dumps({"exit_code": code, "error": mask_text(error)}))
    return code


def _redis_trouble(exc: Exception, argv: list[str] | None) -> str | None:
    """The one line for a Redis error that reached the top (None: not one), naming the
    server the command line (or the environment) gave."""
    from redis import exceptions as rex

    from stormshift.state.reach import describe

    if not isinstance(exc, (rex.RedisError, rex.RedisClusterException)):
        return None
    args = sys.argv[1:] if argv is None else argv
    given = [a.partition("=")[2] if a.startswith("--redis=") else args[i + 1]
             for i, a in enumerate(args)
             if (a == "--redis" and i + 1 < len(args)) or a.startswith("--redis=")]
    return describe(exc, given[-1] if given else None)


def main(argv: list[str] | None = None) -> int:
    """Console entry point: run the command, return its exit code (``exit_codes.py``)."""
    from stormshift.state.connection import stop_embedded

    try:
        with _sigterm_as_interrupt():
            rv = cli.main(args=argv, prog_name="stormshift", standalone_mode=False)
        return rv if isinstance(rv, int) else exit_codes.CLEAN
    except (click.exceptions.Abort, KeyboardInterrupt):
        console.print("interrupted")
        return exit_codes.INTERRUPTED
    except click.ClickException as exc:
        setattr(exc, "message", mask_text(exc.message))  # noqa: B010 - e.g. a bad -o value
        # echoed (newer click types ``message`` Final; the object is ours to show, once)
        exc.show()
        return _as_json(argv, exc.exit_code, exc.format_message())
    except LeaseLostError as exc:
        console.print(styled(("stopped:", "bold red"), f" {exc}"), soft_wrap=True)
        return _as_json(argv, exit_codes.TAKEN_OVER, str(exc))
    except RunFailedError as exc:
        console.print(styled(("run failed:", "bold red"), f" {exc}"), soft_wrap=True)
        return _as_json(argv, exit_codes.RUN_FAILED, str(exc))
    except StormshiftError as exc:
        console.print(styled(("error:", "bold red"), f" {exc}"), soft_wrap=True)
        return _as_json(argv, exit_codes.USAGE, str(exc))
    except Exception as exc:
        line = _redis_trouble(exc, argv)
        if line is None:
            raise
        console.print(styled(("error:", "bold red"), f" {line}"), soft_wrap=True)
        return _as_json(argv, exit_codes.USAGE, line)
    finally:
        stop_embedded()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
