"""``WindowedBolt``: a streamparse Bolt whose ``process`` receives windows.

Declare it like any bolt (``MyWindows.spec(inputs=...)``); its class
attribute ``windowing`` (a ``Windowing``) says how it windows. Each input
tuple goes through these steps (tuple at a time, Storm semantics):

1. its event time (timestamp field / extractor; without either, the task's
   processing time: Storm's processing-time windows) and key (the
   ``key_fields``, by default the fields of the fields grouping feeding it);
2. into its windows (``Windower`` / count windows): on time, late (updates
   the window: a LATE pane), or dropped -- emitted on the late-tuple stream
   when one is declared -- and counted either way;
3. the watermark moves (after every tuple, or only on ticks every
   ``watermark_interval_ms``) and fires what it passed.

Each pane calls the user's ``process(window)`` (a ``TupleWindow``); its
emits go downstream as any bolt's. Retractions are re-emits on
``<stream>_retract`` (see ``view.py``). ``on_timer(key, at_ms, tag)`` runs for
event-time timers set with ``set_event_timer``.

Processing time is the task's own tick clock: it starts at 0 and moves by
the tick interval on each tick (``topology.tick.tuple.freq.secs``, which
``spec()`` sets when the windowing needs ticks and the spec does not); never
the wall clock. ``end_of_input()`` -- called by the engines when their
sources are exhausted -- moves the watermark to ``END_OF_TIME_MS``: every
window fires and its state is dropped.

Batch mode (the Spark engine, ``engines/spark/task/windowing.py``): the
engine calls ``start_batch(processing_ms, watermark_ms)`` with the batch's
recorded processing time and watermark before the batch's tuples; from then
on the watermark moves only there (and at ``end_of_input``), never per tuple
or tick, and ``batch_report()`` hands the engine the largest event time the
task saw per input partition, from which the driver computes the watermark
of the next batches.

State lives in one attribute, ``windowing_state`` (see ``state.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from streamparse import Bolt

from stormshift.adapters.context import TICK_FREQ_KEY, tick_interval_secs
from stormshift.errors import TopologyError
from stormshift.windows.aggregation import Collect
from stormshift.windows.config import Windowing
from stormshift.windows.panes import Accumulation, Output, Pane, Retraction, TimerFired
from stormshift.windows.state import WindowingState
from stormshift.windows.view import TupleWindow, WindowedTuple, retraction_stream
from stormshift.windows.window import END_OF_TIME_MS, Timing, stable_order
from stormshift.windows.wiring import expected_partitions, input_fields, key_fields

__all__ = ["WindowedBolt"]


class WindowedBolt(Bolt):  # type: ignore[misc]
    windowing: ClassVar[Windowing]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The host calls ``process(tup)`` per tuple; the class's ``process`` takes
        # windows. This bound method (not state: snapshots skip methods) routes tuples.
        self.process = self._receive  # type: ignore[method-assign, assignment]
        self.windowing_state: WindowingState | None = None
        self._stormshift_batched = False  # batch mode (module doc); derived, not state
        self._stormshift_seen: dict[tuple[str, str, int], int] = {}
        self._stormshift_shapes: dict[tuple[str, str], tuple[Any, ...]] = {}  # _shape, derived

    @classmethod
    def spec(cls, name: str | None = None, inputs: Any = None, par: int | None = None,
             config: dict[str, Any] | None = None) -> Any:
        """streamparse's ``spec``, plus the tick frequency the windowing needs
        (as Storm's windowed bolts set their own component config)."""
        config = dict(config or {})
        tick_ms = cls.windowing.tick_interval_ms()
        if tick_ms is not None and TICK_FREQ_KEY not in config:
            config[TICK_FREQ_KEY] = tick_ms / 1000
        return super().spec(name=name, inputs=inputs, par=par, config=config or None)

    # -- the user's side --------------------------------------------------------
    def process(self, window: TupleWindow) -> None:  # type: ignore[override]
        raise NotImplementedError(
            f"{type(self).__qualname__} must define process(self, window) -- it receives a "
            "TupleWindow per pane (window.get(), window.start_ms, window.end_ms)")

    def on_timer(self, key: Any, at_ms: int, tag: str) -> None:
        """An event-time timer set with ``set_event_timer`` fired."""

    def set_event_timer(self, key: Any, at_ms: int, tag: str = "") -> None:
        state = self._state()
        if state.windower is None:
            raise TypeError(f"component {self.component_name!r}: event-time timers need "
                            "time windows, not count windows")
        state.windower.set_timer(key, at_ms, tag)

    @property
    def watermark_ms(self) -> int:
        return self._state().tracker.watermark_ms

    def window_counters(self) -> dict[str, int]:
        """on_time / late_updated / dropped_late / late_stream so far (this task)."""
        return dict(self._state().counters)

    def snapshot(self) -> dict[str, Any]:
        return self._state().snapshot()

    def restore(self, snap: dict[str, Any]) -> None:
        self.windowing_state = None
        self._state().restore(snap)

    # -- what the engine calls --------------------------------------------------
    def _receive(self, tup: Any) -> None:
        state = self.windowing_state
        if state is None or "_stormshift_fields" not in self.__dict__:
            state = self._state()
        shape = self._stormshift_shapes.get((tup.component, tup.stream))
        if shape is None:
            shape = self._shape(tup.component, tup.stream)
        fields, event_time, ts_at, key_at = shape
        now = state.processing_ms
        values = tuple(tup.values)
        if ts_at is not None and type(values[ts_at]) is int:
            event_ms = values[ts_at]
        else:  # an extractor, processing time, or an error _event_ms raises
            event_ms = self._event_ms(tup) if event_time else now
        item = tuple.__new__(WindowedTuple, (tup.id, tup.component, tup.stream, tup.task, values,
                                             fields, event_ms))
        if key_at is None:  # a key field the stream lacks: _key raises its KeyError
            key = self._key(item)
        elif len(key_at) == 1:
            key = values[key_at[0]]
        else:
            key = tuple([values[i] for i in key_at]) if key_at else None
        windower = state.windower
        if windower is not None:
            if event_time:
                if self._stormshift_batched:  # _observe, inline (a call per tuple)
                    seen, part = self._stormshift_seen, (tup.component, tup.stream, tup.task)
                    if event_ms > seen.get(part, event_ms - 1):
                        seen[part] = event_ms
                else:
                    self._observe((tup.component, tup.stream, tup.task), event_ms, now)
            added = windower.add(key, event_ms, item, now)
            if added.kind == "on_time":
                state.counters["on_time"] += 1
            else:
                self._count(added.kind, item)
            if added.outputs:
                self._handle(added.outputs)
            if not self._stormshift_batched and self.windowing.watermark_interval_ms is None:
                self._advance()
            return
        per_tuple = self.windowing.watermark_interval_ms is None and not self._stormshift_batched
        assert state.counter is not None
        if state.buffer is None:  # count windows in arrival order
            self._count("on_time", item)
            self._handle(state.counter.add(key, event_ms, item))
            return
        self._observe((tup.component, tup.stream, tup.task), event_ms, now)
        if event_ms < state.tracker.watermark_ms:
            self._count("dropped", item)
        else:
            self._count("on_time", item)
            state.buffer.hold(key, event_ms, item)
        if per_tuple:
            self._advance()

    def _shape(self, component: str, stream: str) -> tuple[Any, ...]:
        """Per input stream, read once: ``(fields, event time?, position of the timestamp
        field, positions of the key fields)``; a position None when the stream lacks the field
        (``_event_ms`` / ``_key`` then raise per tuple, as they say)."""
        cfg = self.windowing
        fields = tuple(self._stormshift_fields.get((component, stream), ()))
        keys = self._stormshift_key_fields
        key_at = tuple(fields.index(f) for f in keys) if all(f in fields for f in keys) else None
        ts = cfg.timestamp_field if cfg.timestamp_extractor is None else None
        ts_at = fields.index(ts) if ts is not None and ts in fields else None
        shape = (fields, cfg.event_time, ts_at, key_at)
        self._stormshift_shapes[(component, stream)] = shape
        return shape

    def _observe(self, partition: tuple[str, str, int], event_ms: int, now: int) -> None:
        if not self._stormshift_batched:
            self._state().tracker.observe(partition, event_ms, now)
            return
        seen = self._stormshift_seen
        if event_ms > seen.get(partition, event_ms - 1):
            seen[partition] = event_ms

    def process_tick(self, tup: Any) -> None:
        if self._stormshift_batched:  # the batch's recorded time moved it (start_batch)
            return
        state = self._state()
        state.processing_ms += round((tick_interval_secs(self.storm_conf) or 0) * 1000)
        if state.windower is not None:
            self._handle(state.windower.on_processing_time(state.processing_ms))
        interval = self.windowing.watermark_interval_ms
        if interval is None:
            self._advance()
        elif state.next_watermark_ms is not None and state.processing_ms >= state.next_watermark_ms:
            while state.next_watermark_ms <= state.processing_ms:
                state.next_watermark_ms += interval
            self._advance()

    def end_of_input(self) -> None:
        """No more input will come: fire every window (watermark to the end of time).
        A task that never received a tuple has nothing to fire and keeps no state."""
        if self.windowing_state is None:
            return
        state = self._state()
        state.tracker.end_of_input()
        self._advance()

    def start_batch(self, processing_ms: int, watermark_ms: int) -> None:
        """Batch mode (module doc): the batch's recorded processing time, then its
        watermark (event time; processing-time windows use the processing time), applied
        before its tuples. Both never go back."""
        self._stormshift_batched = True
        state = self._state()
        state.processing_ms = now = max(state.processing_ms, processing_ms)
        if state.windower is not None:
            self._handle(state.windower.on_processing_time(now))
        interval = self.windowing.watermark_interval_ms
        if interval is not None and state.next_watermark_ms is not None:
            if now < state.next_watermark_ms:
                return
            state.next_watermark_ms += ((now - state.next_watermark_ms) // interval + 1) * interval
        wm = watermark_ms if self.windowing.event_time else now
        tracker = state.tracker
        tracker.watermark_ms = END_OF_TIME_MS if tracker.ended else max(tracker.watermark_ms, wm)
        self._fire(tracker.watermark_ms)

    def batch_report(self) -> dict[str, Any]:
        """What the engine's driver needs from this task's batch: the largest event time
        per input partition (``[component, stream, task, max_event_ms]``), the lag and the
        idle timeout, and whether the task holds nothing a batch without input could fire
        (``idle``: the driver then skips its stage until it gets input); resets the
        partitions seen."""
        seen, self._stormshift_seen = self._stormshift_seen, {}
        cfg = self.windowing
        return {"event_time": cfg.event_time, "lag_ms": cfg.lag_ms,
                "idle_timeout_ms": cfg.idle_timeout_ms, "idle": self._state().idle(),
                "seen": [[*p, ms] for p, ms in sorted(seen.items())]}

    # -- steps ------------------------------------------------------------------
    def _advance(self) -> None:
        state = self._state()
        now = state.processing_ms
        wm = state.tracker.advance(now) if self.windowing.event_time else now
        if state.tracker.ended:
            wm = END_OF_TIME_MS
        self._fire(wm)

    def _fire(self, wm: int) -> None:
        state = self._state()
        now = state.processing_ms
        if state.windower is not None:
            outputs = state.windower.advance(wm, now)
            while outputs:  # user code may set timers the watermark already passed
                self._handle(outputs)
                outputs = state.windower.due_timers()
            state.forget_unretractable()
        elif state.buffer is not None and state.counter is not None:
            for key, event_ms, item in state.buffer.release(wm):
                self._handle(state.counter.add(key, event_ms, item))

    def _count(self, kind: str, item: WindowedTuple) -> None:
        counters = self._state().counters
        if kind == "on_time":
            counters["on_time"] += 1
        elif kind == "late":
            counters["late_updated"] += 1
        else:
            counters["dropped_late"] += 1
            stream = self.windowing.late_tuple_stream
            if stream is not None:
                counters["late_stream"] += 1
                self.emit(list(item.values), stream=stream)

    def _handle(self, outputs: Iterable[Output]) -> None:
        for out in outputs:
            if isinstance(out, Retraction):
                self._retract(out)
            elif isinstance(out, Pane):
                self._pane(out)
            elif isinstance(out, TimerFired):
                self.on_timer(out.key, out.at_ms, out.tag)

    def _retract(self, out: Retraction) -> None:
        emitted = self._state().take_emitted(stable_order(out.key), out.window)
        for stream, values in emitted:
            self.emit(values, stream=retraction_stream(stream))

    def _pane(self, pane: Pane) -> None:
        cfg = self.windowing
        collects = isinstance(cfg.aggregation, Collect)
        expired: list[WindowedTuple] = []
        if collects and pane.timing is Timing.ON_TIME:
            state, kord = self._state(), stable_order(pane.key)
            now_ids = {t.id for t in pane.result}
            expired = [t for t in state.previous_of(kord) if t.id not in now_ids]
            state.set_previous(kord, pane.key, list(pane.result))
        view = TupleWindow(pane, expired, collects, self.component_name)
        if cfg.accumulation is not Accumulation.RETRACTING:
            type(self).process(self, view)
            return
        emitted = self._recording(view)
        if not pane.is_final:
            self._state().keep_emitted(stable_order(pane.key), pane.window, emitted)

    def _recording(self, view: TupleWindow) -> list[tuple[str, list[Any]]]:
        """Run ``process(view)``, keeping what it emitted (to retract it later)."""
        emitted: list[tuple[str, list[Any]]] = []
        had_own = "emit" in self.__dict__
        original: Any = getattr(self, "emit")  # noqa: B009 - the host's, set per instance

        def emit(tup: Any, stream: str | None = None, *args: Any, **kwargs: Any) -> Any:
            emitted.append((stream or "default", list(tup)))
            return original(tup, stream, *args, **kwargs)

        self.emit = emit
        try:
            type(self).process(self, view)
        finally:
            if had_own:
                self.emit = original
            else:
                del self.emit
        declared = self._stormshift_declared  # made once (_wire), never per pane
        missing = sorted({retraction_stream(s) for s, _ in emitted} - declared)
        if missing:
            raise TopologyError(
                f"accumulating-and-retracting: a pane emitted on a stream without its "
                f"retraction stream {missing}", component=self.component_name,
                fix="declare outputs = with_retractions([...]) (from stormshift.windows)")
        return emitted

    # -- setup ------------------------------------------------------------------
    def _state(self) -> WindowingState:
        if "_stormshift_fields" not in self.__dict__:  # derived, not state (snapshots skip it)
            self._wire()
        if self.windowing_state is None:
            self.windowing_state = WindowingState.build(self.windowing, expected_partitions(self.context))
        return self.windowing_state

    def _wire(self) -> None:
        cfg = self.windowing
        name = self.component_name
        cfg.check(name)
        ctx = self.context
        declared = self._stormshift_declared = frozenset(ctx.get("streams", []))
        if cfg.late_tuple_stream is not None and cfg.late_tuple_stream not in declared:
            raise TopologyError(
                f"late tuple stream {cfg.late_tuple_stream!r} is not declared", component=name,
                fix=f"add Stream(fields=<the input's fields>, name={cfg.late_tuple_stream!r}) "
                "to outputs")
        self._stormshift_fields = input_fields(ctx)
        self._stormshift_key_fields = key_fields(ctx, cfg.key_fields)

    def _event_ms(self, tup: Any) -> int:
        cfg = self.windowing
        if cfg.timestamp_extractor is not None:
            value = cfg.timestamp_extractor(tup)
        else:
            assert cfg.timestamp_field is not None
            fields = self._stormshift_fields.get((tup.component, tup.stream), [])
            if cfg.timestamp_field not in fields:
                raise TopologyError(
                    f"timestamp field {cfg.timestamp_field!r} is not a field of "
                    f"{tup.component}:{tup.stream} {fields}", component=self.component_name,
                    fix="name an input field in with_timestamp_field, or use "
                    "with_timestamp_extractor")
            value = tup.values[fields.index(cfg.timestamp_field)]
        if type(value) is not int:
            raise TypeError(f"component {self.component_name!r}: event time must be an int "
                            f"of epoch milliseconds, got {value!r} from {tup.component}:"
                            f"{tup.stream}; convert it in with_timestamp_extractor")
        return value

    def _key(self, item: WindowedTuple) -> Any:
        if not self._stormshift_key_fields:
            return None
        values = tuple(item.value(f) for f in self._stormshift_key_fields)
        return values[0] if len(values) == 1 else values

