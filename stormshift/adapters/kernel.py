"""The per-tuple kernel: where a hosted bolt executes a tuple, for both engines.

One attempt at one tuple reproduces pystorm's run loop for it: clear the call's
first-wins ack/fail record, set ``_current_tups``, ``process(tup)``, auto-ack
(library ack appended straight to the outbox, or the user's ``ack``); a
``BatchingBolt`` acks when it flushes, not here. That attempt is written once
(``_compile``) and specialised per caller, because it is the per-tuple cost:

- ``execute(tup)``: one tuple with Storm's semantics (the local engine,
  ``BoltHost.execute``): a raise propagates as ``ComponentFailure`` (reported
  and auto-failed as pystorm does), the emits stay in the outbox with anchors.
- ``run_chunks``: a Spark task's input, chunks of value lists decoded from its
  rows (or raw row cells, which the engine's ``unpack`` decodes straight into values
  namedtuples where the install built it; ``adapters/ckernel.pyx`` then builds the Tuples
  and runs the loop in C);
  tuples are built inline (ids ``prefix + n``) and each attempt is
  classified into a ``retry_policy.Outcome``; the ones not ``OK`` go to the
  engine's ``on_outcome``, which asks a ``RetryPolicy`` and calls ``retry``.

In batch mode (``Kernel(host, dispatch, rejected)``) emits a class sends to its
outbox are ``dispatch``ed after each attempt, the engine's ``deliver`` records
the emits it cannot encode in ``rejected``, and a failed attempt's emits not yet
dispatched are discarded. Knows neither Spark nor Redis.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from time import perf_counter_ns
from typing import Any

from stormshift import native
from stormshift.adapters.hostbase import EMPTY
from stormshift.adapters.retry_policy import Action, Decision, Outcome, RetryPolicy
from stormshift.adapters.sampling import SAMPLE_EVERY
from stormshift.adapters.tuples import Tuple
from stormshift.errors import ComponentFailure, TupleError

__all__ = ["Kernel"]

# An attempt: None when it succeeded, else (outcome, detail): the ComponentFailure of a
# raise, the exception of an emit that could not be encoded, None for a bolt's fail().
Attempt = Callable[[Tuple], "tuple[Outcome, Any] | None"]
_RAISED, _EMIT, _ENCODE, _FAILED = Outcome.RAISED, Outcome.EMIT, Outcome.ENCODE, Outcome.FAILED
_DIGITS = tuple(str(i) for i in range(1000))  # the id's tail while n < 1000
_PADDED = tuple(f"{i:03d}" for i in range(1000))  # its last three digits after that
_CKERNEL = native.load("stormshift.adapters.ckernel")  # the loop in C, or None: the pure one
_MAKE = _CKERNEL.make_tuple if _CKERNEL is not None else None


class Kernel:
    """Executes tuples on one opened ``BoltHost`` (module doc for the two modes)."""

    def __init__(self, host: Any, dispatch: Callable[[list[Any]], None] | None = None,
                 rejected: list[BaseException] | None = None, track: bool = True):
        """``dispatch`` (batch mode): sends and clears the outbox's emits; ``rejected``: the
        errors of emits the engine could not encode; ``track``: keep ``_current_tups`` set
        on the first attempt (a bolt whose emits need no anchors can skip it)."""
        self.host = host
        self.dispatch = dispatch
        self.rejected: list[BaseException] = rejected if rejected is not None else []
        if dispatch is None:
            self.execute: Callable[[Tuple], None] = self._compile(True, True, False)  # type: ignore[assignment]
        else:
            self.first = self._compile(track, False, True)
            self.again = self._compile(True, False, True)  # retries: as execute() would

    def _compile(self, track: bool, anchors: bool, batch: bool) -> Any:
        """The attempt, specialised: ``anchors`` keeps the fast emit's anchor ids current;
        ``batch`` classifies instead of raising (module doc)."""
        host = self.host
        inst = host.instance
        process = inst.process
        outbox = host.outbox
        emits, fails = outbox.emits, outbox.fails
        acks_append = outbox.acks.append
        done = host.completion.done
        cache = host.anchor_cache
        failure = host._failure
        fast_ack = host.fast_ack
        auto_ack_ok = not host.batching  # a BatchingBolt acks when it flushes
        track = track or host.batching  # its flush reads _current_tups
        anchors = anchors and not host.batching
        dispatch, rejected = self.dispatch, self.rejected
        empty = EMPTY
        if batch and _CKERNEL is not None:  # the same attempt in C (adapters/ckernel.pyx)
            return _CKERNEL.Attempt(inst, process, done, fails, emits, outbox.acks, failure,
                                  dispatch, rejected, cache, empty, track, anchors, auto_ack_ok,
                                  fast_ack, (_EMIT, _RAISED, _ENCODE, _FAILED), TupleError)

        def attempt(tup: Tuple) -> tuple[Outcome, Any] | None:
            if done:
                done.clear()
            if track:
                cur = [tup]
                inst._current_tups = cur
                if anchors:
                    cache.tups = cur
                    cache.ids = (tup.id,)
            if batch:
                before = len(fails)
            try:
                process(tup)
            except Exception as exc:  # the user's error: reported as pystorm does
                err = failure(exc, "process", tup)
                if not batch:
                    raise err from exc
                emits.clear()  # a failed attempt's emits are discarded
                rejected.clear()
                return (_EMIT if isinstance(exc, TupleError) else _RAISED, err)
            if auto_ack_ok and inst.auto_ack:
                if fast_ack:
                    if not done or tup.id not in done:
                        acks_append(tup.id)
                else:
                    inst.ack(tup)
            if track:
                inst._current_tups = empty
            if batch:
                if emits:
                    dispatch(emits)  # type: ignore[misc]
                if rejected:
                    bad = rejected[0]
                    rejected.clear()
                    return (_ENCODE, bad)
                if len(fails) > before and tup.id in fails[before:]:
                    return (_FAILED, None)
            return None

        return attempt

    def execute_many(self, tuples: Iterable[Tuple],
                     on_failure: Callable[[ComponentFailure], None] | None = None) -> int:
        """``execute`` each tuple in order; returns how many were executed. Without
        ``on_failure`` the first ``ComponentFailure`` propagates; with it, each failure is
        handed over and the loop goes on."""
        execute = self.execute
        n = 0
        for tup in tuples:
            n += 1
            try:
                execute(tup)
            except ComponentFailure as failure:
                if on_failure is None:
                    raise
                on_failure(failure)
        return n

    def run_chunks(self, chunks: Iterable[tuple[int, Any, list[Any]]],
                   shape: Callable[[int, Any], tuple[str, str]], prefix: str,
                   skip: dict[str, Any], on_skip: Callable[[str], None],
                   on_outcome: Callable[[Tuple, Outcome, Any], None],
                   latency: Any = None,
                   unpack: Callable[[memoryview, Any, int], list[Any]] | None = None) -> int:
        """Execute ``(source task id, stream key, value lists)`` chunks in order (batch mode);
        returns the number of tuples.

        A chunk's value lists may be a raw row cell (a memoryview: ``rows.iter_input``, only
        where the engine's wire is built), which ``unpack(cell, values type or None, arity)``
        decodes (the engine's: this layer knows no row format). ``shape(source task id, stream
        key)`` names the source component and stream.
        Tuple *n* (from 1) gets the id ``prefix + str(n)``; one whose id is in ``skip`` is
        not built (``on_skip(id)``). A tuple not ``OK`` goes to ``on_outcome(tup, outcome,
        detail)``; one of the wrong arity (``ARITY``, detail its ``TupleError``) carries its
        values as they came. ``latency`` (a ``metrics.LatencyHistogram``) gets the execute
        time of one tuple in every ``SAMPLE_EVERY`` (a bit test per tuple, a clock read per
        sample).
        """
        attempt = self.first
        shapes: dict[tuple[int, Any], tuple[Any, ...]] = {}
        new = tuple.__new__
        # Tuple n = 1000 * hi + lo: its id is (prefix + str(hi)) + lo's three digits, from
        # tables, instead of str(n) per tuple (half an id's cost).
        hi, lo, head, digits = 0, 0, prefix, _DIGITS
        observe = latency.observe_ns if latency is not None else None
        sample, clock = SAMPLE_EVERY - 1, perf_counter_ns
        build = _MAKE
        if _CKERNEL is not None and build is not None:  # the per-tuple loop in C (ckernel.pyx)
            runner = _CKERNEL.Runner(prefix, _DIGITS, _PADDED, skip,  # type: ignore[union-attr]
                                   on_skip, on_outcome, attempt, observe, clock, sample,
                                   Outcome.ARITY, TupleError)
            run = runner.run
            for src, sid, values_list in chunks:
                known = shapes.get((src, sid))
                if known is None:
                    known = shapes[(src, sid)] = self._shape(*shape(src, sid))
                if type(values_list) is memoryview:
                    values_list = unpack(values_list, known[2], known[3])  # type: ignore[misc]
                run(values_list, src, *known)
            return runner.count  # type: ignore[no-any-return]
        for src, sid, values_list in chunks:
            known = shapes.get((src, sid))
            if known is None:
                known = shapes[(src, sid)] = self._shape(*shape(src, sid))
            source, stream, vtype, arity, make = known
            if type(values_list) is memoryview:  # a raw row cell (rows.iter_input): C decodes it
                values_list = unpack(values_list, vtype, arity)  # type: ignore[misc]
            for values in values_list:
                lo += 1
                if lo == 1000:
                    hi += 1
                    lo = 0
                    head, digits = prefix + str(hi), _PADDED
                tid = head + digits[lo]
                if skip and tid in skip:
                    on_skip(tid)
                    continue
                if len(values) == arity:  # TupleFactory.maker's tuple, built inline (or in C)
                    if build is None:
                        tup = new(Tuple, (tid, source, stream, src, new(vtype, values)))
                    else:
                        tup = build(tid, source, stream, src, vtype, values)
                else:
                    try:
                        tup = make(values, tid, src)  # a stream without a values type, or an error
                    except TupleError as exc:
                        on_outcome(new(Tuple, (tid, source, stream, src, values)), Outcome.ARITY, exc)
                        continue
                if lo & sample != 1 or observe is None:  # tuples 1, 17, 33, ... are timed
                    result = attempt(tup)
                else:
                    started = clock()
                    result = attempt(tup)
                    observe(clock() - started)
                if result is not None:
                    on_outcome(tup, *result)
        return 1000 * hi + lo

    def _shape(self, source: str, stream: str) -> tuple[Any, ...]:
        """``(source, stream, values type, arity or -1, maker)`` of the tuples from a source."""
        factory = self.host.tuple_factory
        vtype = factory.types.get((source, stream))
        arity = len(vtype._fields) if vtype is not None else -1
        return source, stream, vtype, arity, factory.maker(source, stream)

    def retry(self, tup: Tuple, policy: RetryPolicy,
              redo: bool) -> tuple[Outcome, Any, Decision]:
        """Attempt ``tup`` again while ``policy`` says retry (its first attempt raised and
        the policy said so); returns the last attempt's outcome, detail and decision."""
        attempt, n = self.again, 1
        while True:
            n += 1
            result = attempt(tup)
            outcome, detail = (Outcome.OK, None) if result is None else result
            decision = policy.after_attempt(outcome, n, redo)
            if decision.action is not Action.RETRY:
                return outcome, detail, decision
