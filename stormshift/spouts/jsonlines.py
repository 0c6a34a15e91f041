"""JSON-lines files as a replayable spout: one partition per file.

Config (topology or component conf):
- ``jsonlines.path`` — a directory (every file not starting with ``.`` or
  ``_``) or a glob; relative paths resolve against the working directory the
  spout is initialized in (the project's ``src/`` under stormshift).
- ``jsonlines.fields`` — list: each line is a JSON object and the tuple is
  its values for these keys, in order. Unset: the tuple is the raw line
  (one field, without the newline).
- ``jsonlines.bounded`` — true: the input ends when every file is read
  (``--until-done`` stops then); a last line without newline counts. False
  (default): files keep growing, new files are picked up, and only lines
  ending in a newline are read.

Partitions are file paths relative to the directory (or the glob's fixed
prefix), sorted; offsets are the number of lines consumed (0 = before the
first line). Write new files under a hidden name and rename them in, and
name them so they sort after the existing ones (partition i belongs to task
i % par, so a file sorting in between would move others to another task).
"""

from __future__ import annotations

import glob
import os
from array import array
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from stormshift.errors import TopologyError
from stormshift.spouts.base import RecordDecodeError, ReplayableSpout, msg_id_for
from stormshift.spouts.values import DECODE, Bad, classify_json

__all__ = ["JsonLinesSpout", "decode_json_fields", "line_ends"]

_READ_BLOCK_BYTES = 1 << 20  # a read, its text and its lines live at once: peak memory of a reading task
_VALUES_LINES = 32
_ASCII_SPACE = " \t\n\r\x0b\x0c"  # what bytes.strip() strips: a blank line is skipped on both paths


class _LineIndex:
    """Byte offset after each complete line of one file, grown as it grows."""

    __slots__ = ("ends", "inode", "scanned")

    def __init__(self, inode: int):
        self.inode = inode
        self.scanned = 0
        self.ends = array("q")


_INDEXES: dict[str, _LineIndex] = {}


def line_ends(path: str) -> tuple[array, int]:
    """``(ends, size)``: end offset of every newline-terminated line, file size.

    Cached per process and extended incrementally (files only grow; a file
    replaced under the same name is re-indexed), so executors re-reading a
    batch do not rescan from the start.
    """
    st = os.stat(path)
    index = _INDEXES.get(path)
    if index is None or index.inode != st.st_ino or st.st_size < index.scanned:
        index = _INDEXES[path] = _LineIndex(st.st_ino)
    if st.st_size > index.scanned:
        with open(path, "rb") as fh:
            fh.seek(index.scanned)
            position = index.scanned
            while position < st.st_size:
                block = fh.read(min(_READ_BLOCK_BYTES, st.st_size - position))
                if not block:
                    break
                _append_newlines(index.ends, block, position)
                position += len(block)
        index.scanned = index.ends[-1] if len(index.ends) else 0
    return index.ends, st.st_size


def _append_newlines(ends: array, block: bytes, base: int) -> None:
    find = block.find
    i = find(b"\n")
    while i >= 0:
        ends.append(base + i + 1)
        i = find(b"\n", i + 1)


def decode_json_fields(raw: str, fields: tuple[str, ...], arity: int | None = None) -> list[Any] | Bad:
    """Values of ``fields`` from one JSON object, or why it has none (``values.Bad``:
    ``decode`` when it is no JSON, ``value`` when Storm could not send it)."""
    return classify_json(raw, fields, arity)


class JsonLinesSpout(ReplayableSpout):
    """Emits one tuple per line of the JSON-lines files under ``jsonlines.path``."""

    config_prefix = "jsonlines"

    def replay_configure(self, conf: Mapping[str, Any]) -> None:
        path = str(self._require(conf, "path"))
        fields = self._conf_value(conf, "fields")
        if fields is not None and (isinstance(fields, str) or not all(isinstance(f, str) for f in fields)):
            raise TopologyError(
                f"jsonlines.fields must be a list of JSON keys, got {fields!r}",
                component=self._name(),
                fix='e.g. "jsonlines.fields": ["ad_id", "user_id"]',
            )
        self._fields: tuple[str, ...] | None = tuple(fields) if fields is not None else None
        self._bounded = bool(self._conf_value(conf, "bounded", False))
        self._root, self._pattern = _root_and_pattern(os.path.abspath(path))

    # -- partitions / offsets -------------------------------------------
    def replay_partitions(self) -> list[str]:
        names = []
        for full in glob.glob(self._pattern, recursive=True):
            rel = os.path.relpath(full, self._root)
            base = os.path.basename(full)
            if base.startswith((".", "_")) or not os.path.isfile(full):
                continue
            names.append(rel)
        return sorted(names)

    def replay_initial_offset(self, partition: str) -> int:
        return 0

    def replay_initial_offsets(self) -> dict[str, Any]:
        return {p: 0 for p in self.replay_partitions()}

    def _available(self, partition: str) -> tuple[int, array, int]:
        """Readable line count, line ends, file size of one partition."""
        ends, size = line_ends(os.path.join(self._root, partition))
        count = len(ends)
        last_end = ends[-1] if count else 0
        if self._bounded and size > last_end:
            count += 1  # a final line without newline: the file is complete
        return count, ends, size

    def replay_advance(self, partition: str, start: Any, max_records: int) -> tuple[int, int]:
        begin = int(start)
        end = max(begin, min(self._available(partition)[0], begin + max_records))
        return end, end - begin

    def replay_partition_done(self, partition: str, offset: Any) -> bool:
        return int(offset) >= self._available(partition)[0]

    def replay_partition_lag(self, partition: str, offset: Any) -> tuple[int, bool]:
        """Lines after ``offset`` (exact: the file's line index is kept per process)."""
        return max(0, self._available(partition)[0] - int(offset)), True

    # -- reading ---------------------------------------------------------
    def replay_read(self, partition: str, start: Any, end: Any) -> Iterator[tuple[list[Any], str]]:
        """Lines ``start+1 .. end`` (1-based) of the file, decoded."""
        for line_no, raws in self._blocks(partition, start, end):
            for raw in raws:
                line_no += 1
                record = self._decode(partition, line_no, raw)
                if record is not None:
                    yield record

    def replay_values(self, partition: str, start: Any, end: Any,
                      on_error: Callable[[RecordDecodeError], None]) -> Iterator[list[list[Any]]]:
        """``replay_read``'s records without msg ids, ``_VALUES_LINES`` lines at a time: one
        UTF-8 decode per read (per ``_VALUES_LINES`` lines, and per line there, only in a read
        that holds a bad line). Small blocks: values made far ahead of their use outlive the
        young GC generation."""
        fields = self._fields
        for first, data, count in self._reads(partition, start, end):
            try:
                lines = data.decode("utf-8").split("\n")
            except UnicodeDecodeError:
                yield from self._values_by_part(partition, first, data.split(b"\n")[:count],
                                                on_error)
                continue
            if fields is None and b"\r" not in data and self._arity in (None, 1):
                # the common case: one text value per line, no rstrip per line
                for at in range(0, count, _VALUES_LINES):
                    # blank: ASCII whitespace only (as bytes.strip()); a line that starts with
                    # anything else is not, without a strip() call
                    yield [[line] for line in lines[at:min(at + _VALUES_LINES, count)]
                           if line[:1] not in _ASCII_SPACE or line.strip(_ASCII_SPACE)]
                continue
            for at in range(0, count, _VALUES_LINES):
                yield self._values_of(partition, first + at,
                                      lines[at:min(at + _VALUES_LINES, count)], on_error)

    def _values_by_part(self, partition: str, first: int, raws: list[bytes],
                        on_error: Callable[[RecordDecodeError], None]) -> Iterator[list[list[Any]]]:
        """A read holding a line that is not UTF-8: decoded ``_VALUES_LINES`` lines at a time,
        per line in the parts that hold a bad one."""
        for at in range(0, len(raws), _VALUES_LINES):
            part = raws[at:at + _VALUES_LINES]
            try:
                lines = b"\n".join(part).decode("utf-8").split("\n")
            except UnicodeDecodeError:
                yield self._values_per_line(partition, first + at, part, on_error)
                continue
            yield self._values_of(partition, first + at, lines, on_error)

    def _values_of(self, partition: str, line_no: int, lines: list[str],
                   on_error: Callable[[RecordDecodeError], None]) -> list[list[Any]]:
        """The values of decoded ``lines`` (the first is line ``line_no + 1``)."""
        fields = self._fields
        if fields is None and self._arity in (None, 1):
            return [[line.rstrip("\r")] for line in lines if line.strip(_ASCII_SPACE)]
        block = []
        for line in lines:
            line_no += 1
            if not line.strip(_ASCII_SPACE):
                continue
            values = self._line_values(line.rstrip("\r"))
            if isinstance(values, Bad):
                on_error(self._bad(partition, line_no, line.rstrip("\r"), values.detail,
                                   values.reason))
            else:
                block.append(values)
        return block

    def _line_values(self, text: str) -> list[Any] | Bad:
        """One decoded line as tuple values, or why it is none (``values.py``)."""
        if self._fields is None:
            values: list[Any] = [text]
            why = self.refuse("", "0", values)
            return values if why is None else Bad(why.kind, why.reason)
        return classify_json(text, self._fields, self._arity)

    def _values_per_line(self, partition: str, line_no: int, raws: list[bytes],
                         on_error: Callable[[RecordDecodeError], None]) -> list[list[Any]]:
        block = []
        for raw in raws:
            line_no += 1
            try:
                record = self._decode(partition, line_no, raw)
            except RecordDecodeError as err:
                on_error(err)
                continue
            if record is not None:
                block.append(record[0])
        return block

    def _blocks(self, partition: str, start: Any, end: Any) -> Iterator[tuple[int, list[bytes]]]:
        """``(line number before the block, raw lines without newline)`` for lines
        ``start+1 .. end``, read near ``_READ_BLOCK_BYTES`` at a time."""
        for line_no, data, count in self._reads(partition, start, end):
            yield line_no, data.split(b"\n")[:count]

    def _reads(self, partition: str, start: Any, end: Any) -> Iterator[tuple[int, bytes, int]]:
        """``(line number before the read, its bytes, its line count)`` for lines
        ``start+1 .. end``, read near ``_READ_BLOCK_BYTES`` at a time (whole lines, each
        ending in a newline but perhaps the file's last)."""
        first, last = int(start), int(end)
        if last <= first:
            return
        count, ends, size = self._available(partition)
        if last > count:
            raise ValueError(
                f"{self._name()}: offset {last} is past the {count} lines of {partition!r} "
                f"(was the file truncated or replaced? replay needs append-only files)"
            )
        begin_byte = ends[first - 1] if first else 0
        end_byte = ends[last - 1] if last <= len(ends) else size
        with open(os.path.join(self._root, partition), "rb") as fh:
            fh.seek(begin_byte)
            line_no = first
            position = begin_byte
            while line_no < last:
                chunk_last = _chunk_end(ends, line_no, last, position, end_byte)
                stop_byte = ends[chunk_last - 1] if chunk_last <= len(ends) else size
                data = fh.read(stop_byte - position)
                position = stop_byte
                yield line_no, data, chunk_last - line_no
                line_no = chunk_last

    def _decode(self, partition: str, line_no: int, raw: bytes) -> tuple[list[Any], str] | None:
        if not raw.strip():
            return None
        try:
            text = raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as exc:
            raise self._bad(partition, line_no, raw.decode("latin-1"), f"not UTF-8 ({exc})") from None
        values = self._line_values(text)
        if isinstance(values, Bad):
            raise self._bad(partition, line_no, text, values.detail, values.reason)
        return values, msg_id_for(partition, line_no)

    def _bad(self, partition: str, line_no: int, raw: str, reason: str,
             kind: str = DECODE) -> RecordDecodeError:
        return RecordDecodeError(
            reason, component=self._name(), partition=partition, offset=line_no, raw=raw,
            kind=kind,
        )


def _chunk_end(ends: array, line_no: int, last: int, position: int, end_byte: int) -> int:
    """Last line of the next read so one read stays near ``_READ_BLOCK_BYTES``."""
    if end_byte - position <= _READ_BLOCK_BYTES:
        return last
    lo, hi = line_no + 1, min(last, len(ends))
    target = position + _READ_BLOCK_BYTES
    while lo < hi:  # first line whose end passes the target
        mid = (lo + hi) // 2
        if ends[mid - 1] < target:
            lo = mid + 1
        else:
            hi = mid
    return max(lo, line_no + 1)


def _root_and_pattern(path: str) -> tuple[str, str]:
    """A directory reads every file under it; a glob reads its matches."""
    if glob.has_magic(path):
        parts = path.split(os.sep)
        fixed = []
        for part in parts:
            if glob.has_magic(part):
                break
            fixed.append(part)
        return os.sep.join(fixed) or os.sep, path
    return path, os.path.join(path, "*")
