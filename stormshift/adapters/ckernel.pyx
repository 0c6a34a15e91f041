# cython: language_level=3, auto_pickle=False, binding=False
"""The kernel's per-tuple loop in C: a Spark task's tuples built and attempted without a
Python-level call per tuple (``kernel.py`` is the truth and runs where this is not built).

- ``make_tuple(tid, source, stream, task, vtype, values)``: the ``Tuple`` and, when
  ``values`` is not a ``vtype`` already, its values namedtuple, filled in C;
- ``Runner``: ``Kernel.run_chunks``' loop (ids, skips, Tuples, outcomes, latency samples);
- ``Attempt``: ``Kernel._compile``'s batch-mode attempt, which ``Runner`` calls in C (one
  module, so that call needs no Python-level call or argument tuple).

Split from the data plane's one module (now ``engines/spark/dataplane/cwire.pyx``, the row
wire, and ``adapters/cemit.pyx``, a bolt's emit): nothing here calls those in C, and the
hosting layer must not load a module of an engine. ``kernel.py`` uses this module only
while it is a fresh build (``native.py``); ``tests/test_cwire.py`` checks both paths equal.
"""

from cpython.object cimport PyObject, PyTypeObject

from pystorm.component import Tuple as _TUPLE

cdef extern from *:
    """
    #define sw_steal(o) (o)  /* a new reference, handed to Cython as an object */

    /* The Tuple (and its values namedtuple unless values is one already), filled in C. */
    static PyObject *sw_make_tuple(PyTypeObject *tuple_type, PyObject *tid, PyObject *source,
                                   PyObject *stream, PyObject *task, PyTypeObject *vtype,
                                   PyObject *values) {
        PyObject *v;
        if (Py_TYPE(values) == vtype) {
            Py_INCREF(values); v = values;
        } else {
            PyObject *seq = PySequence_Fast(values, "values must be a sequence");
            if (seq == NULL) return NULL;
            Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
            PyObject **src = PySequence_Fast_ITEMS(seq);
            v = vtype->tp_alloc(vtype, n);
            if (v == NULL) { Py_DECREF(seq); return NULL; }
            for (Py_ssize_t i = 0; i < n; i++) {
                Py_INCREF(src[i]); PyTuple_SET_ITEM(v, i, src[i]);
            }
            Py_DECREF(seq);
        }
        PyObject *t = tuple_type->tp_alloc(tuple_type, 5);
        if (t == NULL) { Py_DECREF(v); return NULL; }
        Py_INCREF(tid); PyTuple_SET_ITEM(t, 0, tid);
        Py_INCREF(source); PyTuple_SET_ITEM(t, 1, source);
        Py_INCREF(stream); PyTuple_SET_ITEM(t, 2, stream);
        Py_INCREF(task); PyTuple_SET_ITEM(t, 3, task);
        PyTuple_SET_ITEM(t, 4, v);
        return t;
    }
    """
    PyObject* sw_make_tuple(PyTypeObject* tt, PyObject* tid, PyObject* source, PyObject* stream,
                            PyObject* task, PyTypeObject* vtype, PyObject* values) except NULL
    object sw_steal(PyObject* o)


cdef object _tuple_type = _TUPLE


def make_tuple(tid, source, stream, task, vtype, values):
    """``Tuple(tid, source, stream, task, vtype(*values))`` in C (``values`` kept when it is
    a ``vtype`` already); ``tuple.__new__`` twice, without the calls and argument tuples."""
    return sw_steal(sw_make_tuple(<PyTypeObject*>_tuple_type, <PyObject*>tid, <PyObject*>source,
                               <PyObject*>stream, <PyObject*>task, <PyTypeObject*>vtype,
                               <PyObject*>values))


cdef class Runner:
    """``Kernel.run_chunks``'s per-tuple loop in C (``kernel.py`` is the truth: the same ids,
    skips, Tuples, outcomes and latency samples). One per ``run_chunks`` call; ``run`` takes
    one chunk's value lists; ``count`` is the tuples seen (skipped ones too)."""

    cdef object prefix, head, skip, on_skip, on_outcome, attempt, observe, clock, arity_outcome
    cdef object error
    cdef Attempt attempt_c
    cdef tuple digits, padded
    cdef Py_ssize_t hi, lo, sample

    def __init__(self, prefix, tuple digits, tuple padded, skip, on_skip, on_outcome, attempt,
                 observe, clock, Py_ssize_t sample, arity_outcome, error):
        """``digits``/``padded``: the id tails (``kernel._DIGITS``, ``_PADDED``); ``sample``:
        ``SAMPLE_EVERY - 1``; ``arity_outcome``: ``Outcome.ARITY``; ``error``: ``TupleError``."""
        self.prefix = self.head = prefix
        self.digits, self.padded, self.skip = digits, padded, skip
        self.on_skip, self.on_outcome, self.attempt = on_skip, on_outcome, attempt
        self.observe, self.clock, self.sample = observe, clock, sample
        self.arity_outcome, self.error = arity_outcome, error
        self.attempt_c = attempt if type(attempt) is Attempt else None
        self.hi = self.lo = 0

    cdef inline object call(self, tup):
        if self.attempt_c is not None:
            return self.attempt_c.attempt(tup)
        return self.attempt(tup)

    @property
    def count(self):
        return 1000 * self.hi + self.lo

    def run(self, values_list, src, source, stream, vtype, Py_ssize_t arity, make):
        """The tuples of one chunk: ``values_list`` (value lists, or ``vtype`` instances)
        from ``source``/``stream``, task ``src``; ``make`` builds the ones not of ``arity``."""
        cdef PyTypeObject* tt = <PyTypeObject*>_tuple_type
        cdef PyTypeObject* vt = <PyTypeObject*>vtype if vtype is not None else NULL
        for values in values_list:
            self.lo += 1
            if self.lo == 1000:
                self.hi += 1
                self.lo = 0
                self.head = self.prefix + str(self.hi)
                self.digits = self.padded
            tid = self.head + <str>self.digits[self.lo]
            if self.skip and tid in self.skip:
                self.on_skip(tid)
                continue
            if len(values) == arity:  # TupleFactory.maker's tuple, in C
                tup = sw_steal(sw_make_tuple(tt, <PyObject*>tid, <PyObject*>source,
                                             <PyObject*>stream, <PyObject*>src, vt,
                                             <PyObject*>values))
            else:
                try:
                    tup = make(values, tid, src)  # a stream without a values type, or an error
                except self.error as exc:
                    self.on_outcome(tuple.__new__(_tuple_type, (tid, source, stream, src, values)),
                                    self.arity_outcome, exc)
                    continue
            if (self.lo & self.sample) != 1 or self.observe is None:  # 1, 17, 33, ... timed
                result = self.call(tup)
            else:
                started = self.clock()
                result = self.call(tup)
                self.observe(self.clock() - started)
            if result is not None:
                self.on_outcome(tup, *result)


cdef inline object _tid(tup):
    """``tup.id`` (a pystorm ``Tuple``'s first item, read without the property)."""
    return (<tuple>tup)[0] if type(tup) is _tuple_type else tup.id


cdef class Attempt:
    """``Kernel._compile``'s batch-mode attempt in C (``kernel.py`` is the truth: the same
    ``_current_tups``, acks, outcomes, dispatch and discards); ``Runner`` calls it without a
    Python-level call."""

    cdef object inst, process, failure, dispatch, cache, empty, error
    cdef object emit_outcome, raised_outcome, encode_outcome, failed_outcome
    cdef set done
    cdef list fails, emits, acks, rejected
    cdef bint track, anchors, auto_ack_ok, fast_ack

    def __init__(self, inst, process, set done, list fails, list emits, list acks, failure,
                 dispatch, list rejected, cache, empty, bint track, bint anchors,
                 bint auto_ack_ok, bint fast_ack, outcomes, error):
        """``outcomes``: ``(EMIT, RAISED, ENCODE, FAILED)``; ``error``: ``TupleError``."""
        self.inst, self.process, self.done, self.fails = inst, process, done, fails
        self.emits, self.acks, self.failure, self.dispatch = emits, acks, failure, dispatch
        self.rejected, self.cache, self.empty, self.error = rejected, cache, empty, error
        self.track, self.anchors = track, anchors
        self.auto_ack_ok, self.fast_ack = auto_ack_ok, fast_ack
        self.emit_outcome, self.raised_outcome, self.encode_outcome, self.failed_outcome = outcomes

    def __call__(self, tup):
        return self.attempt(tup)

    cdef object attempt(self, tup):
        cdef Py_ssize_t before
        if self.done:
            self.done.clear()
        if self.track:
            cur = [tup]
            self.inst._current_tups = cur
            if self.anchors:
                self.cache.tups = cur
                self.cache.ids = (_tid(tup),)
        before = len(self.fails)
        try:
            self.process(tup)
        except Exception as exc:  # the user's error: reported as pystorm does
            err = self.failure(exc, "process", tup)
            self.emits.clear()  # a failed attempt's emits are discarded
            self.rejected.clear()
            return (self.emit_outcome if isinstance(exc, self.error) else self.raised_outcome, err)
        if self.auto_ack_ok and self.inst.auto_ack:
            if self.fast_ack:
                tid = _tid(tup)
                if not self.done or tid not in self.done:
                    self.acks.append(tid)
            else:
                self.inst.ack(tup)
        if self.track:
            self.inst._current_tups = self.empty
        if self.emits:
            self.dispatch(self.emits)
        if self.rejected:
            bad = self.rejected[0]
            self.rejected.clear()
            return (self.encode_outcome, bad)
        if len(self.fails) > before and _tid(tup) in self.fails[before:]:
            return (self.failed_outcome, None)
        return None
