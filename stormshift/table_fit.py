"""Tables that are read, not guessed at: no number or name is ever split across lines.

rich fits a table to the console by wrapping or folding its cells, so at 80 columns (or
piped, where rich assumes 80) ``18000`` came out as ``1800`` over ``0`` and a component's
name as three-letter pieces. A person cannot tell such a wrap from two values. So every table
a command prints goes through ``fitted``:

- a table whose cells all fit on one line each within the console's width is printed as a
  table, every column unwrapped (a title or caption wider than the table on a line of its
  own, never wrapped into the table's width); one that fits only without its frame is
  printed without it (a rule under the header, one space between columns);
- one that does not fit is printed one record per block: the title, then for each row its
  ``header: value`` lines, a blank line between rows. A value is printed whole on its line
  (``soft_wrap``: only a terminal may fold a line longer than the screen, and a pipe never).

Pure functions over rich's own ``Table`` (its columns' cells), so every command's tables get
this from ``display.console()`` without changing how they are built.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.table import Table
    from rich.text import Text

__all__ = ["fitted", "natural_width", "record_blocks"]


def _text(console: Console, value: Any) -> Text | None:
    """A cell as Text (a string is made visible by the console), None for other renderables."""
    from rich.text import Text

    if isinstance(value, Text):
        return value
    if isinstance(value, str):
        return console.render_str(value)
    return None


def natural_width(console: Console, table: Table) -> int | None:
    """The width ``table`` takes with no cell wrapped (title and caption aside), or None when a
    cell is not text (nested renderables are left to rich)."""
    widths = []
    for column in table.columns:
        texts = [_text(console, c) for c in (column.header, *column.cells)]
        if any(t is None for t in texts):
            return None
        widths.append(max(len(line) for t in texts if t is not None
                          for line in t.plain.split("\n")))
    return sum(widths) + _frame(table)


def _frame(table: Table) -> int:
    """What a boxed table adds to its cells' widths: padding, rules and edges."""
    top, right, bottom, left = table.padding
    del top, bottom
    boxed = table.box is not None
    n = len(table.columns)
    return n * (left + right) + (2 if boxed and table.show_edge else 0) + (n - 1 if boxed else 0)


_BREAK = re.compile(r"[^\s,;]*[\s,;]*")


def fold(text: Text, width: int) -> list[Text]:
    """``text`` in lines of at most ``width``, broken after a space, comma or semicolon (a
    JSON value's items, a sentence's words), so a number or a name stays whole; only a token
    longer than a whole line is cut, at the width."""
    plain = text.plain
    if len(plain) <= width:
        return [text]
    cuts: list[int] = []
    start = 0
    for token in _BREAK.finditer(plain):
        begin, end = token.span()
        if end == begin:
            continue
        while end - start > width:
            cut = begin if begin > start else start + width
            cuts.append(cut)
            start = cut
        # the token fits on the line from start
    parts = list(text.divide(cuts))
    for part in parts:
        part.rstrip()  # in place: the space a line was broken after
    return parts


def record_blocks(console: Console, table: Table) -> list[Text]:
    """``table`` as lines: its title, then each row as ``header: value`` lines, rows apart."""
    from rich.text import Text

    headers = [(_text(console, c.header) or Text(str(c.header))).plain for c in table.columns]
    label = max((len(h) for h in headers), default=0)
    lines: list[Text] = []
    if table.title:
        lines.append(_text(console, table.title) or Text(str(table.title)))
    rows = list(zip(*(list(c.cells) for c in table.columns), strict=False))
    for n, row in enumerate(rows):
        if n or lines:
            lines.append(Text(""))
        room = max(console.width - (label + 4), 20)
        for header, value in zip(headers, row, strict=False):
            text = _text(console, value) or Text(str(value))
            pieces = text.split("\n") if "\n" in text.plain else [text]
            first, *rest = [f for piece in pieces for f in fold(piece, room)]
            lines.append(Text.assemble(f"  {header + ':':<{label + 1}} ", first))
            lines.extend(Text.assemble(" " * (label + 4), more) for more in rest)
    if table.caption:
        lines.append(Text(""))
        lines.append(_text(console, table.caption) or Text(str(table.caption)))
    return lines


def fitted(console: Console, table: Table) -> list[RenderableType]:
    """What to print for ``table`` on ``console`` (see the module doc): the title line and the
    table with no wrapped cell, or the record blocks."""

    if table.box is None:  # a grid lays out prose (check's why / fix notes): rich wraps it
        return [table]
    width = natural_width(console, table)
    if width is None:
        return [table]
    if width > console.width:
        compact = width - _frame(table) + max(len(table.columns) - 1, 0)
        if compact > console.width:
            return list(record_blocks(console, table))
        from rich import box  # no frame, one space between columns: still a table

        table.box, table.padding, table.show_edge = box.SIMPLE_HEAD, (0, 0, 0, 0), False
        width = compact
    out: list[RenderableType] = []
    if table.min_width and table.min_width <= console.width:  # room for a title, say
        width = max(width, table.min_width)
    else:
        table.min_width = None
    title = _text(console, table.title) if table.title else None
    if title is not None and len(title.plain) > width:  # rich would wrap it into the table
        out.append(title)
        table.title = None
    for column in table.columns:  # each as wide as its widest cell (measured above)
        column.no_wrap = True
        column.max_width = None
    caption = _text(console, table.caption) if table.caption else None
    if caption is not None and len(caption.plain) > width:
        table.caption = None
        return [*out, table, caption]
    return [*out, table]
