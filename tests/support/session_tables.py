"""Tables a test session prints at its end (the exactly-once suite's, the cluster's), whichever
process ran the tests.

With pytest-xdist the cases run in worker processes while the summary is printed by the
controller, so a row lives in a JSON-lines file per table in a folder the controller names
(``STORMSHIFT_TEST_TABLES``, set in ``tests/conftest.py`` before the workers start; they
inherit it). Without the variable (a helper used outside pytest) rows are only kept in memory.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

ENV = "STORMSHIFT_TEST_TABLES"

_MEMORY: dict[str, list[dict[str, Any]]] = {}


def record(table: str, row: dict[str, Any]) -> None:
    """Add ``row`` to ``table`` (appended whole in one write: rows of parallel cases never mix)."""
    folder = os.environ.get(ENV)
    if not folder:
        _MEMORY.setdefault(table, []).append(row)
        return
    with open(Path(folder) / f"{table}.jsonl", "a", encoding="utf-8") as out:
        out.write(json.dumps(row, default=str) + "\n")


def rows(table: str) -> list[dict[str, Any]]:
    """Every row of ``table`` recorded in this session, by any process, in recording order."""
    folder = os.environ.get(ENV)
    path = Path(folder) / f"{table}.jsonl" if folder else None
    if path is None or not path.exists():
        return list(_MEMORY.get(table, []))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def render(header: list[str], table_rows: list[dict[str, Any]]) -> list[str]:
    """``table_rows`` as aligned text lines under ``header`` (a header ``"name (note)"`` reads
    the row's ``name``), with a rule below the header."""
    lines = [header] + [[str(row.get(h.split(" ")[0], "")) for h in header] for row in table_rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)) for line in lines]
    text.insert(1, "  ".join("-" * w for w in widths))
    return text
