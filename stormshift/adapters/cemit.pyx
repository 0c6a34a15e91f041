# cython: language_level=3, auto_pickle=False, binding=False
"""A hosted bolt's emit in C: the stream's route, the wire check and the delivery in one call.

- ``KeyedRoute``: ``Router._compile_keyed``'s ``route_keyed`` (``routing.py`` is the truth);
- ``BoltEmit``: ``fastpath.bolt_emit``'s ``emit`` when the emits are delivered
  (``fastpath.py`` is the truth), which calls its ``KeyedRoute`` in C, and its ``deliver`` in
  C where that is a ``Delivery``;
- ``Delivery`` (declared in ``cemit.pxd``): the seam an engine's compiled ``deliver``
  implements, so that the emit reaches it without a Python-level call while this layer
  knows no engine (the Spark engine's is ``engines/spark/dataplane/cwire.pyx``'s
  ``Deliver``, which cimports this type: the arrow points down).

``routing.py`` and ``fastpath.py`` use this module only while it is a fresh build
(``native.py``); ``tests/test_cwire.py`` checks both paths equal.
"""

from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.object cimport PyObject, PyTypeObject
from libc.math cimport isfinite

cdef extern from *:
    ctypedef struct PyListObject:
        PyObject** ob_item
    ctypedef struct PyTupleObject:
        PyObject** ob_item
    PyTypeObject PyUnicode_Type, PyBool_Type, PyLong_Type, PyFloat_Type
    Py_ssize_t Py_SIZE(object o)
    PyTypeObject* Py_TYPE(object o)


cdef class Delivery:
    """``deliver(stream, values, targets)`` of an engine, callable in C: an emit with no
    targets is a leaf's, else ``targets`` (a route's) names where ``values`` go. A subclass
    implements ``deliver``; calling this base is an error."""

    def __call__(self, stream, values, targets):
        self.deliver(stream, values, targets)

    cdef int deliver(self, stream, values, targets) except -1:
        raise NotImplementedError(f"{type(self).__name__} does not implement deliver")


cdef class KeyedRoute:
    """``Router._compile_keyed``'s ``route_keyed`` in C (``routing.py`` is the truth: the same
    checks, seq, pickers and memo rule, so the same targets). The memo is keyed by the
    grouping values one level per position (a dict of dicts), equal to the pure memo's tuple
    keys without building a tuple per emit; a hit returns the one targets object."""

    cdef Py_ssize_t arity
    cdef object check, no_direct
    cdef list seq
    cdef tuple positions
    cdef list pickers
    cdef dict memo
    cdef dict same
    cdef Py_ssize_t size, max_size

    def __init__(self, Py_ssize_t arity, check, no_direct, list seq, tuple positions,
                 list pickers, Py_ssize_t max_size):
        self.arity, self.check, self.no_direct, self.seq = arity, check, no_direct, seq
        self.positions, self.pickers, self.max_size = positions, pickers, max_size
        self.memo, self.same, self.size = {}, {}, 0

    def __call__(self, values, direct_task_id=None):
        return self.route(values, direct_task_id)

    cdef object route(self, values, direct_task_id):
        cdef Py_ssize_t i, n = len(self.positions)
        cdef object node, k
        if len(values) != self.arity:
            self.check(values)
        if direct_task_id is not None:
            self.no_direct(direct_task_id)
        s = self.seq[0]
        self.seq[0] = s + 1
        node = self.memo
        try:
            for i in range(n):
                node = (<dict>node).get(values[<Py_ssize_t>self.positions[i]])
                if node is None:
                    break
        except TypeError:  # an unhashable value: the picker below says what is wrong
            node = None
        if node is not None:
            return node
        out = ()
        for pick in self.pickers:
            out += pick(values, s)
        if self.size < self.max_size:
            for i in range(n):
                if type(values[<Py_ssize_t>self.positions[i]]) is not str:
                    return out
            out = self.same.setdefault(out, out)
            node = self.memo
            for i in range(n - 1):
                k = values[<Py_ssize_t>self.positions[i]]
                nxt = (<dict>node).get(k)
                if nxt is None:
                    nxt = (<dict>node)[k] = {}
                node = nxt
            k = values[<Py_ssize_t>self.positions[n - 1]]
            if k not in <dict>node:
                (<dict>node)[k] = out
                self.size += 1
        return out


cdef inline bint _plain(values):
    """Every value a str, None, bool, 64-bit int or finite float: ``fastpath``'s wire check."""
    cdef Py_ssize_t i, n = Py_SIZE(values)
    cdef PyObject** items = (<PyListObject*>values).ob_item if type(values) is list \
        else (<PyTupleObject*>values).ob_item
    cdef PyObject* v
    cdef PyTypeObject* t
    cdef int overflow
    for i in range(n):
        v = items[i]
        t = Py_TYPE(<object>v)
        if t == &PyUnicode_Type or v == <PyObject*>None or t == &PyBool_Type:
            continue
        if t == &PyLong_Type:
            PyLong_AsLongLongAndOverflow(<object>v, &overflow)
            if overflow == 0:
                continue
            return False
        if t == &PyFloat_Type and isfinite(PyFloat_AS_DOUBLE(<object>v)):
            continue
        return False
    return True


cdef class BoltEmit:
    """``fastpath.bolt_emit``'s ``emit`` when the emits are delivered (``deliver`` given): the
    stream's route, the wire check, the route call and the delivery in one C call
    (``fastpath.py`` is the truth; a ``Delivery`` is called without a Python-level call)."""

    cdef dict routes
    cdef object undeclared
    cdef object task_ids
    cdef object component
    cdef object fields
    cdef object values_of
    cdef object to_wire
    cdef bint check_wire
    cdef object deliver_py
    cdef Delivery deliver_c

    def __init__(self, dict routes, undeclared, task_ids, component, fields, values_of, to_wire,
                 bint check_wire, deliver):
        self.routes, self.undeclared, self.task_ids = routes, undeclared, task_ids
        self.component, self.fields, self.values_of = component, fields, values_of
        self.to_wire, self.check_wire, self.deliver_py = to_wire, check_wire, deliver
        self.deliver_c = deliver if isinstance(deliver, Delivery) else None

    def emit(self, tup, stream=None, anchors=None, direct_task=None, need_task_ids=False):
        """The bolt's ``emit`` (the bound method: a vectorcall, no argument tuple)."""
        if stream is None:
            stream = "default"
        route = self.routes.get(stream)
        if route is None:
            raise self.undeclared(stream, tup)
        t = type(tup)
        if (t is list or t is tuple) and self.check_wire:
            values = tup if _plain(tup) else self.to_wire(tup, self.component, stream,
                                                          self.fields[stream])
        else:
            values = self.values_of(tup, stream)
        if type(route) is KeyedRoute:
            targets = (<KeyedRoute>route).route(values, direct_task)
        else:
            targets = route(values, direct_task)
        if self.deliver_c is not None:
            self.deliver_c.deliver(stream, values, targets)
        else:
            self.deliver_py(stream, values, targets)
        if need_task_ids:
            return self.task_ids(targets)
        return None
