"""Every ``stormshift ...`` command line the docs show is one the real CLI accepts.

Command lines come from the Markdown itself: fenced code blocks (bash, sh,
console, shell or untagged; ``\\`` continuations joined, ``$ `` prompts and
``#`` comments stripped) and inline code spans of README.md, the
``migrations_guide/`` and the examples' READMEs. Placeholders (PROJECT, NAME,
DIR, ...) become real values. Each fenced line is resolved down its
subcommand chain and parsed with click's ``make_context``, which refuses an
unknown option, a bad value and a missing argument; an inline span (often a
fragment such as ``stormshift run``) must name real commands and real
options. The cheap ones also run end to end as subprocesses.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from stormshift.cli import cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "migrations_guide").glob("*.md")),
        *sorted(ROOT.glob("examples/*/README.md"))]
SHELL_TAGS = {"", "bash", "sh", "console", "shell", "shell-session"}
FENCE = re.compile(r"^\s*```\s*([\w-]*)")
INLINE = re.compile(r"`(stormshift [^`]+)`")
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
# the project a doc's PROJECT stands for, where it is not adclicks
PROJECT_OF = {"migrations_guide/sources.md": str(ROOT / "tests/fixtures/topologies/pixels")}
PLACEHOLDERS = {
    "PROJECT": str(ROOT / "examples" / "adclicks"),
    "path/to/project": str(ROOT / "examples" / "adclicks"),
    "NAME": "adclicks",
    "DIR": "/tmp/stormshift-docs-ck",
    "NS": "adclicks",
    "COMPONENT": "parse_bolt",
    "MAP": "clicks",
    "KEY": "k",
    "M": "clicks",
    "C": "parse_bolt",
    "ID": "1-0",
    "URL": REDIS_URL,
}
SEPARATORS = {"&&", "||", ";", "|"}


@dataclass(frozen=True)
class DocCommand:
    where: str  # file:line
    argv: tuple[str, ...]  # after "stormshift"
    inline: bool

    @property
    def id(self) -> str:
        return f"{self.where} stormshift {' '.join(self.argv)}"[:120]


def _substitute(token: str, doc: str) -> str:
    if token == "PROJECT" and doc in PROJECT_OF:
        return PROJECT_OF[doc]
    if token in PLACEHOLDERS:
        return PLACEHOLDERS[token]
    if token.startswith(("examples/", "tests/")):
        return str(ROOT / token)
    return token


def _split_commands(line: str) -> list[list[str]]:
    """``stormshift ...`` invocations in one shell line (``a && stormshift b``, comments
    stripped)."""
    tokens = shlex.split(line, comments=True)
    out: list[list[str]] = []
    current: list[str] = []
    for token in [*tokens, ";"]:
        if token in SEPARATORS:
            if current and current[0] == "stormshift":
                out.append(current[1:])
            current = []
        else:
            current.append(token)
    return out


def _fenced_lines(text: str) -> list[tuple[int, str]]:
    """``(line number, logical line)`` of the shell code blocks of ``text``."""
    lines: list[tuple[int, str]] = []
    in_block, shell, pending, start = False, False, "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        fence = FENCE.match(raw)
        if fence:
            in_block = not in_block
            shell = in_block and fence.group(1).lower() in SHELL_TAGS
            continue
        if not (in_block and shell):
            continue
        line = raw.strip()
        line = line.removeprefix("$ ")
        if not pending:
            start = n
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        lines.append((start, pending + line))
        pending = ""
    return lines


def doc_commands() -> list[DocCommand]:
    found: list[DocCommand] = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        rel = str(doc.relative_to(ROOT))
        for n, line in _fenced_lines(text):
            for argv in _split_commands(line):
                found.append(DocCommand(f"{rel}:{n}", tuple(_substitute(t, rel) for t in argv), False))
        for n, line in enumerate(text.splitlines(), 1):
            for span in INLINE.findall(line):
                argv = shlex.split(span)[1:]
                found.append(DocCommand(f"{rel}:{n}", tuple(_substitute(t, rel) for t in argv), True))
    return found


COMMANDS = doc_commands()
FENCED = [c for c in COMMANDS if not c.inline]
INLINE_SPANS = [c for c in COMMANDS if c.inline]


def leaf_context(argv: list[str]) -> click.Context:
    """Parse ``argv`` the way ``stormshift`` does, down to the command it names."""
    ctx = cli.make_context("stormshift", list(argv))
    while isinstance(ctx.command, click.Group):
        rest = [*ctx._protected_args, *ctx.args]
        if not rest:
            raise click.UsageError(f"{ctx.command_path} needs a subcommand", ctx=ctx)
        name, cmd, sub_args = ctx.command.resolve_command(ctx, rest)
        assert cmd is not None and name is not None
        ctx = cmd.make_context(name, sub_args, parent=ctx)
    return ctx


def _hidden_used(ctx: click.Context) -> list[str]:
    """Deprecated (hidden) options a command line uses: docs must show the current ones."""
    used: list[str] = []
    while ctx is not None:
        for param in ctx.command.params:
            if (isinstance(param, click.Option) and param.hidden and param.name
                    and ctx.get_parameter_source(param.name) is click.core.ParameterSource.COMMANDLINE):
                used.append(param.opts[0])
        ctx = ctx.parent  # type: ignore[assignment]
    return used


def test_the_docs_show_commands() -> None:
    """The parser finds the docs' commands (a parser that finds none would pass everything)."""
    assert len(FENCED) >= 15, [c.id for c in FENCED]
    where = {c.where.split(":")[0] for c in FENCED}
    assert {"README.md", "migrations_guide/README.md", "migrations_guide/state.md"} <= where
    subcommands = {c.argv[0] for c in FENCED}
    assert {"inspect", "run", "submit", "state", "deadletter"} <= subcommands


@pytest.mark.parametrize("command", FENCED, ids=[c.id for c in FENCED])
def test_fenced_command_parses(command: DocCommand, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a --out FILE lands here
    try:
        ctx = leaf_context(list(command.argv))
    except click.exceptions.Exit as done:  # --help, --version
        assert done.exit_code == 0
        return
    except click.ClickException as exc:
        pytest.fail(f"{command.where}: `stormshift {shlex.join(command.argv)}` is refused by the "
                    f"CLI: {exc.format_message()}")
    assert not _hidden_used(ctx), f"{command.where} uses deprecated {_hidden_used(ctx)}"


def _option_names(cmd: click.Command) -> set[str]:
    names: set[str] = set()
    for param in cmd.params:
        if isinstance(param, click.Option) and not param.hidden:
            names.update(param.opts + param.secondary_opts)
    return names | {"-h", "--help"}


@pytest.mark.parametrize("command", INLINE_SPANS, ids=[c.id for c in INLINE_SPANS])
def test_inline_command_names_real_commands_and_options(command: DocCommand) -> None:
    cmd: click.Command = cli
    options = _option_names(cli)
    words = [w for w in command.argv if not w.startswith("[")]
    for word in words:
        if isinstance(cmd, click.Group) and not word.startswith("-"):
            sub = cmd.get_command(click.Context(cmd), word)
            assert sub is not None, f"{command.where}: no command `{cmd.name} {word}`"
            cmd = sub
            options |= _option_names(cmd)
        elif word.startswith("-"):
            flag = word.split("=", 1)[0].rstrip("]")
            assert flag in options, f"{command.where}: `{cmd.name}` has no option {flag}"


def test_a_wrong_option_in_the_docs_would_fail() -> None:
    """The check itself: yesterday's drift is refused."""
    for argv in (["deadletter", "list"], ["state", "ls", "--redis-url", REDIS_URL],
                 ["run", "x", "--no-such-option"]):
        with pytest.raises(click.UsageError):
            leaf_context(argv)


# -- the cheap ones, for real --------------------------------------------------------------
def stormshift(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "STORMSHIFT_PURE": "1", "COLUMNS": "80"}
    return subprocess.run([sys.executable, "-m", "stormshift", *args], capture_output=True,
                          text=True, timeout=180, env=env, cwd=cwd, check=False)


def _cheap(command: DocCommand) -> bool:
    return (command.argv[:1] == ("inspect",) and Path(command.argv[1]).exists()) or \
        command.argv[-1:] in (("--help",), ("-h",))


CHEAP = [c for c in FENCED if _cheap(c)]


@pytest.mark.parametrize("command", CHEAP, ids=[c.id for c in CHEAP])
def test_cheap_doc_command_runs(command: DocCommand) -> None:
    done = stormshift(*command.argv)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()


def test_inspect_text_and_json_end_to_end() -> None:
    text = stormshift("inspect", "examples/adclicks", cwd=ROOT)
    assert text.returncode == 0, text.stderr
    assert "ad_log_spout" in text.stdout and "parse_bolt" in text.stdout
    assert max(len(line) for line in text.stdout.splitlines()) <= 80
    graph = json.loads(stormshift("inspect", "examples/adclicks", "--json", cwd=ROOT).stdout)
    assert "ad_log_spout" in json.dumps(graph)


@pytest.mark.redis  # the child reaches the Redis server at REDIS_URL
def test_state_ls_with_redis_end_to_end() -> None:
    done = stormshift("state", "ls", "--redis", REDIS_URL)
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr


def _all_commands() -> list[tuple[str, ...]]:
    chains: list[tuple[str, ...]] = []

    def walk(cmd: click.Command, chain: tuple[str, ...]) -> None:
        chains.append(chain)
        if isinstance(cmd, click.Group):
            for name in sorted(cmd.commands):
                walk(cmd.commands[name], (*chain, name))

    walk(cli, ())
    return chains


@pytest.mark.parametrize("chain", _all_commands(), ids=lambda c: " ".join(c) or "stormshift")
def test_help_of_every_command(chain: tuple[str, ...]) -> None:
    """In process (an interpreter per command cost most of this file): the console entry
    itself is the subprocess of :func:`test_the_console_entry_prints_help`."""
    done = CliRunner(env={"COLUMNS": "80"}).invoke(cli, [*chain, "--help"], prog_name="stormshift")
    assert done.exit_code == 0, done.output
    assert done.output.startswith("Usage: stormshift")
    assert max(len(line) for line in done.output.splitlines()) <= 80
    if chain == ("run",):
        assert "Exit codes:" in done.output and "130" in done.output


def test_the_console_entry_prints_help() -> None:
    done = stormshift("run", "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: stormshift run")
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
