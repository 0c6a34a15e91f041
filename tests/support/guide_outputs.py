"""The command outputs a migrations guide shows, parsed from its Markdown.

A shown output is a ``text`` block whose first line is ``$ <program> ...`` and
whose last line is ``[exit code N]``; the lines between are what the command
printed. The guides' tests run each command again and compare.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Shown", "shown_outputs"]


@dataclass(frozen=True)
class Shown:
    guide: str  # the guide's file name, for test ids and messages
    line: int
    argv: tuple[str, ...]  # the program first: ("stormshift", "run", ...)
    output: tuple[str, ...]
    exit_code: int

    @property
    def args(self) -> tuple[str, ...]:
        """The arguments after the program."""
        return self.argv[1:]

    @property
    def id(self) -> str:
        return f"{self.guide}:{self.line} {' '.join(self.argv)}"[:110]


def shown_outputs(guide: Path, programs: tuple[str, ...] = ("stormshift",)) -> list[Shown]:
    """Every shown output of ``guide`` whose command runs one of ``programs``."""
    found: list[Shown] = []
    lines = guide.read_text(encoding="utf-8").splitlines()
    starts = tuple(f"$ {p} " for p in programs)
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```text" and lines[i + 1].startswith(starts):
            end = lines.index("```", i + 1)
            body = lines[i + 2:end]
            code = re.fullmatch(r"\[exit code (\d+)\]", body[-1])
            assert code, f"{guide.name}:{end}: a shown output ends with [exit code N]"
            found.append(Shown(guide.name, i + 2, tuple(shlex.split(lines[i + 1][2:])),
                               tuple(line.rstrip() for line in body[:-1]), int(code.group(1))))
            i = end
        i += 1
    return found
