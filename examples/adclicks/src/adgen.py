"""Seeded generator of one day of ad-server log lines (JSON lines).

The ad servers wrote one JSON object per line:

    {"slot_id": "slot-007", "advertiser_id": "adv-012", "ad_id": "ad-0042",
     "event_type": "impression", "user_id": "u-001234",
     "event_id": "5f0c...", "ts": 1700006400123, "cost": 0}

- ``ts`` is the event time in epoch milliseconds; a "day" is 86,400,000 ms of
  arrivals, from noon UTC on Nov 30, 2023 to noon UTC on Dec 1: every
  advertiser's local midnight (and month end) falls inside it.
- ``cost`` is integer micro-dollars (1 USD = 1,000,000); money is never float.
  CPC ads (most of them) bill clicks at the ad's CPC and impressions at 0.
  CPM ads bill each impression ``cpm_micros // 1000`` and clicks at 0.

What makes it realistic (all driven by ``random.Random(seed)``, never the
global ``random``, so the same config gives byte-identical output):

- ad popularity is Zipf-like (weight ``1 / rank``); advertisers own several ads;
- each ad has a CTR in [1 %, 3 %]; a click follows its impression 0.5-60 s later;
- ``ts`` jitters up to 5 s behind arrival (out of order), and ``late_rate`` of
  the records arrive 2 minutes to 3 hours after their ``ts`` (late);
- ``duplicate_rate`` of the lines are client retries: a byte-identical repeat
  of a recent record (same ``event_id``);
- ``malformed_rate`` of the lines are corrupt (bad JSON, missing or mistyped
  field, unknown event type); they carry no event;
- each advertiser bills in its own time zone (``advertiser_zone``); the
  *boundary click*: the first click of ``boundary_advertiser`` arriving 30 s or
  more after its month boundary (local midnight of Dec 1) is one logged at
  23:59:59 on Nov 30 local time: it belongs to November although it arrives
  after December's events. Only its ``ts`` is set, so every total stays the same.

Lines are produced in arrival order, lazily, so a 200,000-line day costs no
memory. Run as a script to write a file:

    python examples/adclicks/src/adgen.py --seed 7 --events 200000 --out day.jsonl
"""

from __future__ import annotations

import argparse
import bisect
import heapq
import itertools
import json
import random
import sys
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

DAY_MS = 86_400_000
# 2023-11-30T12:00:00Z, fixed so the data never depends on the wall clock.
DEFAULT_DAY_START_MS = 1_701_345_600_000
# Advertiser adv-NNN bills in ZONES[NNN % len(ZONES)] (its account's time zone).
ZONES = ("America/New_York", "America/Los_Angeles", "Europe/Berlin", "Asia/Tokyo", "UTC",
         "America/Chicago")
BOUNDARY_ADVERTISER = "adv-000"
_BOUNDARY_DELAY_MS = 30_000  # the boundary click arrives at least this long after midnight

# Defaults of the topology config keys (see topologies/adclicks.py).
DEFAULTS = {
    "adclicks.seed": 7,
    "adclicks.events": 200_000,
    "adclicks.path": None,
    "adclicks.malformed_rate": 0.0,
    "adclicks.duplicate_rate": 0.01,
    "adclicks.late_rate": 0.02,
    "adclicks.day_start_ms": DEFAULT_DAY_START_MS,
}

FIELDS = ("slot_id", "advertiser_id", "ad_id", "event_type", "user_id", "event_id", "ts", "cost")
_JITTER_MS = 5_000
_LATE_MIN_MS, _LATE_MAX_MS = 2 * 60_000, 3 * 3_600_000
_CLICK_DELAY_MIN_MS, _CLICK_DELAY_MAX_MS = 500, 60_000
_RETRY_WINDOW = 200  # a duplicate repeats one of the last N well-formed lines


@dataclass(frozen=True)
class GenConfig:
    """Everything that decides the output; equal configs give equal bytes."""

    seed: int = 7
    events: int = 200_000  # total lines, duplicates and malformed ones included
    malformed_rate: float = 0.0
    duplicate_rate: float = 0.01
    late_rate: float = 0.02
    day_start_ms: int = DEFAULT_DAY_START_MS
    ads: int = 500
    advertisers: int = 60
    slots: int = 40
    users: int = 50_000
    cpm_share: float = 0.2  # fraction of ads billed per impression
    # every ad equally popular (one draw per event, as Zipf's): the number of distinct
    # ad ids then follows ``ads`` up to the events (bench/scale_sweep.py's key sweep)
    uniform_ads: bool = False
    boundary_advertiser: str | None = BOUNDARY_ADVERTISER  # None: no boundary click

    @classmethod
    def from_conf(cls, conf: dict) -> GenConfig:
        """Build from a Storm conf holding the ``adclicks.*`` keys (defaults above)."""

        def get(key: str):
            value = conf.get(key)
            return DEFAULTS[key] if value is None else value

        return cls(
            seed=int(get("adclicks.seed")),
            events=int(get("adclicks.events")),
            malformed_rate=float(get("adclicks.malformed_rate")),
            duplicate_rate=float(get("adclicks.duplicate_rate")),
            late_rate=float(get("adclicks.late_rate")),
            day_start_ms=int(get("adclicks.day_start_ms")),
        )


@dataclass(frozen=True)
class Ad:
    ad_id: str
    advertiser_id: str
    ctr: float
    cpc_micros: int  # cost of a click (0 for CPM ads)
    impression_micros: int  # cost of an impression (0 for CPC ads)


def advertiser_zone(advertiser_id: str) -> str:
    """The IANA time zone advertiser ``adv-NNN`` is billed in."""
    return ZONES[int(advertiser_id.rpartition("-")[2]) % len(ZONES)]


def month_boundary_ms(cfg: GenConfig, advertiser_id: str) -> int | None:
    """The first local midnight starting a month in the advertiser's zone within the
    generated day (None if the day holds none)."""
    zone = ZoneInfo(advertiser_zone(advertiser_id))
    start = datetime.fromtimestamp(cfg.day_start_ms // 1000, zone).date()
    for n in range(3):
        day = start + timedelta(days=n)
        if day.day == 1:
            ms = int(datetime(day.year, day.month, 1, tzinfo=zone).timestamp()) * 1000
            if cfg.day_start_ms <= ms < cfg.day_start_ms + DAY_MS:
                return ms
    return None


def make_ads(cfg: GenConfig, rng: random.Random) -> tuple[list[Ad], list[float]]:
    """The ad catalogue and cumulative Zipf weights (rank 1 = most popular)."""
    # cumulative weights once: ``choices(weights=...)`` draws the same but re-sums per call
    adv_cum = list(itertools.accumulate(1.0 / (k + 1) for k in range(cfg.advertisers)))
    advertisers = range(cfg.advertisers)
    ads = []
    for k in range(cfg.ads):
        advertiser = rng.choices(advertisers, cum_weights=adv_cum)[0]
        cpm = rng.random() < cfg.cpm_share
        ads.append(
            Ad(
                ad_id=f"ad-{k:04d}",
                advertiser_id=f"adv-{advertiser:03d}",
                ctr=rng.uniform(0.01, 0.03),
                cpc_micros=0 if cpm else rng.randrange(200_000, 2_500_000, 10_000),
                impression_micros=rng.randrange(500_000, 5_000_000, 10_000) // 1000 if cpm else 0,
            )
        )
    rng.shuffle(ads)  # popularity rank is independent of the ad id
    cum: list[float] = []
    total = 0.0
    for rank in range(1, cfg.ads + 1):
        total += 1.0 / rank
        cum.append(total)
    return ads, cum


def to_line(record: dict) -> str:
    """One JSON line, fields in the order the ad servers wrote them."""
    return json.dumps(record, separators=(",", ":"))


def _fast_line(rec: dict) -> str:
    """``to_line`` for a well-formed record (ids need no escaping), 3x faster."""
    return (
        f'{{"slot_id":"{rec["slot_id"]}","advertiser_id":"{rec["advertiser_id"]}",'
        f'"ad_id":"{rec["ad_id"]}","event_type":"{rec["event_type"]}",'
        f'"user_id":"{rec["user_id"]}","event_id":"{rec["event_id"]}",'
        f'"ts":{rec["ts"]},"cost":{rec["cost"]}}}'
    )


def _below(rng: random.Random, n: int) -> int:
    """A uniform int in [0, n) from one ``random()`` draw (cheaper than randrange)."""
    return int(rng.random() * n)


def _corrupt(record: dict, rng: random.Random) -> str:
    """A malformed line: every variant is rejected by a strict parser."""
    kind = rng.randrange(6)
    bad = dict(record)
    if kind == 0:
        line = to_line(bad)
        return line[: rng.randrange(1, len(line) - 1)]  # truncated write
    if kind == 1:
        del bad[rng.choice(FIELDS)]
    elif kind == 2:
        bad["event_type"] = "view"
    elif kind == 3:
        bad["cost"] = f"{bad['cost'] / 1_000_000:.2f}"  # money as a string
    elif kind == 4:
        bad["ts"] = str(bad["ts"])
    else:
        return f"GET /pixel.gif?ad={record['ad_id']} HTTP/1.1"  # a stray access-log line
    return to_line(bad)


def _event(ad: Ad, event_type: str, slot: int, user: int, ts_ms: int, rng: random.Random) -> dict:
    cost = ad.cpc_micros if event_type == "click" else ad.impression_micros
    return {
        "slot_id": f"slot-{slot:03d}",
        "advertiser_id": ad.advertiser_id,
        "ad_id": ad.ad_id,
        "event_type": event_type,
        "user_id": f"u-{user:06d}",
        "event_id": f"{rng.getrandbits(64):016x}",
        "ts": ts_ms,
        "cost": cost,
    }


def generate_lines(cfg: GenConfig) -> Iterator[str]:
    """Yield exactly ``cfg.events`` lines in arrival order (no trailing newline)."""
    if cfg.events < 0:
        raise ValueError(f"adgen: events must be >= 0, got {cfg.events}")
    rng = random.Random(cfg.seed)
    ads, cum = make_ads(cfg, rng)
    total = cum[-1]
    n_ads = len(ads)

    def pick_ad() -> Ad:
        if cfg.uniform_ads:
            return ads[_below(rng, n_ads)]
        return ads[min(bisect.bisect(cum, rng.random() * total), n_ads - 1)]

    boundary = month_boundary_ms(cfg, cfg.boundary_advertiser) if cfg.boundary_advertiser else None
    pending: list[tuple[int, int, dict]] = []  # (arrival_ms, seq, click record)
    recent: deque[str] = deque(maxlen=_RETRY_WINDOW)
    seq = 0
    for i in range(cfg.events):
        arrival_ms = cfg.day_start_ms + i * DAY_MS // max(cfg.events, 1)
        roll = rng.random()
        if roll < cfg.malformed_rate:
            rec = _event(
                pick_ad(),
                "impression",
                _below(rng, cfg.slots),
                _below(rng, cfg.users),
                arrival_ms,
                rng,
            )
            yield _corrupt(rec, rng)
            continue
        if roll < cfg.malformed_rate + cfg.duplicate_rate and recent:
            yield rng.choice(recent)  # client retry: the very same record again
            continue
        if pending and pending[0][0] <= arrival_ms:
            rec = heapq.heappop(pending)[2]
            if (boundary is not None and rec["advertiser_id"] == cfg.boundary_advertiser
                    and arrival_ms >= boundary + _BOUNDARY_DELAY_MS):
                rec["ts"] = boundary - 1_000  # 23:59:59 local, on the last day of the month
                boundary = None
        else:
            ad = pick_ad()
            slot, user = _below(rng, cfg.slots), _below(rng, cfg.users)
            if rng.random() < cfg.late_rate:
                ts_ms = arrival_ms - _LATE_MIN_MS - _below(rng, _LATE_MAX_MS - _LATE_MIN_MS)
            else:
                ts_ms = arrival_ms - _below(rng, _JITTER_MS)
            rec = _event(ad, "impression", slot, user, ts_ms, rng)
            if rng.random() < ad.ctr:
                delay_ms = _CLICK_DELAY_MIN_MS + _below(
                    rng, _CLICK_DELAY_MAX_MS - _CLICK_DELAY_MIN_MS
                )
                click = _event(ad, "click", slot, user, ts_ms + delay_ms, rng)
                seq += 1
                heapq.heappush(pending, (arrival_ms + delay_ms, seq, click))
        line = _fast_line(rec)
        recent.append(line)
        yield line


def write_file(cfg: GenConfig, out) -> int:
    """Write the lines to a text stream, one per line; returns the line count."""
    n = 0
    for line in generate_lines(cfg):
        out.write(line)
        out.write("\n")
        n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate one day of ad-server log lines.")
    parser.add_argument("--seed", type=int, default=DEFAULTS["adclicks.seed"])
    parser.add_argument("--events", type=int, default=DEFAULTS["adclicks.events"])
    parser.add_argument("--malformed-rate", type=float, default=DEFAULTS["adclicks.malformed_rate"])
    parser.add_argument("--duplicate-rate", type=float, default=DEFAULTS["adclicks.duplicate_rate"])
    parser.add_argument("--late-rate", type=float, default=DEFAULTS["adclicks.late_rate"])
    parser.add_argument("--day-start-ms", type=int, default=DEFAULT_DAY_START_MS)
    parser.add_argument("--ads", type=int, default=GenConfig.ads, help="distinct ad ids in the catalogue")
    parser.add_argument("--uniform-ads", action="store_true", help="every ad equally popular (not Zipf)")
    parser.add_argument("--out", default="-", help="output file (default: stdout)")
    args = parser.parse_args(argv)
    cfg = GenConfig(
        seed=args.seed,
        events=args.events,
        malformed_rate=args.malformed_rate,
        duplicate_rate=args.duplicate_rate,
        late_rate=args.late_rate,
        day_start_ms=args.day_start_ms,
        ads=args.ads,
        uniform_ads=args.uniform_ads,
    )
    if args.out == "-":
        write_file(cfg, sys.stdout)
    else:
        with open(args.out, "w", encoding="utf-8", newline="\n") as out:
            write_file(cfg, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
