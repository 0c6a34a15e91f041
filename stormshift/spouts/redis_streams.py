"""Redis Streams as a replayable spout: one partition per stream key.

Config (topology or component conf):
- ``redis_streams.url`` — the server (default ``STORMSHIFT_SOURCE_REDIS_URL``,
  then ``REDIS_URL``, then ``redis://127.0.0.1:6379``).
- ``redis_streams.keys`` — list of stream keys (a string for one key).
- How an entry becomes a tuple, first that applies:
  ``redis_streams.fields`` — a list of entry field names, or a mapping
  ``{tuple field: entry field}`` (values are UTF-8 text);
  ``redis_streams.json_fields`` — the ``payload`` entry field holds a JSON
  object, the tuple is its values for these keys;
  otherwise the tuple is one value, the ``payload`` field as text.
  ``redis_streams.payload_field`` renames ``payload``.
- ``redis_streams.start`` — ``"earliest"`` (default) or ``"latest"`` (the
  last entry when the query first starts; later entries only).
- ``redis_streams.bounded`` — true: the input ends once every key is read
  up to its last entry (checked when the spout is polled).
- ``redis_streams.lag_cap`` — entries a lag count reads at most per stream
  (default 1000) on each side of the offset; past it on both sides, the
  ``stormshift_source_lag`` figure is the cap, a lower bound.

Offsets are entry ids (``"<ms>-<seq>"``; ``"0-0"`` before the first entry).
Nothing is acknowledged in Redis (no consumer group): the engine keeps the
offsets, so a replay re-reads by id. Do not trim a stream (``MAXLEN``/
``XTRIM``) past entries a running query has not committed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

import redis

from stormshift.errors import TopologyError
from stormshift.spouts.base import RecordDecodeError, ReplayableSpout, msg_id_for
from stormshift.spouts.jsonlines import decode_json_fields
from stormshift.spouts.values import DECODE, Bad

__all__ = ["LAG_CAP", "RedisStreamSpout", "entry_id_key", "stream_id_before"]

_READ_COUNT = 10_000
_BEFORE_FIRST = "0-0"
LAG_CAP = 1_000  # entries a lag count reads at most per side of a stream (``redis_streams.lag_cap``)
# The lag of one stream at an entry id, counted in the source server (``replay_partition_lag``):
# returns {entries after ARGV[1], 1 if exact}. Source data, not stormshift state: the state's
# scripts live in ``state/lua.py``.
_LAG_SCRIPT = """
local cap = tonumber(ARGV[2])
local after = #redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+', 'COUNT', cap)
if after < cap then return {after, 1} end
local total = redis.call('XLEN', KEYS[1])
local before = #redis.call('XRANGE', KEYS[1], '-', ARGV[1], 'COUNT', cap)
if before < cap then return {total - before, 1} end
return {cap, 0}
"""


def entry_id_key(entry_id: str | bytes) -> tuple[int, int]:
    """``(ms, seq)`` of an entry id, for ordering ids as Redis does."""
    text = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
    ms, _, seq = text.partition("-")
    return int(ms), int(seq or 0)


def stream_id_before(entry_id: str) -> str:
    """The greatest entry id below ``entry_id`` (``"0-0"`` has none: it stays)."""
    ms, seq = entry_id_key(entry_id)
    if seq > 0:
        return f"{ms}-{seq - 1}"
    return f"{ms - 1}-{2**64 - 1}" if ms > 0 else _BEFORE_FIRST


class RedisStreamSpout(ReplayableSpout):
    """Emits one tuple per entry of the configured Redis streams."""

    config_prefix = "redis_streams"

    def replay_configure(self, conf: Mapping[str, Any]) -> None:
        self._url = str(
            self._conf_value(conf, "url")
            or os.environ.get("STORMSHIFT_SOURCE_REDIS_URL")
            or os.environ.get("REDIS_URL")
            or "redis://127.0.0.1:6379"
        )
        keys = self._require(conf, "keys")
        self._keys = sorted([keys] if isinstance(keys, str) else [str(k) for k in keys])
        self._field_map = _field_map(self._conf_value(conf, "fields"), self._name())
        json_fields = self._conf_value(conf, "json_fields")
        self._json_fields = tuple(json_fields) if json_fields else None
        self._payload_field = str(self._conf_value(conf, "payload_field", "payload")).encode()
        start = self._conf_value(conf, "start", "earliest")
        if start not in ("earliest", "latest"):
            raise TopologyError(
                f"redis_streams.start must be 'earliest' or 'latest', got {start!r}",
                component=self._name(),
                fix='set "redis_streams.start": "earliest" to read each stream from its first entry',
            )
        self._start_mode = start
        self._bounded = bool(self._conf_value(conf, "bounded", False))
        self._lag_cap = max(1, int(self._conf_value(conf, "lag_cap", LAG_CAP)))
        self._initial: dict[str, str] = {}
        self._client: redis.Redis | None = None
        self._lag_script: Any = None

    @property
    def client(self) -> Any:
        """The source connection (bytes replies), made lazily so the spout pickles."""
        if self._client is None:  # under the run's Redis outage policy (state/outage.py)
            from stormshift.state.outage import OutageRetry

            self._client = redis.Redis.from_url(self._url, decode_responses=False,
                                                retry=OutageRetry())
        return self._client

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_client"] = None
        state["_lag_script"] = None
        return state

    # -- partitions / offsets -------------------------------------------
    def replay_partitions(self) -> list[str]:
        return list(self._keys)

    def replay_initial_offset(self, partition: str) -> str:
        if self._start_mode == "earliest":
            return _BEFORE_FIRST
        if partition not in self._initial:
            self._initial[partition] = self._last_id(partition) or _BEFORE_FIRST
        return self._initial[partition]

    def replay_initial_offsets(self) -> dict[str, Any]:
        return {p: self.replay_initial_offset(p) for p in self._keys}

    def replay_advance(self, partition: str, start: Any, max_records: int) -> tuple[str, int]:
        entries = self.client.xrange(partition, min=f"({start}", max="+", count=max_records)
        return (entries[-1][0].decode(), len(entries)) if entries else (str(start), 0)

    def replay_partition_done(self, partition: str, offset: Any) -> bool:
        last = self._last_id(partition)
        return last is None or entry_id_key(last) <= entry_id_key(offset)

    def replay_partition_lag(self, partition: str, offset: Any) -> tuple[int, bool]:
        """Entries after ``offset``. A stream has no rank of an entry id, so the server
        counts entries on the nearer side of ``offset`` (after it, else before it and
        ``XLEN`` minus that), each up to ``redis_streams.lag_cap`` (default 1000), in one
        script call: nothing crosses the network but the count. When both sides hold
        more than the cap, the cap is returned as a lower bound."""
        if self._lag_script is None:
            self._lag_script = self.client.register_script(_LAG_SCRIPT)
        behind, exact = self._lag_script(keys=[partition], args=[str(offset), self._lag_cap])
        return int(behind), bool(exact)

    def offset_before(self, offset: Any) -> str:
        """The entry id just before ``offset`` (ids need not exist to bound a range)."""
        return stream_id_before(str(offset))

    def offset_order(self, offset: Any) -> tuple[int, int]:
        return entry_id_key(offset)

    def _last_id(self, key: str) -> str | None:
        entries = self.client.xrevrange(key, max="+", min="-", count=1)
        return entries[0][0].decode() if entries else None

    # -- reading ---------------------------------------------------------
    def replay_read(self, partition: str, start: Any, end: Any) -> Iterator[tuple[list[Any], str]]:
        """Entries with ids in ``(start, end]``, in id order, decoded."""
        position, stop = str(start), str(end)
        if entry_id_key(stop) <= entry_id_key(position):
            return
        while True:
            entries = self.client.xrange(partition, min=f"({position}", max=stop, count=_READ_COUNT)
            for raw_id, fields in entries:
                position = raw_id.decode()
                yield self._decode(partition, position, fields)
            if len(entries) < _READ_COUNT or position == stop:
                return

    def _decode(self, partition: str, entry_id: str, fields: dict[bytes, bytes]) -> tuple[list[Any], str]:
        kind = DECODE
        try:
            values = self._values(fields)
        except (KeyError, UnicodeDecodeError, ValueError, _BadPayload) as exc:
            raw = {k.decode("utf-8", errors="backslashreplace"): v.decode("utf-8", errors="backslashreplace")
                   for k, v in fields.items()}
            reason = str(exc)
            if isinstance(exc, KeyError):
                missing = exc.args[0]
                name = missing.decode("latin-1") if isinstance(missing, bytes) else missing
                reason = f"missing entry field {name!r} (entry has {sorted(raw)})"
                kind = "value"  # the entry is there, its fields do not make the tuple
            elif isinstance(exc, _BadPayload):
                kind = exc.kind
            raise RecordDecodeError(
                reason, component=self._name(), partition=partition, offset=entry_id, raw=raw,
                kind=kind) from None
        return values, msg_id_for(partition, entry_id)

    def _values(self, fields: dict[bytes, bytes]) -> list[Any]:
        if self._field_map is not None:
            return [fields[f.encode()].decode("utf-8") for f in self._field_map]
        payload = fields[self._payload_field].decode("utf-8")
        if self._json_fields is None:
            return [payload]
        values = decode_json_fields(payload, self._json_fields, self._arity)
        if isinstance(values, Bad):
            raise _BadPayload(values.reason, f"payload {values.detail}")
        return values


class _BadPayload(Exception):
    """A payload that is no tuple, with its dead letter's reason (``values.py``)."""

    def __init__(self, kind: str, detail: str):
        super().__init__(detail)
        self.kind = kind


def _field_map(fields: Any, component: str) -> tuple[str, ...] | None:
    """Entry field names in tuple order (a mapping keeps its order)."""
    if fields is None:
        return None
    if isinstance(fields, Mapping):
        return tuple(str(v) for v in fields.values())
    if isinstance(fields, (list, tuple)) and all(isinstance(f, str) for f in fields):
        return tuple(fields)
    raise TopologyError(
        f"redis_streams.fields must be a list of entry fields or a mapping, got {fields!r}",
        component=component,
        fix='e.g. "redis_streams.fields": ["ad_id", "user_id"]',
    )
