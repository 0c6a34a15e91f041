# cython: language_level=3, auto_pickle=False
"""The tracked dicts' per-write bookkeeping in C (``state/tracked.py`` is the truth).

Every ``d[k] = v`` / ``d[k] += 1`` of a legacy bolt on a tracked dict runs the
subclass's ``mp_ass_subscript``. Written in Python (even compiled by Cython from
the same source) that slot goes through a method lookup and a call per write, ~3x
a plain dict's store; this ``cdef class`` puts the setter and the deleter in the
type's C slot, with the change sets reached through C fields. ``TrackedDict`` and
``TrackedCounter`` take it as their base when it is built and fresh
(``native.py``); ``tracked.py``'s pure ``_setter`` does the same with the Python
fallback (``tests/test_state_tracked.py`` runs both). Anything that is not the
common case (an inner dict's write, a value that is not a plain scalar, a delete)
calls back into ``tracked.py``: ``configure`` hands its functions over.
"""

from cpython.dict cimport PyDict_Contains, PyDict_DelItem, PyDict_SetItem

cdef object _SCALARS = frozenset()
cdef object _SETTLED = None


def configure(scalars, settled):
    """``tracked.py``'s scalar types and its ``_settled(outer, key, value)``."""
    global _SCALARS, _SETTLED
    _SCALARS = scalars
    _SETTLED = settled


cdef inline bint _plain_scalar(object value):
    t = type(value)
    return t is int or t is str or t is float or value is None or t is bool or t is bytes


cdef class TrackBase(dict):
    """The C layout shared by ``TrackedDict`` and ``TrackedCounter``: the fields
    ``tracked._Tracking._init`` sets, and the two writes that record a change."""

    cdef public object _ch, _up
    cdef public object _upd, _ins, _vol
    cdef public bint _lenient_del  # Counter: deleting a missing key is no error

    def __setitem__(self, key, value):
        cdef object updated = self._upd
        if updated is None:  # an inner dict: mark its outer key
            PyDict_SetItem(self, key, value)
            self._bubble(value)
            return
        if PyDict_Contains(self, key):
            PyDict_SetItem(self, key, value)
            PyDict_SetItem(<dict>updated, key, None)
        else:
            PyDict_SetItem(self, key, value)
            PyDict_SetItem(<dict>self._ins, key, None)
        if _plain_scalar(value) or type(value) in _SCALARS or _SETTLED(self, key, value):
            if self._vol:
                (<dict>self._vol).pop(key, None)
        else:
            PyDict_SetItem(<dict>self._vol, key, None)

    def __delitem__(self, key):
        if PyDict_Contains(self, key):
            PyDict_DelItem(self, key)
            self._gone(key)
        elif not self._lenient_del:
            raise KeyError(key)
