"""A hosted component's state, engine-neutral: which attributes, snapshot, build, delta, catch-up.

Runs wherever a user's bolt instance lives: Spark tasks (``engines/spark/task``), the
local engine, the driver (upgrade, rescale, final state) and ``check``. No Spark, no
Redis: the engines decide where the bytes go; this package decides what they are.

The lifecycle follows bytewax's stateful logic (``build(resume_state)``, then
``snapshot()`` at each epoch's end), with a delta in between. For one task, in order:

1. ``build(instance, point)``: a freshly initialized instance takes the state of
   ``point`` (a ``RestorePoint``: a base and its deltas; None for a first run);
2. the engine runs a batch of tuples through it;
3. ``snapshot(instance, txid)``: the payload of version ``txid``, a delta on the
   version it was built from or last wrote, now and then a new base (``deltas.py``);
4. ``landed(instance, txid, head)`` once the engine stored it (never after a failed
   store: that instance is dropped);
5. a live instance that missed versions takes only their deltas: ``catch_up``.

Which attributes are state: ``attributes.py`` (``state_of``, the one definition
every engine, ``check`` and ``shadow`` use). ``state_at(point)`` is the state a point
folds to, for readers that build no instance. Formats: ``deltas.py`` (versions and
how they fold), ``state/keyed.py`` (attributes stored by entries: bytewax's lifecycle
per entry), ``state/tracked.py`` (dicts that record their changes). What is pickled by
reference in stored versions (``KeyedParts``, the user's classes) keeps its module path.
"""

from stormshift.state.component.attributes import (
    FRAMEWORK_ATTRS,
    FRAMEWORK_PROGRESS,
    Unpicklable,
    is_user_attribute,
    may_be_state,
    names_in_code,
    state_of,
    unpicklable,
    user_state,
)
from stormshift.state.component.build import RestorePoint, build, catch_up, state_at
from stormshift.state.component.snapshotter import Snapshotter, held, landed, snapshot

__all__ = ["FRAMEWORK_ATTRS", "FRAMEWORK_PROGRESS", "RestorePoint", "Snapshotter", "Unpicklable",
           "build", "catch_up", "held", "is_user_attribute", "landed", "may_be_state", "names_in_code",
           "snapshot", "state_at", "state_of", "unpicklable", "user_state"]
