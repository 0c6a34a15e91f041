"""Replayable built-in spouts: Redis Streams and JSON-lines files.

Usable in a topology like any streamparse Spout (subclass to declare
``outputs``), or as the stand-in for a JavaSpout through the
``stormshift.replacements`` config (see migrations_guide/sources.md).
"""

from stormshift.spouts.base import RecordDecodeError, ReplayableSpout, read_range
from stormshift.spouts.jsonlines import JsonLinesSpout
from stormshift.spouts.redis_streams import RedisStreamSpout

__all__ = ["JsonLinesSpout", "RecordDecodeError", "RedisStreamSpout", "ReplayableSpout", "read_range"]
