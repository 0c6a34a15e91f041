"""The distinct errors of a run, per component: what the user must see first.

Both engines feed one ``ErrorDigest``: every error a component raised (or
reported) is reduced to its *kind* -- exception type, message, the user's
``file:line`` -- and counted; the first traceback of each kind is kept. The
run summary prints the kinds per component with their counts and one
traceback each, so a bolt that fails 2,000 times shows one line, not 2,000.

Errors raised at the same line with the same type are one kind, whatever the
values their messages quote (``cannot handle 13``, ``cannot handle 14``: the
first message is shown); errors without a location are told apart by message.
Past ``MAX_KINDS`` kinds per component, further kinds are folded into an
``(other errors)`` entry, still counted. Pure: no engine, no I/O.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["ErrorDigest", "ErrorKind", "split_error_text"]

MAX_KINDS = 10
_OTHER = ("(other errors)", "", "")
@dataclass
class ErrorKind:
    """One distinct error of one component."""

    component: str
    type: str
    message: str
    location: str
    count: int = 0
    traceback: str = ""

    def headline(self, width: int = 0) -> str:
        """``ValueError: cannot handle 13 (src/bolts/x.py:12 in process) x2,000``."""
        where = f" ({self.location})" if self.location else ""
        text = f"{self.type}: {self.message}{where}" if self.message else f"{self.type}{where}"
        return f"{text} x{self.count:,}" if self.count != 1 else text

    def to_dict(self) -> dict[str, Any]:
        return {"component": self.component, "type": self.type, "message": self.message,
                "location": self.location, "count": self.count, "traceback": self.traceback}


class ErrorDigest:
    """Distinct errors per component, in the order they were first seen."""

    def __init__(self) -> None:
        self._kinds: dict[str, dict[tuple[str, str, str], ErrorKind]] = {}

    def __bool__(self) -> bool:
        return any(self._kinds.values())

    def add(self, component: str, type_name: str, message: str, location: str = "",
            trace: str = "", count: int = 1) -> ErrorKind:
        kinds = self._kinds.setdefault(component, {})
        # One kind per raising line: "cannot handle 9" and "cannot handle 10" are one error.
        key = (type_name, "" if location else _first_line(message), location)
        kind = kinds.get(key)
        if kind is None:
            if len(kinds) >= MAX_KINDS and key != _OTHER:
                return self.add(component, *_OTHER, trace=trace, count=count)
            kind = kinds[key] = ErrorKind(component, type_name, _first_line(message), location, 0,
                                          trace)
        kind.count += count
        if not kind.traceback and trace:
            kind.traceback = trace
        return kind

    def add_exception(self, component: str, exc: BaseException, location: str = "",
                      trace: str = "", count: int = 1) -> ErrorKind:
        """An exception (a ``ComponentFailure`` counts as the user's error it wraps)."""
        cause = getattr(exc, "cause", None)
        if isinstance(cause, BaseException):
            location = location or getattr(exc, "location", "") or ""
            trace = trace or getattr(exc, "traceback_text", "") or ""
            exc = cause
        if not trace:
            trace = "".join(traceback.format_exception(exc))
        return self.add(component, type(exc).__name__, str(exc), location, trace, count)

    def add_text(self, component: str, text: str, count: int = 1) -> ErrorKind:
        """An error known only as text (``Type: message``, or a traceback's last line)."""
        type_name, message = split_error_text(text)
        trace = text if "\n" in text.strip() else ""
        return self.add(component, type_name, message, "", trace, count)

    def merge(self, kinds: Iterable[ErrorKind]) -> None:
        for k in kinds:
            self.add(k.component, k.type, k.message, k.location, k.traceback, k.count)

    def kinds(self, component: str | None = None) -> list[ErrorKind]:
        if component is not None:
            return list(self._kinds.get(component, {}).values())
        return [k for kinds in self._kinds.values() for k in kinds.values()]

    def components(self) -> list[str]:
        return [c for c, kinds in self._kinds.items() if kinds]

    def to_list(self) -> list[dict[str, Any]]:
        return [k.to_dict() for k in self.kinds()]

    def lines(self, tracebacks: bool = True, indent: str = "    ") -> list[str]:
        """The summary's error section: per component its kinds, each with one traceback."""
        out: list[str] = []
        for component in self.components():
            kinds = self.kinds(component)
            total = sum(k.count for k in kinds)
            out.append(f"errors in {component}: {total:,} ({len(kinds)} distinct)")
            for kind in kinds:
                out.append(f"  {kind.headline()}")
                if tracebacks and kind.traceback:
                    out.extend(indent + line for line in kind.traceback.rstrip().splitlines())
        return out


def split_error_text(text: str) -> tuple[str, str]:
    """``("ValueError", "bad")`` from ``"ValueError: bad"`` or a traceback ending so."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    last = lines[-1].strip() if lines else ""
    head, sep, rest = last.partition(": ")
    if sep and head.replace(".", "").replace("_", "").isalnum() and " " not in head:
        return head.rsplit(".", 1)[-1], rest
    return "Error", last


def _first_line(message: str) -> str:
    line = message.strip().splitlines()[0] if message.strip() else ""
    return line if len(line) <= 300 else line[:297] + "..."
