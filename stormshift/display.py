"""Data is shown, never interpreted: the one place terminal output is made safe.

Tuple values, keys, namespaces, error messages and component log lines come
from untrusted input (an ad log, a tampered Redis). Printed through rich with
markup on, ``[link=...]`` or ``[bold red]`` in a value would be interpreted,
and an ESC, OSC 8 or ``\\r`` in a value would drive the terminal (clear the
screen, hide text, forge a hyperlink). So every command prints through
``console()`` (markup, emoji and highlighting off; every string made
``visible``) and builds table cells and styled lines as ``rich.text.Text``
(never markup strings) with ``cell`` / ``styled``. ``cut`` shortens after
making a value visible, so a cut never leaves half an escape. A URL's password
is masked on the way too (``private.mask_text``): no summary or log shows one.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import IO, TYPE_CHECKING, Any

from stormshift.private import mask_text

if TYPE_CHECKING:  # rich is imported when something is printed (not in Spark's workers)
    from rich.console import Console
    from rich.text import Text

__all__ = ["cell", "console", "cut", "json_text", "styled", "visible"]

# C0 controls (tab and, where asked, newline kept), DEL, C1 controls, and the Unicode
# bidirectional overrides/isolates that reorder what a reader sees ("Trojan source").
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
_UNSAFE = re.compile(f"[{_CONTROLS}]")
_UNSAFE_OR_NEWLINE = re.compile(f"[{_CONTROLS}\n]")
# JSON may carry C1 / bidi characters raw (json.dumps escapes only C0 controls).
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: Any, newlines: bool = True) -> str:
    """``text`` with every control character shown as its escape (ESC as ``\\x1b``);
    newlines kept unless ``newlines`` is False (a one-line cell)."""
    pattern = _UNSAFE if newlines else _UNSAFE_OR_NEWLINE
    return pattern.sub(lambda m: _escape(m.group()), mask_text(str(text)))


def cut(text: Any, width: int, newlines: bool = False) -> str:
    """``text`` made visible, in at most ``width`` characters (``…`` marks a cut); an
    escape such as ``\\x1b`` is kept whole or dropped whole, never cut in half."""
    out: list[str] = []
    used = 0
    raw = mask_text(str(text))
    pattern = _UNSAFE if newlines else _UNSAFE_OR_NEWLINE
    pieces = [_escape(ch) if pattern.fullmatch(ch) else ch for ch in raw]
    if sum(len(p) for p in pieces) <= width:
        return "".join(pieces)
    for piece in pieces:
        if used + len(piece) > width - 1:
            break
        out.append(piece)
        used += len(piece)
    return "".join(out) + "…"


def cell(value: Any, style: str = "", newlines: bool = True) -> Text:
    """A table cell or line that shows ``value`` as it is (no markup, controls visible)."""
    from rich.text import Text

    return Text(visible(value, newlines), style=style)


def styled(*parts: str | tuple[str, str]) -> Text:
    """A line of our own styling around data: ``styled(("error:", "bold red"), " ", msg)``;
    every part's text is made visible, none is read as markup."""
    from rich.text import Text

    return Text.assemble(*((visible(p[0]), p[1]) if isinstance(p, tuple) else visible(p)
                           for p in parts))


def json_text(obj: Any, **kw: Any) -> str:
    """``json.dumps`` for a terminal: C1 controls and bidi characters escaped too (JSON
    escapes only C0), non-ASCII text otherwise kept readable."""
    kw.setdefault("ensure_ascii", False)
    text = mask_text(json.dumps(obj, **kw))
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


@cache
def _safe_console_class() -> type[Console]:
    from rich.console import Console

    class SafeConsole(Console):
        """A Console whose strings are never markup and always visible (tables' cells and
        titles, ``print("...")``); ``Text`` objects are printed as built."""

        def render_str(self, text: str, **kw: Any) -> Text:
            kw.update(markup=False, emoji=False, highlight=False)
            return super().render_str(visible(text), **kw)

        def print(self, *objects: Any, **kw: Any) -> None:
            """A table is printed whole or one record per block (``table_fit``), so no number
            or name is wrapped across lines; a fitted line is never wrapped either."""
            from rich.console import Group
            from rich.table import Table

            from stormshift.table_fit import fitted

            def parts(o: Any) -> list[tuple[Any, bool]]:
                """(renderable, made from a table and never to be wrapped)"""
                if isinstance(o, Group):
                    return [p for r in o.renderables for p in parts(r)]
                if isinstance(o, Table):
                    return [(p, not isinstance(p, Table)) for p in fitted(self, o)]
                return [(o, False)]

            if not any(isinstance(o, (Table, Group)) for o in objects):
                super().print(*objects, **kw)
                return
            flat = [p for o in objects for p in parts(o)]
            for n, (part, whole) in enumerate(flat):  # each on its own lines, as in a Group
                extra: dict[str, Any] = {"soft_wrap": True} if whole else {}
                if n < len(flat) - 1:
                    extra["end"] = "\n"
                super().print(part, **{**kw, **extra})

    return SafeConsole


def console(stderr: bool = False, file: IO[str] | None = None, **kw: Any) -> Console:
    """The console every command prints through (see the module doc)."""
    kw.setdefault("highlight", False)
    return _safe_console_class()(stderr=stderr, file=file, markup=False, emoji=False, **kw)
