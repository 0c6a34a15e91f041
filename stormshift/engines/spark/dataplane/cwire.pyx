# cython: language_level=3, auto_pickle=False, binding=False
"""The Spark engine's row wire in C: msgpack cells straight into values, emits to bytes in rows.

The pure path (``msgpack.Unpacker`` value lists, ``tuple.__new__`` per values
namedtuple, ``msgpack.Packer.pack`` per emit) builds a list per tuple only to copy it,
and pays a Python-level call for each object. Here:

- ``unpack_chunk(cell, vtype, arity)``: one row's ``v`` (a msgpack array of value
  lists) decoded into a list whose items are ``vtype`` instances filled in place
  where a value list has ``arity`` items (lists otherwise, as msgpack gives them);
- ``pack(values)``: the bytes ``msgpack.Packer(use_bin_type=True).pack`` gives;
- ``Writer``: ``RowBuilder.writer``'s chunk write (``protocol/rows.py`` is the truth);
- ``Deliver``: ``MemberOutput.deliver`` (``task/output.py`` is the truth): plan, pack,
  ``Writer`` in C. It is a ``adapters/cemit.pyx`` ``Delivery``, so a hosted bolt's
  compiled emit calls it in C while the hosting layer knows no engine.

Anything outside the common types (ext types, subclasses of scalars, ints beyond
64 bits, bad UTF-8, deep nesting, a short buffer) is handed to msgpack itself,
so values, bytes and errors are msgpack's by construction.

Why here: the row format is the Spark engine's (``protocol/rows.py``), and these classes
call each other in C (``Deliver`` writes through ``Writer`` and packs with the encoder), so
they are one module; the kernel's loop (``adapters/ckernel.pyx``) and a bolt's emit
(``adapters/cemit.pyx``) need none of it at C level and live with the code they mirror.
``protocol/rows.py`` and ``task/output.py`` use this module only while it is a fresh build
(``native.py``); ``tests/test_cwire.py`` checks both paths equal.
"""

from cpython.exc cimport PyErr_Clear, PyErr_Occurred
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF, Py_XDECREF

from stormshift.adapters.cemit cimport Delivery

import msgpack

cdef extern from *:
    """
    #include <string.h>
    #include <stdint.h>

    typedef struct { const unsigned char *p; const unsigned char *end; } sw_reader;
    #define SW_MAX_DEPTH 400
    #define sw_steal(o) (o)  /* a new reference, handed to Cython as an object */

    static inline uint32_t sw_u16(const unsigned char *p) { return ((uint32_t)p[0] << 8) | p[1]; }
    static inline uint32_t sw_u32(const unsigned char *p) {
        return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
    }
    static inline uint64_t sw_u64(const unsigned char *p) {
        return ((uint64_t)sw_u32(p) << 32) | sw_u32(p + 4);
    }

    /* Reads a container header: 1 array, 2 map, 0 anything else (p untouched). */
    static int sw_header(sw_reader *r, Py_ssize_t *n) {
        const unsigned char *p = r->p;
        if (p >= r->end) return 0;
        unsigned char c = *p;
        if ((c & 0xf0) == 0x90) { *n = c & 0x0f; r->p = p + 1; return 1; }
        if ((c & 0xf0) == 0x80) { *n = c & 0x0f; r->p = p + 1; return 2; }
        if (c == 0xdc || c == 0xde) {
            if (r->end - p < 3) return 0;
            *n = sw_u16(p + 1); r->p = p + 3; return c == 0xdc ? 1 : 2;
        }
        if (c == 0xdd || c == 0xdf) {
            if (r->end - p < 5) return 0;
            *n = sw_u32(p + 1); r->p = p + 5; return c == 0xdd ? 1 : 2;
        }
        return 0;
    }

    /* Short ASCII strs recur (keys, ids, names): a direct-mapped cache of the decoded
       objects saves their decode and their free. Equal strs either way (immutable). */
    #define SW_STR_SLOTS 4096
    #define SW_STR_MAX 32
    static PyObject *sw_strs[SW_STR_SLOTS];

    static PyObject *sw_str(const unsigned char *p, Py_ssize_t n) {
        if (n == 0 || n > SW_STR_MAX) return PyUnicode_DecodeUTF8((const char *)p, n, NULL);
        uint32_t h = 2166136261u;
        for (Py_ssize_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
        PyObject **slot = &sw_strs[(h ^ (h >> 16)) & (SW_STR_SLOTS - 1)];
        PyObject *s = *slot;
        if (s != NULL && PyUnicode_GET_LENGTH(s) == n && memcmp(PyUnicode_DATA(s), p, n) == 0) {
            Py_INCREF(s);
            return s;
        }
        s = PyUnicode_DecodeUTF8((const char *)p, n, NULL);
        if (s != NULL && PyUnicode_IS_ASCII(s)) {  /* its data are its UTF-8 bytes */
            Py_INCREF(s);
            Py_XSETREF(*slot, s);
        }
        return s;
    }

    static PyObject *sw_obj(sw_reader *r, int depth);

    static PyObject *sw_items(sw_reader *r, PyObject *seq, PyObject **items, Py_ssize_t n,
                              int depth) {
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *item = sw_obj(r, depth + 1);
            if (item == NULL) { Py_DECREF(seq); return NULL; }
            items[i] = item;
        }
        return seq;
    }

    static PyObject *sw_container(sw_reader *r, int kind, Py_ssize_t n, int depth) {
        if (depth > SW_MAX_DEPTH || n > r->end - r->p) return NULL;  /* each item >= 1 byte */
        if (kind == 1) {
            PyObject *list = PyList_New(n);
            if (list == NULL) return NULL;
            return sw_items(r, list, ((PyListObject *)list)->ob_item, n, depth);
        }
        PyObject *dict = PyDict_New();
        if (dict == NULL) return NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *key = sw_obj(r, depth + 1);
            if (key == NULL) { Py_DECREF(dict); return NULL; }
            if (PyUnicode_CheckExact(key)) PyUnicode_InternInPlace(&key);  /* as msgpack */
            PyObject *value = sw_obj(r, depth + 1);
            if (value == NULL || PyDict_SetItem(dict, key, value) < 0) {
                Py_DECREF(key); Py_XDECREF(value); Py_DECREF(dict); return NULL;
            }
            Py_DECREF(key); Py_DECREF(value);
        }
        return dict;
    }

    /* One msgpack object, or NULL: an error or a form left to msgpack (ext, 0xc1, short). */
    static PyObject *sw_obj(sw_reader *r, int depth) {
        const unsigned char *p = r->p;
        Py_ssize_t left = r->end - p, n;
        if (left < 1) return NULL;
        unsigned char c = *p;
        if (c < 0x80) { r->p = p + 1; return PyLong_FromLong(c); }
        if (c >= 0xe0) { r->p = p + 1; return PyLong_FromLong((signed char)c); }
        if ((c & 0xe0) == 0xa0) { n = c & 0x1f; p += 1; goto str; }
        int kind = sw_header(r, &n);
        if (kind) return sw_container(r, kind, n, depth);
        switch (c) {
        case 0xc0: r->p = p + 1; Py_RETURN_NONE;
        case 0xc2: r->p = p + 1; Py_RETURN_FALSE;
        case 0xc3: r->p = p + 1; Py_RETURN_TRUE;
        case 0xcc: if (left < 2) return NULL; r->p = p + 2; return PyLong_FromLong(p[1]);
        case 0xcd: if (left < 3) return NULL; r->p = p + 3; return PyLong_FromLong(sw_u16(p + 1));
        case 0xce: if (left < 5) return NULL; r->p = p + 5;
            return PyLong_FromUnsignedLong(sw_u32(p + 1));
        case 0xcf: if (left < 9) return NULL; r->p = p + 9;
            return PyLong_FromUnsignedLongLong(sw_u64(p + 1));
        case 0xd0: if (left < 2) return NULL; r->p = p + 2; return PyLong_FromLong((int8_t)p[1]);
        case 0xd1: if (left < 3) return NULL; r->p = p + 3;
            return PyLong_FromLong((int16_t)sw_u16(p + 1));
        case 0xd2: if (left < 5) return NULL; r->p = p + 5;
            return PyLong_FromLong((int32_t)sw_u32(p + 1));
        case 0xd3: if (left < 9) return NULL; r->p = p + 9;
            return PyLong_FromLongLong((int64_t)sw_u64(p + 1));
        case 0xca: {
            if (left < 5) return NULL;
            uint32_t u = sw_u32(p + 1); float f; memcpy(&f, &u, 4);
            r->p = p + 5; return PyFloat_FromDouble((double)f);
        }
        case 0xcb: {
            if (left < 9) return NULL;
            uint64_t u = sw_u64(p + 1); double d; memcpy(&d, &u, 8);
            r->p = p + 9; return PyFloat_FromDouble(d);
        }
        case 0xd9: if (left < 2) return NULL; n = p[1]; p += 2; goto str;
        case 0xda: if (left < 3) return NULL; n = sw_u16(p + 1); p += 3; goto str;
        case 0xdb: if (left < 5) return NULL; n = sw_u32(p + 1); p += 5; goto str;
        case 0xc4: if (left < 2) return NULL; n = p[1]; p += 2; goto bin;
        case 0xc5: if (left < 3) return NULL; n = sw_u16(p + 1); p += 3; goto bin;
        case 0xc6: if (left < 5) return NULL; n = sw_u32(p + 1); p += 5; goto bin;
        default: return NULL;  /* ext types, 0xc1: msgpack's */
        }
    str:
        if (r->end - p < n) return NULL;
        r->p = p + n;
        return sw_str(p, n);
    bin:
        if (r->end - p < n) return NULL;
        r->p = p + n;
        return PyBytes_FromStringAndSize((const char *)p, n);
    }

    /* One value list: a vtype instance filled in place when it has arity items. */
    static PyObject *sw_values(sw_reader *r, PyTypeObject *vtype, Py_ssize_t arity) {
        const unsigned char *start = r->p;
        Py_ssize_t n;
        if (vtype != NULL && sw_header(r, &n) == 1) {
            if (n == arity) {
                if (n > r->end - r->p) return NULL;
                PyObject *t = vtype->tp_alloc(vtype, n);
                if (t == NULL) return NULL;
                return sw_items(r, t, ((PyTupleObject *)t)->ob_item, n, 1);
            }
            r->p = start;
        }
        return sw_obj(r, 0);
    }

    /* A row's cell: the list of its value lists; NULL when msgpack must decide. */
    static PyObject *sw_chunk(const unsigned char *p, Py_ssize_t len, PyTypeObject *vtype,
                              Py_ssize_t arity) {
        sw_reader r = {p, p + len};
        Py_ssize_t n;
        if (sw_header(&r, &n) != 1 || n > r.end - r.p) return NULL;
        PyObject *list = PyList_New(n);
        if (list == NULL) return NULL;
        PyObject **items = ((PyListObject *)list)->ob_item;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *v = sw_values(&r, vtype, arity);
            if (v == NULL) { Py_DECREF(list); return NULL; }
            items[i] = v;
        }
        if (r.p != r.end) { Py_DECREF(list); return NULL; }  /* trailing bytes: msgpack's error */
        return list;
    }

    /* -- encode: msgpack's bytes (use_bin_type=True) for the common types ---------- */
    typedef struct { char *buf; Py_ssize_t len; Py_ssize_t cap; } sw_out;

    static int sw_room(sw_out *o, Py_ssize_t n) {
        if (o->len + n <= o->cap) return 0;
        Py_ssize_t cap = o->cap ? o->cap : 256;
        while (cap < o->len + n) cap *= 2;
        char *buf = (char *)PyMem_Realloc(o->buf, cap);
        if (buf == NULL) { PyErr_NoMemory(); return -1; }
        o->buf = buf; o->cap = cap;
        return 0;
    }

    static inline void sw_b1(sw_out *o, unsigned char c) { o->buf[o->len++] = (char)c; }
    static inline void sw_be16(sw_out *o, uint32_t v) {
        o->buf[o->len++] = (char)(v >> 8); o->buf[o->len++] = (char)v;
    }
    static inline void sw_be32(sw_out *o, uint32_t v) {
        o->buf[o->len++] = (char)(v >> 24); o->buf[o->len++] = (char)(v >> 16);
        o->buf[o->len++] = (char)(v >> 8); o->buf[o->len++] = (char)v;
    }
    static inline void sw_be64(sw_out *o, uint64_t v) {
        sw_be32(o, (uint32_t)(v >> 32)); sw_be32(o, (uint32_t)v);
    }

    static int sw_head(sw_out *o, Py_ssize_t n, unsigned char fix, unsigned char b16) {
        if (sw_room(o, 5) < 0) return -1;
        if (n < 16) sw_b1(o, fix | (unsigned char)n);
        else if (n < 65536) { sw_b1(o, b16); sw_be16(o, (uint32_t)n); }
        else if (n <= 0xffffffffLL) { sw_b1(o, b16 + 1); sw_be32(o, (uint32_t)n); }
        else return 1;
        return 0;
    }

    static int sw_raw(sw_out *o, const char *data, Py_ssize_t n, int is_str) {
        if (n > 0xffffffffLL || sw_room(o, n + 5) < 0) return n > 0xffffffffLL ? 1 : -1;
        if (is_str && n < 32) sw_b1(o, 0xa0 | (unsigned char)n);
        else if (n < 256) { sw_b1(o, is_str ? 0xd9 : 0xc4); sw_b1(o, (unsigned char)n); }
        else if (n < 65536) { sw_b1(o, is_str ? 0xda : 0xc5); sw_be16(o, (uint32_t)n); }
        else { sw_b1(o, is_str ? 0xdb : 0xc6); sw_be32(o, (uint32_t)n); }
        memcpy(o->buf + o->len, data, n);
        o->len += n;
        return 0;
    }

    /* 0 packed, 1 left to msgpack (type or range it decides), -1 error (memory). */
    static int sw_pack(sw_out *o, PyObject *v, int depth) {
        PyTypeObject *t = Py_TYPE(v);
        if (t == &PyUnicode_Type) {
            Py_ssize_t n;
            const char *s = PyUnicode_AsUTF8AndSize(v, &n);
            if (s == NULL) { PyErr_Clear(); return 1; }  /* surrogates: msgpack's error */
            return sw_raw(o, s, n, 1);
        }
        if (t == &PyLong_Type) {
            int overflow;
            long long d = PyLong_AsLongLongAndOverflow(v, &overflow);
            if (overflow || (d == -1 && PyErr_Occurred())) {
                PyErr_Clear();
                if (overflow <= 0) return 1;
                unsigned long long u = PyLong_AsUnsignedLongLong(v);
                if (u == (unsigned long long)-1 && PyErr_Occurred()) { PyErr_Clear(); return 1; }
                if (sw_room(o, 9) < 0) return -1;
                sw_b1(o, 0xcf); sw_be64(o, u);
                return 0;
            }
            if (sw_room(o, 9) < 0) return -1;
            if (d >= 0) {
                if (d < 128) sw_b1(o, (unsigned char)d);
                else if (d < 256) { sw_b1(o, 0xcc); sw_b1(o, (unsigned char)d); }
                else if (d < 65536) { sw_b1(o, 0xcd); sw_be16(o, (uint32_t)d); }
                else if (d <= 0xffffffffLL) { sw_b1(o, 0xce); sw_be32(o, (uint32_t)d); }
                else { sw_b1(o, 0xcf); sw_be64(o, (uint64_t)d); }
            } else if (d >= -32) sw_b1(o, (unsigned char)(signed char)d);
            else if (d >= -128) { sw_b1(o, 0xd0); sw_b1(o, (unsigned char)(signed char)d); }
            else if (d >= -32768) { sw_b1(o, 0xd1); sw_be16(o, (uint32_t)(uint16_t)(int16_t)d); }
            else if (d >= -2147483648LL) { sw_b1(o, 0xd2); sw_be32(o, (uint32_t)(int32_t)d); }
            else { sw_b1(o, 0xd3); sw_be64(o, (uint64_t)d); }
            return 0;
        }
        if (v == Py_None || v == Py_True || v == Py_False) {
            if (sw_room(o, 1) < 0) return -1;
            sw_b1(o, v == Py_None ? 0xc0 : v == Py_True ? 0xc3 : 0xc2);
            return 0;
        }
        if (t == &PyFloat_Type) {
            double d = PyFloat_AS_DOUBLE(v);
            uint64_t u; memcpy(&u, &d, 8);
            if (sw_room(o, 9) < 0) return -1;
            sw_b1(o, 0xcb); sw_be64(o, u);
            return 0;
        }
        if (depth > SW_MAX_DEPTH) return 1;  /* msgpack's nesting limit and error */
        if (PyList_Check(v) || PyTuple_Check(v)) {  /* as msgpack: subclasses too */
            Py_ssize_t n = Py_SIZE(v);
            PyObject **items = PyList_Check(v) ? ((PyListObject *)v)->ob_item
                                               : ((PyTupleObject *)v)->ob_item;
            int rc = sw_head(o, n, 0x90, 0xdc);
            for (Py_ssize_t i = 0; rc == 0 && i < n; i++) rc = sw_pack(o, items[i], depth + 1);
            return rc;
        }
        if (t == &PyDict_Type) {
            Py_ssize_t pos = 0;
            PyObject *key, *value;
            int rc = sw_head(o, PyDict_GET_SIZE(v), 0x80, 0xde);
            while (rc == 0 && PyDict_Next(v, &pos, &key, &value)) {
                rc = sw_pack(o, key, depth + 1);
                if (rc == 0) rc = sw_pack(o, value, depth + 1);
            }
            return rc;
        }
        if (t == &PyBytes_Type) return sw_raw(o, PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v), 0);
        return 1;
    }

    static sw_out sw_buffer = {NULL, 0, 0};

    /* The packed bytes, NULL with an error, or NULL without one: msgpack must pack it. */
    static PyObject *sw_packb(PyObject *values) {
        sw_buffer.len = 0;
        int rc = sw_pack(&sw_buffer, values, 0);
        if (rc != 0) return NULL;
        return PyBytes_FromStringAndSize(sw_buffer.buf, sw_buffer.len);
    }
    """
    PyObject* sw_chunk(const unsigned char* p, Py_ssize_t n, PyTypeObject* vtype, Py_ssize_t arity)
    PyObject* sw_packb(PyObject* values)
    int PyObject_GetBuffer(object obj, Py_buffer* view, int flags) except -1
    void PyBuffer_Release(Py_buffer* view)
    int PyBUF_SIMPLE
    object sw_steal(PyObject* o)


cdef object _unpackb = msgpack.unpackb
cdef object _packer = msgpack.Packer(use_bin_type=True)


def unpack_chunk(cell, vtype, Py_ssize_t arity):
    """One row's ``v`` (a bytes-like msgpack array of value lists): a list of ``vtype``
    instances where a value list has ``arity`` items, of lists where not (``vtype`` None:
    lists); exactly what msgpack (``raw=False``, ``strict_map_key=False``) decodes."""
    cdef Py_buffer view
    cdef PyObject* out
    PyObject_GetBuffer(cell, &view, PyBUF_SIMPLE)
    try:
        out = sw_chunk(<const unsigned char*>view.buf, view.len,
                       <PyTypeObject*>vtype if vtype is not None else NULL, arity)
    finally:
        PyBuffer_Release(&view)
    if out != NULL:
        return sw_steal(out)
    if PyErr_Occurred() != NULL:
        PyErr_Clear()
    return _unpackb(cell, raw=False, strict_map_key=False)  # make_tuple takes its lists (adapters/ckernel.pyx)


def pack(values):
    """``msgpack.Packer(use_bin_type=True).pack(values)``: the same bytes and errors."""
    cdef PyObject* out = sw_packb(<PyObject*>values)
    if out != NULL:
        return sw_steal(out)
    if PyErr_Occurred() != NULL:
        raise MemoryError()
    return _packer.pack(values)


cdef class Writer:
    """``RowBuilder.writer(src)``'s ``write(sid, v, dests)`` in C: the emit's seq from the
    shared cell, then ``v`` joins each destination's open chunk or opens one (``rows.py``
    is the truth: the same lists, cells and ``close`` calls, so marks and rewinds hold)."""

    cdef list cell
    cdef dict opened
    cdef object close
    cdef object src
    cdef Py_ssize_t max_len
    cdef Py_ssize_t max_bytes

    def __init__(self, list cell, dict opened, close, src, Py_ssize_t max_len,
                 Py_ssize_t max_bytes):
        self.cell, self.opened, self.close, self.src = cell, opened, close, src
        self.max_len, self.max_bytes = max_len, max_bytes

    def write(self, sid, bytes v, tuple dests):
        self._write(sid, v, dests)

    cdef int _write(self, sid, bytes v, tuple dests) except -1:
        cdef list cell = self.cell
        cdef list c
        cdef object got, c_src, c_sid
        s = cell[0]
        cell[0] = s + 1
        if not dests:
            return 0
        cdef Py_ssize_t n = len(v)
        src = self.src
        for dest in dests:
            got = self.opened.get(dest)
            if got is not None:
                c = <list>got
                c_src, c_sid = c[0], c[1]
                if ((c_src is src or c_src == src) and (c_sid is sid or c_sid == sid)
                        and <Py_ssize_t>c[3] < self.max_bytes and len(c) < self.max_len):
                    c[2] = s
                    c[3] = <Py_ssize_t>c[3] + n
                    c.append(v)
                    continue
                self.close(dest, c)
            self.opened[dest] = [src, sid, s, n, v]
        return 0


cdef enum:
    PLAN_SLOTS = 64  # the identity cache of (stream, targets) -> plan: a power of two


cdef class Deliver(Delivery):
    """``MemberOutput``'s per-emit ``deliver(stream, values, targets)`` in C (``task/output.py``
    is the truth: the same plans, rows, queues, leaves, counts and ``bad`` errors). The plan
    is found by the identity of ``targets`` first (routes hand out the same tuple objects for
    equal targets), then by ``plans[stream][targets]``; the values are packed and written
    into their chunks without a Python-level call."""

    cdef dict plans
    cdef object plan_for
    cdef list misrouted
    cdef list bad
    cdef list leaves
    cdef object leaf_streams
    cdef object kept
    cdef dict queues
    cdef object task_id
    cdef Writer writer
    cdef object write
    cdef public Py_ssize_t leaf
    cdef public Py_ssize_t stray
    cdef PyObject* slot_stream[PLAN_SLOTS]
    cdef PyObject* slot_targets[PLAN_SLOTS]
    cdef PyObject* slot_plan[PLAN_SLOTS]

    def __init__(self, dict plans, plan_for, list misrouted, list bad, leaf_streams, kept,
                 list leaves, dict queues, task_id, write):
        """``write``: ``RowBuilder.writer``'s (a ``Writer``'s, called in C, or a closure)."""
        self.plans, self.plan_for, self.misrouted, self.bad = plans, plan_for, misrouted, bad
        self.leaf_streams, self.kept, self.leaves = leaf_streams, kept, leaves
        self.queues, self.task_id, self.write = queues, task_id, write
        owner = getattr(write, "__self__", None)
        self.writer = owner if type(owner) is Writer else None

    def __dealloc__(self):
        cdef int i
        for i in range(PLAN_SLOTS):
            Py_XDECREF(self.slot_stream[i])
            Py_XDECREF(self.slot_targets[i])
            Py_XDECREF(self.slot_plan[i])

    def __call__(self, stream, values, targets):
        self.deliver(stream, values, targets)

    cdef tuple plan(self, stream, values, targets):
        cdef size_t h = ((<size_t><PyObject*>targets >> 4) ^ (<size_t><PyObject*>stream >> 5)) \
            & (PLAN_SLOTS - 1)
        if self.slot_targets[h] == <PyObject*>targets and self.slot_stream[h] == <PyObject*>stream:
            return <tuple>self.slot_plan[h]
        by = self.plans.get(stream)
        got = by.get(targets) if by is not None else None
        if got is None:
            got = self.plan_for(stream, targets, values)
            if self.misrouted:  # a misrouting plan is never kept (output.py)
                return <tuple?>got
            self.plans[stream][targets] = got
        Py_XDECREF(self.slot_stream[h])
        Py_XDECREF(self.slot_targets[h])
        Py_XDECREF(self.slot_plan[h])
        Py_INCREF(stream)
        Py_INCREF(targets)
        Py_INCREF(got)
        self.slot_stream[h] = <PyObject*>stream
        self.slot_targets[h] = <PyObject*>targets
        self.slot_plan[h] = <PyObject*>got
        return <tuple?>got

    cdef int deliver(self, stream, values, targets) except -1:
        cdef PyObject* out
        cdef list q
        if not targets:  # a leaf emit: the sink's (a drop sink only counts it)
            if stream in self.leaf_streams:
                self.leaf += 1
                if stream in self.kept:
                    self.leaves.append((stream, list(values)))
            else:
                self.stray += 1
            return 0
        cdef tuple plan = self.plan(stream, values, targets)
        out = sw_packb(<PyObject*>values)
        if out != NULL:
            v = sw_steal(out)
        elif PyErr_Occurred() != NULL:
            raise MemoryError()
        else:
            try:
                v = _packer.pack(values)
            except (TypeError, ValueError, OverflowError) as exc:
                self.bad.append(exc)
                return 0
        dests, fused, code = plan
        if self.writer is not None:
            self.writer._write(code, <bytes?>v, <tuple?>dests)
        else:
            self.write(code, v, dests)
        for consumer in fused:  # kept past the emit: a copy (the emit passes the user's list)
            q = self.queues[consumer]
            if q:
                last = q[-1]
                if last[0] == self.task_id and last[1] == code:
                    last[2].append(list(values))
                    continue
            q.append((self.task_id, code, [list(values)]))
        return 0
