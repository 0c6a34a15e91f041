"""What the adclicks topology must compute, computed without the topology.

An independent oracle for tests, shadow runs and the CLI: it reads the log
lines alone (its own strict parser, no topology code) and totals

- per ad: impressions, clicks, spend (integer micro-dollars), CTR;
- per advertiser: spend.

``compute_windowed`` computes the event-time reports the same way (by each
record's ``ts``, whatever its arrival): per ad and UTC minute impressions and
clicks; per advertiser and calendar day in the advertiser's zone, spend, and
the days whose spend reaches the budget (one alert each); per user, the
sessions (events at least ``gap`` apart split them), their events and clicks.

``dedup=False`` is the legacy Storm semantics: every well-formed line counts,
client-retry duplicates included (double billing). ``dedup=True`` counts each
``event_id`` once (its first well-formed line) — what an exactly-once port
with event dedup must produce. Malformed lines count nowhere.

Usage:  python examples/adclicks/expected.py [--seed 7 --events N | --path FILE] [--dedup]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import NamedTuple, TextIO
from zoneinfo import ZoneInfo

_ID_FIELDS = ("slot_id", "advertiser_id", "ad_id", "user_id", "event_id")


class AdTotals(NamedTuple):
    """The final ``[impressions, clicks, spend]`` of one ad (AdsCtrBolt's last emit)."""

    impressions: int
    clicks: int
    spend: int  # micro-dollars

    @property
    def ctr(self) -> float:
        return self.clicks / self.impressions if self.impressions else 0.0


@dataclass
class Expected:
    """Totals over a day of log lines."""

    ctr_by_ad: dict[str, AdTotals] = field(default_factory=dict)
    spend_by_advertiser: dict[str, int] = field(default_factory=dict)
    lines: int = 0
    counted: int = 0  # well-formed lines that were counted
    malformed: int = 0
    duplicates: int = 0  # well-formed lines repeating an earlier event_id

    @property
    def total_spend(self) -> int:
        return sum(self.spend_by_advertiser.values())


def parse_record(line: str) -> dict | None:
    """The record of a well-formed line, else None (same rules the ad servers promise)."""
    try:
        rec = json.loads(line)
    except ValueError:
        return None
    if not isinstance(rec, dict):
        return None
    if any(not isinstance(rec.get(f), str) or not rec.get(f) for f in _ID_FIELDS):
        return None
    if rec.get("event_type") not in ("impression", "click"):
        return None
    for f in ("ts", "cost"):
        if type(rec.get(f)) is not int or rec[f] < 0:
            return None
    return rec


def compute(lines: Iterable[str], dedup: bool = False) -> Expected:
    """Total the lines (strings without their newline)."""
    out = Expected()
    seen: set[str] = set()
    per_ad: dict[str, list[int]] = {}
    for line in lines:
        out.lines += 1
        rec = parse_record(line)
        if rec is None:
            out.malformed += 1
            continue
        if rec["event_id"] in seen:
            out.duplicates += 1
            if dedup:
                continue
        seen.add(rec["event_id"])
        out.counted += 1
        totals = per_ad.setdefault(rec["ad_id"], [0, 0, 0])
        totals[0 if rec["event_type"] == "impression" else 1] += 1
        totals[2] += rec["cost"]
        adv = rec["advertiser_id"]
        out.spend_by_advertiser[adv] = out.spend_by_advertiser.get(adv, 0) + rec["cost"]
    out.ctr_by_ad = {ad: AdTotals(*t) for ad, t in per_ad.items()}
    return out


@dataclass
class WindowedExpected:
    """The event-time reports over a day of log lines (duplicates counted, as the totals)."""

    ctr_by_ad_minute: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    spend_by_advertiser_day: dict[tuple[str, str], int] = field(default_factory=dict)
    alerts: list[tuple[str, str]] = field(default_factory=list)  # (advertiser, day), sorted
    sessions_by_user: dict[str, tuple[int, int, int]] = field(default_factory=dict)


def utc_minute(ts_ms: int) -> str:
    """``2023-11-30 14:05Z``."""
    return datetime.fromtimestamp(ts_ms // 60_000 * 60, timezone.utc).strftime("%Y-%m-%d %H:%MZ")


def local_day(ts_ms: int, zone: str) -> str:
    """The calendar date of ``ts_ms`` in ``zone`` (``2023-11-30``)."""
    return datetime.fromtimestamp(ts_ms // 1000, ZoneInfo(zone)).strftime("%Y-%m-%d")


def compute_windowed(lines: Iterable[str], zone_of: Callable[[str], str], budget_micros: int,
                     gap_ms: int = 30 * 60_000) -> WindowedExpected:
    """The reports by event time (see the module docstring)."""
    out = WindowedExpected()
    ctr: dict[tuple[str, str], list[int]] = {}
    times: dict[str, list[tuple[int, bool]]] = {}
    for line in lines:
        rec = parse_record(line)
        if rec is None:
            continue
        click = rec["event_type"] == "click"
        counts = ctr.setdefault((rec["ad_id"], utc_minute(rec["ts"])), [0, 0])
        counts[1 if click else 0] += 1
        adv = rec["advertiser_id"]
        day = (adv, local_day(rec["ts"], zone_of(adv)))
        out.spend_by_advertiser_day[day] = out.spend_by_advertiser_day.get(day, 0) + rec["cost"]
        times.setdefault(rec["user_id"], []).append((rec["ts"], click))
    out.ctr_by_ad_minute = {k: (v[0], v[1]) for k, v in ctr.items()}
    out.alerts = sorted(k for k, v in out.spend_by_advertiser_day.items() if v >= budget_micros)
    for user, events in times.items():
        events.sort()
        sessions, last = 0, None
        for ts, _ in events:
            if last is None or ts >= last + gap_ms:
                sessions += 1
            last = ts if last is None else max(last, ts)
        out.sessions_by_user[user] = (sessions, len(events), sum(c for _, c in events))
    return out


def read_lines(path: str) -> Iterable[str]:
    """Lines of a JSON-lines file as AdLogSpout reads them (blank lines skipped)."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\r\n")
            if line:
                yield line


def _adgen():  # noqa: ANN202 - a module
    """The example's data generator (``src/adgen.py``), not topology code, loaded from its
    file: putting ``src/`` on ``sys.path`` would leave this project's ``bolts`` package
    ahead of the next project's for the rest of the process."""
    import importlib.util

    module = sys.modules.get("adclicks_adgen")
    if module is None:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "src", "adgen.py")
        spec = importlib.util.spec_from_file_location("adclicks_adgen", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["adclicks_adgen"] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
    return module


def generated_lines(
    seed: int,
    events: int,
    malformed_rate: float = 0.0,
    duplicate_rate: float = 0.01,
    late_rate: float = 0.02,
) -> Iterable[str]:
    """The lines AdLogSpout generates for this config (the data generator, not topology code)."""
    adgen = _adgen()
    cfg = adgen.GenConfig(
        seed=seed,
        events=events,
        malformed_rate=malformed_rate,
        duplicate_rate=duplicate_rate,
        late_rate=late_rate,
    )
    return adgen.generate_lines(cfg)


def _money(micros: int) -> str:
    return f"${micros // 1_000_000:,}.{micros % 1_000_000 // 10_000:02d}"


def summarize(
    ctr_by_ad: Mapping[str, Sequence[int]],
    spend_by_advertiser: Mapping[str, int],
    file: TextIO | None = None,
    top: int = 10,
) -> str:
    """Print (and return) the top ads by spend with their CTR, and the totals.

    ``ctr_by_ad`` maps ad_id to ``(impressions, clicks, spend)`` — an
    ``AdTotals`` or the last ``[impressions, clicks, spend]`` AdsCtrBolt emitted.
    """
    rows = sorted(ctr_by_ad.items(), key=lambda kv: (-kv[1][2], kv[0]))[:top]
    out = [
        f"top {min(top, len(ctr_by_ad))} ads by spend:",
        f"  {'ad_id':<10} {'impressions':>11} {'clicks':>7} {'CTR':>7} {'spend':>14}",
    ]
    for ad_id, (imps, clicks, spend) in rows:
        ctr = clicks / imps if imps else 0.0
        out.append(f"  {ad_id:<10} {imps:>11,} {clicks:>7,} {ctr:>7.2%} {_money(spend):>14}")
    imps = sum(t[0] for t in ctr_by_ad.values())
    clicks = sum(t[1] for t in ctr_by_ad.values())
    out.append(
        f"totals: {len(ctr_by_ad):,} ads, {imps:,} impressions, {clicks:,} clicks, "
        f"CTR {clicks / imps if imps else 0.0:.2%}, ad spend {_money(sum(t[2] for t in ctr_by_ad.values()))}"
    )
    out.append(
        f"        {len(spend_by_advertiser):,} advertisers billed "
        f"{_money(sum(spend_by_advertiser.values()))}"
    )
    text = "\n".join(out)
    print(text, file=file if file is not None else sys.stdout)
    return text


def _zones() -> Callable[[str], str]:
    """The advertisers' billing zones (account data, kept with the generator)."""
    return _adgen().advertiser_zone  # type: ignore[no-any-return]


def summarize_windowed(w: WindowedExpected, top: int = 5) -> None:
    """The top advertiser-days by spend, the budget alerts, the busiest ad-minutes."""
    print(f"{len(w.spend_by_advertiser_day)} advertiser-days; top {top} by spend:")
    days = sorted(w.spend_by_advertiser_day.items(), key=lambda kv: (-kv[1], kv[0]))
    for (adv, day), spend in days[:top]:
        print(f"  {adv} {day} {_money(spend):>12}")
    print(f"budget alerts: {', '.join(f'{adv} {day}' for adv, day in w.alerts) or 'none'}")
    print(f"{len(w.ctr_by_ad_minute):,} ad-minutes; top {top} by clicks:")
    minutes = sorted(w.ctr_by_ad_minute.items(), key=lambda kv: (-kv[1][1], kv[0]))
    for (ad, minute), (imps, clicks) in minutes[:top]:
        print(f"  {ad} {minute} {imps:>4} impressions {clicks:>3} clicks")
    sessions = sum(s[0] for s in w.sessions_by_user.values())
    print(f"{len(w.sessions_by_user):,} users, {sessions:,} sessions (gap 30 min)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Expected adclicks totals, computed independently."
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--malformed-rate", type=float, default=0.0)
    parser.add_argument("--path", help="read this JSON-lines file instead of generating")
    parser.add_argument("--dedup", action="store_true", help="count each event_id once")
    parser.add_argument("--windowed", action="store_true",
                        help="the event-time reports instead (adclicks.windows)")
    parser.add_argument("--budget-micros", type=int, default=250_000_000,
                        help="daily budget of --windowed's alerts (adclicks.daily_budget_micros)")
    args = parser.parse_args(argv)
    lines = (
        read_lines(args.path)
        if args.path
        else generated_lines(args.seed, args.events, malformed_rate=args.malformed_rate)
    )
    if args.windowed:
        summarize_windowed(compute_windowed(lines, _zones(), args.budget_micros))
        return 0
    result = compute(lines, dedup=args.dedup)
    print(
        f"{result.lines:,} lines: {result.counted:,} counted, {result.malformed:,} malformed, "
        f"{result.duplicates:,} duplicates ({'dropped' if args.dedup else 'counted'})"
    )
    summarize(result.ctr_by_ad, result.spend_by_advertiser)
    return 0


if __name__ == "__main__":
    sys.exit(main())
