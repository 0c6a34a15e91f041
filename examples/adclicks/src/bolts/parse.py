"""Parse and validate one ad-server log line."""

import json

from streamparse import Bolt, Stream

FIELDS = ("slot_id", "advertiser_id", "ad_id", "event_type", "user_id", "event_id", "ts", "cost")
ID_FIELDS = ("slot_id", "advertiser_id", "ad_id", "user_id", "event_id")
EVENT_TYPES = ("impression", "click")


def parse_line(line):
    """The record's values in FIELDS order; ValueError says what is wrong."""
    try:
        rec = json.loads(line)
    except ValueError as exc:
        raise ValueError(f"not JSON ({exc})") from None
    if not isinstance(rec, dict):
        raise ValueError(f"expected a JSON object, got {type(rec).__name__}")
    missing = [f for f in FIELDS if f not in rec]
    if missing:
        raise ValueError(f"missing field(s) {', '.join(missing)}")
    for f in ID_FIELDS:
        if not isinstance(rec[f], str) or not rec[f]:
            raise ValueError(f"{f} must be a non-empty string, got {rec[f]!r}")
    if rec["event_type"] not in EVENT_TYPES:
        raise ValueError(f"event_type must be impression or click, got {rec['event_type']!r}")
    for f in ("ts", "cost"):
        if type(rec[f]) is not int or rec[f] < 0:
            raise ValueError(f"{f} must be a non-negative integer, got {rec[f]!r}")
    return [rec[f] for f in FIELDS]


class ParseBolt(Bolt):
    """Emits the parsed fields of a good line; fails a malformed one.

    With ``adclicks.windows`` on, it emits them on the ``events`` stream too,
    for the event-time reports (``bolts/windows.py``).
    """

    outputs = [Stream(list(FIELDS)), Stream(list(FIELDS), name="events")]
    auto_ack = False  # we ack good lines and fail bad ones ourselves

    def process(self, tup):
        line = tup.values[0]
        try:
            values = parse_line(line)
        except ValueError as exc:
            self.logger.warning("malformed ad log line %.200r: %s", line, exc)
            self.fail(tup)
            return
        self.emit(values)
        if self.storm_conf.get("adclicks.windows"):
            self.emit(values, stream="events")
        self.ack(tup)
