"""Replayable built-in spouts: Kafka topics, Redis Streams and JSON-lines files.

Usable in a topology like any streamparse Spout (subclass to declare
``outputs``), or as the stand-in for a JavaSpout through the
``stormshift.replacements`` config (see migrations_guide/sources.md).
"""

from stormshift.spouts.base import RecordDecodeError, ReplayableSpout, read_range
from stormshift.spouts.jsonlines import JsonLinesSpout
from stormshift.spouts.kafka import KafkaSpout
from stormshift.spouts.redis_streams import RedisStreamSpout

__all__ = ["JsonLinesSpout", "KafkaSpout", "RecordDecodeError", "RedisStreamSpout", "ReplayableSpout", "read_range"]
