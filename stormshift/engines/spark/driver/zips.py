"""Reproducible zips: what ``submit`` ships with ``--py-files`` (the project, its
dependencies, stormshift itself).

Why a module of its own: both the project zip (``submit.py``) and the
dependencies zip (``deps.py``) are written here, so neither imports the other.
Entries are sorted and dated 1980-01-01, so the same files give the same bytes
(a cluster's cache of ``--py-files`` is not invalidated by a re-submit).
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Iterable
from pathlib import Path

__all__ = ["write_zip"]

_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def write_zip(target: Path, entries: Iterable[tuple[Path, str]]) -> Path:
    """A reproducible zip of ``(file, name in archive)`` pairs."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    entries = sorted(entries, key=lambda e: e[1])
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
        # directory entries: zipimport needs them for namespace packages (src/)
        for directory in sorted({p for _, name in entries for p in _parents(name)}):
            info = zipfile.ZipInfo(directory, date_time=_ZIP_DATE)
            info.external_attr = (0o40755 << 16) | 0x10
            archive.writestr(info, b"")
        for source, arcname in entries:
            info = zipfile.ZipInfo(arcname, date_time=_ZIP_DATE)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, source.read_bytes())
    os.replace(tmp, target)
    return target


def _parents(name: str) -> list[str]:
    parts = name.split("/")[:-1]
    return ["/".join(parts[: i + 1]) + "/" for i in range(len(parts))]
