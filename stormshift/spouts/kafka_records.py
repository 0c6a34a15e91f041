"""A Kafka record as a tuple's values, and the consumer's settings: pure, no broker.

``RecordDecoder`` turns one confluent-kafka message into the values of
``kafka.fields`` (``kafka.value_format``, ``kafka.key_format``,
``kafka.json_fields``: see ``spouts/kafka.py``). A record it cannot decode is
a :class:`~stormshift.spouts.base.RecordDecodeError` carrying the raw record,
so it reaches the dead letters with the reason instead of failing the batch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stormshift.spouts.base import RecordDecodeError
from stormshift.spouts.jsonlines import decode_json_fields
from stormshift.spouts.values import DECODE, Bad

__all__ = ["RECORD_FIELDS", "RecordDecoder", "client_conf", "raw_record"]

RECORD_FIELDS = ("key", "value", "topic", "partition", "offset", "timestamp", "headers")
_PASS_PREFIXES = ("sasl.", "ssl.")


@dataclass(frozen=True)
class RecordDecoder:
    component: str
    fields: tuple[str, ...]
    value_format: str  # text | json | bytes
    key_format: str  # text | bytes (header values too)
    json_fields: tuple[str, ...] | None

    @property
    def plain_text(self) -> bool:
        """Only the value, as text: the reader's fast path."""
        return self.fields == ("value",) and self.value_format == "text"

    def decode(self, partition: str, message: Any) -> list[Any]:
        values: list[Any] = []
        try:
            for field in self.fields:
                if field == "value":
                    values.extend(self.value(message.value()))
                elif field == "key":
                    values.append(_text(message.key(), self.key_format, "key"))
                elif field == "headers":
                    values.append([[k, _text(v, self.key_format, f"header {k!r}")]
                                   for k, v in message.headers() or []])
                elif field == "timestamp":
                    values.append(message.timestamp()[1])
                else:
                    values.append({"topic": message.topic, "partition": message.partition,
                                   "offset": message.offset}[field]())
        except ValueError as exc:
            raise RecordDecodeError(
                f"Kafka topic {message.topic()!r} partition {message.partition()} offset "
                f"{message.offset()}: {exc}", component=self.component, partition=partition,
                offset=message.offset(), raw=raw_record(message),
                kind=getattr(exc, "kind", DECODE)) from None
        return values

    def value(self, raw: bytes | None) -> list[Any]:
        """The values ``value`` stands for: one, or one per ``json_fields`` key."""
        if self.value_format == "bytes" or raw is None:
            return [raw] * (len(self.json_fields) if self.json_fields and raw is None else 1)
        text = _text(raw, "text", "value")
        if self.value_format == "text":
            return [text]
        if self.json_fields is None:
            try:
                return [json.loads(text)]
            except ValueError as exc:
                raise ValueError(f"value is not JSON ({exc})") from None
        values = decode_json_fields(text, self.json_fields)
        if isinstance(values, Bad):
            raise _BadValue(values.reason, f"value {values.detail}")
        return values


class _BadValue(ValueError):
    """A value that is no tuple, with its dead letter's reason (``values.py``)."""

    def __init__(self, kind: str, detail: str):
        super().__init__(detail)
        self.kind = kind


def _text(raw: bytes | None, fmt: str, what: str) -> Any:
    if raw is None or fmt == "bytes":
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what} is not UTF-8 ({exc})") from None


def raw_record(message: Any) -> dict[str, Any]:
    """The record as a dead letter keeps it: text where it decodes, escaped where not."""
    def text(raw: bytes | None) -> str | None:
        return None if raw is None else raw.decode("utf-8", errors="backslashreplace")

    return {"topic": message.topic(), "partition": message.partition(), "offset": message.offset(),
            "key": text(message.key()), "value": text(message.value())}


def client_conf(conf: Mapping[str, Any], servers: str) -> dict[str, Any]:
    """confluent-kafka settings: security keys as they are, ``kafka.client.*`` unprefixed."""
    out: dict[str, Any] = {
        "bootstrap.servers": servers,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "error",  # an offset retention deleted is an error, never a skip
        "log.connection.close": False,
        "log_level": 2,  # an unreachable broker is retried and reported by the spout, not logged
        # ranges are read once they exist: no long-poll wait (500 ms by default per fetch)
        "fetch.wait.max.ms": 10,
    }
    for key, value in conf.items():
        if key.startswith(_PASS_PREFIXES) or key == "security.protocol":
            out[key] = value
        elif key.startswith("kafka.client."):
            out[key[len("kafka.client."):]] = value
    return out
