"""Why a key diverges: rounding, nondeterminism, Storm's at-least-once, or the port.

Every divergence gets exactly one cause; the first that applies wins:

- ``nondeterministic component``: the key belongs to an attribute or a stream
  that ``check`` finds fed by the wall clock or unseeded randomness
  (``findings.py``); ``detail`` names the rule and file:line. The two sides
  ran at other times (or drew other numbers), so they cannot agree there,
  and it says nothing about the port (it wins over rounding: a timestamp a
  few ms apart is within a relative tolerance, and still not a rounding);
- ``rounding (within the float tolerance)``: the values differ only within
  the tolerance (``compare.py``: the default and why);
- ``not comparable``: a value is an object without a comparable form (its
  text carries a memory address, ``<Foo object at 0x..>``), or a value each
  side holds from its own config (``--legacy-option``: a scratch target per
  side; ``run.py``);
- then, by the legacy's injected failures, as below.

The legacy side's own losses are never the port's. When faults were injected
or a legacy bolt task restarted (the user's own code raised: a transient
error, a poison tuple), the shadow also runs the legacy side *without* the
faults and without restarting tasks (the *baseline*: same input, seed and
simulated clock, a raise only fails its tuple; so it is the run Storm would
have had without the failures, ``run.py``). A divergence is then

- ``storm at-least-once replay (double count)``: the baseline agrees with the
  port on that key, the legacy's value (or multiplicity) exceeds the port's,
  and the legacy run reported replays (``duplicates`` of the emitter or an
  upstream bolt, ``replays`` of a spout): the excess is what re-executing
  replayed tuples adds;
- ``storm crash lost in-memory state`` (a legacy task restart): the baseline
  agrees with the port, the legacy's value is below the port's, and a task
  restarted (its in-memory dicts were lost) or lost queued tuples (in the final
  state, ``final_state.py``, this is the crashed task's attributes starting
  again from ``initialize()``); ``detail`` names the restarts;
- ``storm failure (other effect)``: the baseline agrees with the port, the
  faulted legacy does not, and neither rule above explains how;
- ``legacy did not finish its input``: the legacy run (the baseline too, when
  there is one) did not take all of its input (``evidence.unfinished``: it gave
  up replaying a poison tuple, took fewer spout tuples than the port, stopped
  early) and on this key it is below the port (fewer emits, smaller numbers, a
  key it never emitted): what it never got to, which the port did;
- ``real difference in the port``: none of the above: the baseline disagrees
  with the port on that key too (or there was no baseline) and the legacy
  finished its input, or the key goes the other way (the port is below a
  legacy that lost input is still the port's): the port computes something else;
- ``live difference``: a live shadow's divergence (``live.py``): production
  Storm ran without a baseline beside it, so a replay's double count and the
  port's own difference cannot be told apart there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from stormshift.shadow.compare import Divergence, DivergenceKind, StreamComparison
from stormshift.shadow.evidence import replay_evidence, restarts, unfinished, upstream

if TYPE_CHECKING:
    from stormshift.shadow.final_state import StateComparison
    from stormshift.shadow.findings import ProjectFindings
from stormshift.topology.graph import TopologyGraph

__all__ = [
    "CAUSE_CLASSES",
    "CRASH_LOST_STATE",
    "LEGACY_UNFINISHED",
    "LIVE_DIFFERENCE",
    "NONDETERMINISTIC",
    "NOT_COMPARABLE",
    "PORT_DIFFERENCE",
    "REPLAY_DOUBLE_COUNT",
    "ROUNDING",
    "SHORT_CAUSES",
    "STORM_OTHER",
    "classify",
    "own_config",
    "replay_evidence",
    "upstream",
]

_ADDRESS = re.compile(r"<[^<>]* at 0x[0-9a-fA-F]+>")
REPLAY_DOUBLE_COUNT = "storm at-least-once replay (double count)"
CRASH_LOST_STATE = "storm crash lost in-memory state"
STORM_OTHER = "storm failure (other effect)"
LEGACY_UNFINISHED = "legacy did not finish its input"
PORT_DIFFERENCE = "real difference in the port"
LIVE_DIFFERENCE = "live difference (no baseline: Storm replay or the port)"
ROUNDING = "rounding (within the float tolerance)"
NONDETERMINISTIC = "nondeterministic component"
NOT_COMPARABLE = "not comparable"

#: each cause's class id (the ``--json`` report's ``classes``), in report order
CAUSE_CLASSES = {
    PORT_DIFFERENCE: "port",
    LIVE_DIFFERENCE: "live",
    REPLAY_DOUBLE_COUNT: "storm-replay",
    CRASH_LOST_STATE: "storm-crash-loss",
    STORM_OTHER: "storm-other",
    LEGACY_UNFINISHED: "legacy-unfinished",
    NONDETERMINISTIC: "nondeterministic",
    ROUNDING: "rounding",
    NOT_COMPARABLE: "not-comparable",
}

#: one or two words per cause, for narrow terminals
SHORT_CAUSES = {
    REPLAY_DOUBLE_COUNT: "replay x2",
    CRASH_LOST_STATE: "crash lost",
    STORM_OTHER: "storm other",
    LEGACY_UNFINISHED: "unfinished",
    PORT_DIFFERENCE: "PORT",
    LIVE_DIFFERENCE: "live",
    ROUNDING: "rounding",
    NONDETERMINISTIC: "nondeterm.",
    NOT_COMPARABLE: "not compar.",
}


def classify(
    graph: TopologyGraph,
    streams: Sequence[StreamComparison | StateComparison],
    legacy: Any,
    baseline: Mapping[str, StreamComparison | StateComparison] | None,
    findings: ProjectFindings | None = None,
    *,
    port: Any = None,
    base_run: Any = None,
) -> None:
    """Set ``cause`` on every divergence of ``streams`` (leaf streams or final-state
    entries; ``baseline``: the same comparisons with the legacy re-run without faults and
    restarts, by label; None: no such run; ``findings``: ``check``'s, for nondeterministic
    places; ``port`` / ``base_run``: the port's and the baseline's summaries, for what each
    run did not finish)."""
    short = unfinished(base_run if base_run is not None else legacy, port)
    for comparison in streams:
        base = baseline.get(comparison.label) if baseline is not None else None
        port_keys = {d.key for d in base.divergences} if base is not None else set()
        evidence = replay_evidence(graph, legacy, comparison.component)
        why = _nondeterminism(comparison, findings)
        for d in comparison.divergences:
            if why:
                d.cause, d.detail = NONDETERMINISTIC, why
            elif d.within_tolerance:
                d.cause = ROUNDING
            elif _opaque(d.legacy) or _opaque(d.port):
                d.cause = NOT_COMPARABLE
            elif baseline is None or d.key in port_keys:
                d.cause = LEGACY_UNFINISHED if short and _below(d) else PORT_DIFFERENCE
                d.detail = short if d.cause == LEGACY_UNFINISHED else d.detail
            else:
                d.cause = _storm_cause(d, evidence)
                if d.cause == CRASH_LOST_STATE:
                    d.detail = _restarted(graph, legacy, comparison.component)


def _below(d: Divergence) -> bool:
    """The legacy holds less than the port on this key: a key only the port has, fewer
    emits, or numbers all below the port's."""
    return _direction(d) < 0 or d.legacy_count < d.port_count


def _restarted(graph: TopologyGraph, legacy: Any, component: str) -> str:
    """``count_bolt restarted 1 time`` for the restarted tasks on the way to ``component``."""
    found = restarts(legacy, upstream(graph, component))
    return "; ".join(f"{n} restarted {k} time{'s' if k != 1 else ''}" for n, k in found.items())


def own_config(items: Sequence[StreamComparison | StateComparison], legacy: Mapping[str, Any],
               port: Mapping[str, Any]) -> None:
    """A value a side holds because its config differs from the other's (``--legacy-option``:
    its own scratch target, kept in an attribute by each task) is not comparable, never the
    port's difference: the two values are equal once each side's config value is named."""
    keys = sorted(k for k in legacy if legacy[k] != port.get(k))
    for item in items if keys else ():
        for d in item.divergences:
            if d.cause != PORT_DIFFERENCE:
                continue
            left, right = _text(d.legacy), _text(d.port)
            for k in keys:
                left = left.replace(_text(legacy[k]), f"<{k}>")
                right = right.replace(_text(port.get(k)), f"<{k}>")
                if left == right:
                    d.cause, d.detail = NOT_COMPARABLE, f"config {k} differs by side"
                    break


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _nondeterminism(comparison: Any, findings: ProjectFindings | None) -> str:
    """``wall-clock at src/bolts.py:12`` when ``check`` found what feeds ``comparison``."""
    if findings is None:
        return ""
    if hasattr(comparison, "spec"):
        found = findings.nondeterministic(comparison.component, comparison.spec.stream, stream=True)
    else:
        found = findings.nondeterministic(comparison.component, comparison.entry, stream=False)
    return "; ".join(f"{f.rule} at {f.location}" for f in found)


def _opaque(value: Any) -> bool:
    """A value whose text is an object's default repr (it carries a memory address)."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return _ADDRESS.search(text) is not None


def _storm_cause(d: Divergence, evidence: Mapping[str, int]) -> str:
    direction = _direction(d)
    if direction > 0 and (evidence["duplicates"] or evidence["replays"]):
        return REPLAY_DOUBLE_COUNT
    if direction < 0 and (evidence["restarts"] or evidence["lost"]):
        return CRASH_LOST_STATE
    return STORM_OTHER


def _direction(d: Divergence) -> int:
    """+1 when the legacy exceeds the port (more, or larger numbers), -1 below, 0 mixed."""
    if d.kind is DivergenceKind.MISSING_KEY:
        return 1
    if d.kind is DivergenceKind.EXTRA_KEY:
        return -1
    if d.kind is DivergenceKind.COUNT_DIFFERS and d.legacy_count != d.port_count:
        return 1 if d.legacy_count > d.port_count else -1
    signs = {(x > y) - (x < y) for x, y in _number_pairs(d.legacy, d.port) if x != y}
    return signs.pop() if len(signs) == 1 else 0


def _number_pairs(a: Any, b: Any) -> Iterator[tuple[float, float]]:
    """The numbers at the same place in two values: a leaf stream's fields position by
    position, a final-state value nested as it is (a user's sessions ``{start: [end,
    events, clicks]}``: lists by position, dicts by the keys both have)."""
    if _is_number(a) and _is_number(b):
        yield a, b
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        for x, y in zip(a, b, strict=False):
            yield from _number_pairs(x, y)
    elif isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in sorted(set(a) & set(b), key=str):
            yield from _number_pairs(a[key], b[key])


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
