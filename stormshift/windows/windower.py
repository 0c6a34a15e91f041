"""The windower: time windows per key, fired by watermark, triggers and timers.

Pure logic: the caller passes the watermark and processing time in; nothing
reads a clock. Call order for each input element: ``add(key, event_ms, item,
now_ms)``, then ``advance(watermark_ms, now_ms)`` whenever the watermark may
have moved; ``on_processing_time(now_ms)`` when processing time moved (ticks);
``advance(END_OF_TIME_MS, now_ms)`` at end of input fires and drops every
window. Each call returns its outputs in a deterministic order: by fire time
(a window's ``end_ms``, a timer's ``at_ms``), then window start, then the
key's ``stable_order``; retractions come just before the pane replacing them.

An element is *on time* when none of its windows is complete; *late* when it
updates a window the watermark has passed (``W >= end_ms``) but not by more
than the allowed lateness; *dropped* when every window it belongs to expired
(``W >= end_ms + allowed_lateness_ms``). A window's state is deleted once it
expires, after a last LATE pane for late elements a batched late trigger
still held.

State: ``windows`` (key order -> window -> ``WindowState``), ``keys``, the
watermark and the timers: plain picklable data; ``snapshot()``/``restore()``.
``touched`` (derived) names the keys whose windows, timers or key changed since
the owner last cleared it: a task's snapshot writes only those keys
(``state.py``, ``keyed.py``).
The windows are indexed by when the watermark fires them (``end_ms``) and expires
them (``end_ms + allowed_lateness_ms``): per time, a list of ``(key order, window)``
in the order indexed, and a heap of the distinct times (windows share their ends: the
heap holds the minutes open, not the windows, and compares ints); their panes by
processing-time deadline in a heap. A watermark or processing-time step costs what it
fires, not the number of open windows; entries of windows merged away or already fired
are skipped when taken (derived: rebuilt on ``restore``); ``timers_of`` indexes the
timers by key and is the truth: a timer popped from the heap that it does not hold is
skipped (a delta applied in place drops a key's entries from the indexes that way,
counted in ``_stale``: ``keyed.py``).
Merging assigners (sessions) keep each key's windows sorted by start (``_sessions``): an
element finds the sessions it merges with by bisection, not a scan of the key's windows.
A key with one session (the usual one) is not in ``_sessions``: its ``windows`` entry is
the index, so that table holds the few keys with several, and an element of a key with one
looks up no entry of its own there (a table as large as the keys costs a cache miss per
key once the state outgrows the caches).
``unretractable`` lists, per key, the windows whose last panes an expired window would
have retracted (its state dropped without a pane): the owner forgets what they emitted
(``WindowedBolt``) and empties the list.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii as _json_str
from typing import Any

from stormshift.errors import WindowConfigError
from stormshift.windows.aggregation import Aggregation, Collect
from stormshift.windows.assigners import Assigner
from stormshift.windows.panes import Accumulation, Output, Pane, Retraction, TimerFired
from stormshift.windows.triggers import Trigger, TriggerState
from stormshift.windows.window import (
    START_OF_TIME_MS,
    Timing,
    Window,
    set_slot_state,
    slot_state,
    stable_order,
)

__all__ = ["AddResult", "WindowState", "Windower"]


def _start(window: Window) -> int:
    return window.start_ms


def _index(by: dict[int, list[tuple[str, Window]]], times: list[int], at: int,
           entry: tuple[str, Window]) -> None:
    """``entry`` indexed under time ``at`` (module doc): a time not indexed yet joins the
    heap of ``times``."""
    entries = by.get(at)
    if entries is None:
        by[at] = entries = []
        heapq.heappush(times, at)
    entries.append(entry)


@dataclass(slots=True)
class WindowState:
    """One window's state (slotted, one object: a task holds one per open window; pickled
    as before, ``window.slot_state``)."""

    acc: Any  # everything so far (None when discarding: not needed)
    delta: Any  # since the previous pane
    trigger: TriggerState = field(default_factory=TriggerState)
    retract: list[tuple[Window, Any]] = field(default_factory=list)  # RETRACTING only

    __getstate__ = slot_state
    __setstate__ = set_slot_state


@dataclass
class AddResult:
    kind: str  # "on_time" | "late" | "dropped"
    outputs: list[Output]


class Windower:
    def __init__(
        self,
        assigner: Assigner,
        *,
        trigger: Trigger | None = None,
        accumulation: Accumulation = Accumulation.DISCARDING,
        aggregation: Aggregation[Any] | None = None,
        allowed_lateness_ms: int = 0,
    ) -> None:
        if allowed_lateness_ms < 0:
            raise WindowConfigError(f"allowed_lateness_ms must be >= 0, got {allowed_lateness_ms}")
        self.assigner = assigner
        self.trigger = trigger or Trigger()
        self.accumulation = Accumulation(accumulation)
        self.aggregation: Aggregation[Any] = aggregation or Collect()
        self.allowed_lateness_ms = allowed_lateness_ms
        self.windows: dict[str, dict[Window, WindowState]] = {}
        self.keys: dict[str, Any] = {}
        self.watermark_ms = START_OF_TIME_MS
        self.timers: list[tuple[int, str, str]] = []  # heap of (at_ms, key order, tag)
        self.timers_of: dict[str, list[tuple[int, str]]] = {}  # derived: key order -> (at, tag)
        # end -> [(key order, window)] and the heap of those ends; the same by end +
        # lateness (module doc). No tie breaker (``id()`` made a pickle's bytes differ
        # between identical runs): what is taken is sorted before it fires or expires
        self._due: dict[int, list[tuple[str, Window]]] = {}
        self._due_times: list[int] = []
        self._expiry: dict[int, list[tuple[str, Window]]] = {}
        self._expiry_times: list[int] = []
        self._deadlines: list[tuple[int, int, int, str, Window]] = []  # (deadline, end, start, ...)
        self.touched: set[str] = set()  # key orders changed since cleared (module doc)
        self._sessions: dict[str, list[Window]] = {}  # merging: a key's windows by start
        self._stale = 0  # index entries forget_key left behind (module doc)
        self.unretractable: list[tuple[str, list[Window]]] = []  # module doc

    def _track(self, kord: str, window: Window) -> None:
        """Index a window that just got its state (new, or a merge of sessions)."""
        entry = (kord, window)
        _index(self._due, self._due_times, window.end_ms, entry)
        _index(self._expiry, self._expiry_times, window.end_ms + self.allowed_lateness_ms, entry)
        state = self.windows.get(kord, {}).get(window)
        if state is not None and state.trigger.deadline_ms is not None:
            self._deadline(kord, window, state.trigger.deadline_ms)

    def _deadline(self, kord: str, window: Window, deadline_ms: int) -> None:
        """Index a pane's processing-time deadline (``on_processing_time`` pops what is due)."""
        heapq.heappush(self._deadlines, (deadline_ms, window.end_ms, window.start_ms, kord, window))

    # -- input ----------------------------------------------------------------
    def add(self, key: Any, event_ms: int, item: Any, now_ms: int) -> AddResult:
        kord = _json_str(key) if type(key) is str else stable_order(key)  # (its str case)
        wm = self.watermark_ms
        lateness = self.allowed_lateness_ms
        agg_add, agg_init = self.aggregation.add, self.aggregation.init
        keep_all = self.accumulation is not Accumulation.DISCARDING
        accepted: list[tuple[Window, WindowState]] = []
        states: dict[Window, WindowState] | None = None
        assigner: Any = self.assigner  # assigners.assign, inline (a call per element)
        protos = assigner.assign(event_ms, key) if getattr(assigner, "keyed", False) \
            else assigner.assign(event_ms)
        for proto in protos:
            if wm >= proto.end_ms + lateness:
                continue  # expired for this window
            if states is None:  # a key with windows has its ``keys`` entry: one lookup
                states = self.windows.get(kord)
                if states is None:
                    self.keys.setdefault(kord, key)
                    states = self.windows[kord] = {}
            window = self._merge(kord, states, proto) if assigner.merging else proto
            state = states.get(window)
            if state is None:  # _new_state, inline (a call per window)
                born = TriggerState()
                born.on_time_fired = wm >= window.end_ms  # born late: no ON_TIME
                state = states[window] = WindowState(
                    agg_init() if keep_all else None, agg_init(), born, [])
                entry = (kord, window)  # _track: no deadline yet
                _index(self._due, self._due_times, window.end_ms, entry)
                _index(self._expiry, self._expiry_times, window.end_ms + lateness, entry)
            if state.acc is not None:
                state.acc = agg_add(state.acc, item)
            state.delta = agg_add(state.delta, item)
            accepted.append((window, state))
        if not accepted:
            return AddResult("dropped", [])
        self.touched.add(kord)
        outputs: list[Output] = []
        late = False
        trigger = self.trigger
        for window, state in accepted:
            complete = wm >= window.end_ms
            late = late or complete
            ts = state.trigger  # TriggerState.on_element, inline (a call per element)
            ts.count += 1
            if complete:
                every_count, every_ms = trigger.late_count(), trigger.late_every_ms
            else:
                every_count, every_ms = trigger.early_every_count, trigger.early_every_ms
            if every_ms is not None and ts.deadline_ms is None:
                ts.deadline_ms = now_ms + every_ms
                self._deadline(kord, window, ts.deadline_ms)
            if every_count is not None and ts.count >= every_count:
                outputs += self._fire(kord, window, state,
                                      Timing.LATE if complete else Timing.EARLY)
        return AddResult("late" if late else "on_time", outputs)

    def set_timer(self, key: Any, at_ms: int, tag: str = "") -> None:
        """An event-time timer: ``TimerFired`` once the watermark reaches ``at_ms``."""
        kord = stable_order(key)
        self.keys.setdefault(kord, key)
        heapq.heappush(self.timers, (at_ms, kord, tag))
        self.timers_of.setdefault(kord, []).append((at_ms, tag))
        self.touched.add(kord)

    def due_timers(self) -> list[Output]:
        """Timers set at or below the current watermark since it last moved (user code
        sets timers while handling the outputs of ``advance``): fire them now."""
        fired: list[Output] = []
        while self.timers and self.timers[0][0] <= self.watermark_ms:
            popped = self._pop_timer()
            if popped is not None:
                at_ms, kord, tag = popped
                self.touched.add(kord)
                fired.append(TimerFired(self.keys[kord], at_ms, tag))
        return fired

    # -- time -----------------------------------------------------------------
    def advance(self, watermark_ms: int, now_ms: int) -> list[Output]:
        """Move the watermark forward (never back); fire and expire what it passed."""
        if watermark_ms <= self.watermark_ms:
            return []
        self.watermark_ms = wm = watermark_ms
        # (fire time, 0 window | 1 timer, start, key order, window | tag, state | None):
        # sorted whole, the first four order it (a window's are unique: ``seen``; a
        # timer's tie only with an equal timer), so neither a window nor a state is compared
        due: list[tuple[int, int, int, str, Any, WindowState | None]] = []
        seen: set[int] = set()  # id of each state due: an entry indexed twice (forget_key)
        windows, pop, times, by = self.windows, heapq.heappop, self._due_times, self._due
        while times and times[0] <= wm:
            end = pop(times)
            for kord, window in by.pop(end):
                states = windows.get(kord)
                state = None if states is None else states.get(window)
                if state is not None and not state.trigger.on_time_fired \
                        and id(state) not in seen:
                    seen.add(id(state))
                    due.append((end, 0, window.start_ms, kord, window, state))
        while self.timers and self.timers[0][0] <= wm:
            popped = self._pop_timer()
            if popped is not None:
                at_ms, kord, tag = popped
                self.touched.add(kord)
                due.append((at_ms, 1, 0, kord, tag, None))
        due.sort()
        outputs: list[Output] = []
        fire, on_time = self._fire, Timing.ON_TIME
        for at_ms, kind, _, kord, what, state in due:
            if state is None:
                outputs.append(TimerFired(self.keys[kord], at_ms, str(what)))
            else:
                outputs += fire(kord, what, state, on_time)
        outputs += self._expire(wm)
        return outputs

    def on_processing_time(self, now_ms: int) -> list[Output]:
        """Fire panes whose processing-time trigger came due by ``now_ms``."""
        if not self.trigger.uses_processing_time:  # no window ever has a deadline: skip the walk
            return []
        due = []
        seen: set[tuple[str, Window]] = set()
        while self._deadlines and self._deadlines[0][0] <= now_ms:  # the index: no walk
            deadline_ms, _, _, kord, window = heapq.heappop(self._deadlines)
            state = self.windows.get(kord, {}).get(window)
            if state is None or state.trigger.deadline_ms != deadline_ms or (kord, window) in seen:
                continue  # fired, merged away or expired since it was indexed
            seen.add((kord, window))
            timing = state.trigger.on_processing_time(self.watermark_ms >= window.end_ms, now_ms)
            if timing is not None:
                due.append((window.end_ms, window.start_ms, kord, window, timing))
        outputs: list[Output] = []
        for _, _, kord, window, timing in sorted(due, key=lambda d: d[:3]):
            outputs += self._fire(kord, window, self.windows[kord][window], timing)
        return outputs

    def _expire(self, wm: int) -> list[Output]:
        # each window found is taken out of its key's windows at once: one lookup, and
        # an entry indexed twice (forget_key) finds nothing the second time
        found: list[tuple[int, int, str, Window, WindowState]] = []
        windows, pop, times, by = self.windows, heapq.heappop, self._expiry_times, self._expiry
        while times and times[0] <= wm:
            expiry = pop(times)
            for kord, window in by.pop(expiry):
                states = windows.get(kord)
                state = None if states is None else states.pop(window, None)
                if state is not None:
                    found.append((expiry, window.start_ms, kord, window, state))
        found.sort()  # (expiry, start, key order) unique per window: no window compared
        outputs: list[Output] = []
        touched, merging = self.touched, self.assigner.merging
        for _, _, kord, window, state in found:
            touched.add(kord)
            if merging:
                self._unindex(kord, window)
            if state.trigger.count:  # a batched late pane still pending
                outputs += self._fire(kord, window, state, Timing.LATE)
            elif state.retract:  # its last panes can no longer be retracted (module doc)
                self.unretractable.append((kord, [w for w, _ in state.retract]))
        for kord in sorted({f[2] for f in found}):  # keys left without a window
            if not windows.get(kord, True):
                del windows[kord]
                if kord not in self.timers_of:
                    self.keys.pop(kord, None)
        return outputs

    # -- panes ----------------------------------------------------------------
    def _new_state(self) -> WindowState:
        agg = self.aggregation
        keep_all = self.accumulation is not Accumulation.DISCARDING
        return WindowState(agg.init() if keep_all else None, agg.init(), TriggerState(), [])

    def _merge(self, kord: str, states: dict[Window, WindowState], proto: Window) -> Window:
        """Sessions: merge ``proto`` with the key's windows it intersects. A key's sessions
        never overlap (each merge spans what it joins), so sorted by start their ends rise
        too: the ones ``proto`` meets are a run found by bisection (module doc). A session
        extended (one part) keeps its state object, updated as a merge into a new one
        would set it: no new objects for the usual event."""
        sessions = self._sessions
        index = sessions.get(kord)
        if index is None:  # none or one session: ``states`` holds it (module doc)
            index = list(states)
        hi = bisect_left(index, proto.end_ms, key=_start)  # index[:hi] start before proto ends
        lo = hi
        while lo and index[lo - 1].end_ms > proto.start_ms:
            lo -= 1
        parts = index[lo:hi]
        merged = proto
        for part in parts:
            merged = merged.span(part)
        if parts == [merged]:
            return merged
        index[lo:hi] = [merged]
        if len(index) > 1:
            sessions[kord] = index
        elif sessions:
            sessions.pop(kord, None)
        agg = self.aggregation
        if len(parts) == 1:
            state = states.pop(parts[0])
            trigger = state.trigger  # a merge with a fresh state's gives the same fields
            acc = agg.init() if self.accumulation is not Accumulation.DISCARDING else None
            state.acc = None if acc is None else agg.merge(acc, state.acc)
            state.delta = agg.merge(agg.init(), state.delta)
        else:
            state = self._new_state()
            trigger = TriggerState()
            for part in parts:
                old = states.pop(part)
                if state.acc is not None:
                    state.acc = agg.merge(state.acc, old.acc)
                state.delta = agg.merge(state.delta, old.delta)
                state.retract += old.retract
                trigger = trigger.merge(old.trigger)
            state.trigger = trigger
        trigger.on_time_fired = trigger.on_time_fired and self.watermark_ms >= merged.end_ms
        states[merged] = state
        self._track(kord, merged)
        return merged

    def _fire(self, kord: str, window: Window, state: WindowState, timing: Timing) -> list[Output]:
        agg, key = self.aggregation, self.keys[kord]
        self.touched.add(kord)
        new = agg.result(state.delta)
        result = new if state.acc is None else agg.result(state.acc)
        trigger = state.trigger
        final = self.watermark_ms >= window.end_ms + self.allowed_lateness_ms
        pane = Pane(key, window, timing, trigger.panes, result, new, final)
        if self.accumulation is Accumulation.RETRACTING:
            outputs: list[Output] = [Retraction(key, w, r) for w, r in state.retract]
            outputs.append(pane)
            state.retract = [(window, result)]
        else:
            outputs = [pane]
        state.delta = agg.init()
        trigger.count = 0  # TriggerState.fired, inline (a call per pane)
        trigger.deadline_ms = None
        trigger.panes += 1
        if timing is Timing.ON_TIME:
            trigger.on_time_fired = True
        return outputs

    def _pop_timer(self) -> tuple[int, str, str] | None:
        """The heap's next timer, None when ``timers_of`` does not hold it (module doc)."""
        at_ms, kord, tag = heapq.heappop(self.timers)
        mine = self.timers_of.get(kord)
        if not mine or (at_ms, tag) not in mine:
            return None
        mine.remove((at_ms, tag))
        if not mine:
            del self.timers_of[kord]
        return at_ms, kord, tag

    def index_timers(self) -> None:
        """Rebuild ``timers_of`` from the heap (after the heap was replaced)."""
        self.timers_of = {}
        for at_ms, kord, tag in sorted(self.timers):
            self.timers_of.setdefault(kord, []).append((at_ms, tag))

    def _unindex(self, kord: str, window: Window) -> None:
        """A merging assigner's window left the key's sorted sessions."""
        index = self._sessions.get(kord)
        if index is None:  # none or one session: ``windows`` was the index
            return
        i = bisect_left(index, window.start_ms, key=_start)
        if i < len(index) and index[i] == window:
            del index[i]
        if len(index) < 2:
            del self._sessions[kord]

    def live_timers(self) -> list[tuple[int, str, str]]:
        """Every timer set and not fired, sorted (``timers_of``; the heap may hold more)."""
        return sorted((at, k, tag) for k, mine in self.timers_of.items() for at, tag in mine)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickle one pickled before ``timers_of`` or the indexes by time existed (its
        heaps of windows held ``(time, id, key order, window)``): they are derived."""
        self.__dict__.update(state)
        if "_due_times" not in state:
            self.reindex()
        if "timers_of" not in state:
            self.index_timers()
        if "_deadlines" not in state:
            self._deadlines = []
            for kord, states in sorted(self.windows.items()):
                for window, st in sorted(states.items()):
                    if st.trigger.deadline_ms is not None:
                        self._deadline(kord, window, st.trigger.deadline_ms)
        if "_sessions" not in state:
            self._stale, self.unretractable = 0, []
            self._sessions = self.sessions_index()

    # -- state ----------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """Everything that changes, as plain data (config is not included)."""
        return {
            "windows": {k: dict(v) for k, v in self.windows.items()},
            "keys": dict(self.keys),
            "watermark_ms": self.watermark_ms,
            "timers": self.live_timers(),  # the heap's layout follows its history
        }

    def restore(self, snap: dict[str, Any]) -> None:
        self.windows = {k: dict(v) for k, v in snap["windows"].items()}
        self.keys = dict(snap["keys"])
        self.watermark_ms = int(snap["watermark_ms"])
        self.timers = list(snap["timers"])
        heapq.heapify(self.timers)
        self.index_timers()
        self.touched = set()
        self._stale, self.unretractable = 0, []
        self._sessions = self.sessions_index()
        self.reindex()

    def sessions_index(self) -> dict[str, list[Window]]:
        """``_sessions`` rebuilt: the keys with more than one session (module doc)."""
        if not self.assigner.merging:
            return {}
        return {k: sorted(v) for k, v in sorted(self.windows.items()) if len(v) > 1}

    def reindex(self) -> None:
        """The indexes by time and deadline rebuilt from the windows (no stale entries)."""
        self._due, self._due_times, self._expiry, self._expiry_times = {}, [], {}, []
        self._deadlines = []
        for kord, states in sorted(self.windows.items()):
            for window in sorted(states):
                self._track(kord, window)

    def indexed(self) -> int:
        """Entries in the index by expiry (live windows and the stale ones ``_stale``
        counts): a compaction's measure (``keyed.py``)."""
        return sum(map(len, self._expiry.values()))
