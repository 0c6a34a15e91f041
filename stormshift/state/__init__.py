"""Exactly-once state in Redis (Trident-style txids, zombie fencing); knows nothing of Spark.

Runs in: every process of a run (driver, planners, Spark tasks, the local engine).
Bolts use ``opaque_map`` / ``transactional_map`` / ``plain_map``; engines use
``CommitLog``, ``acquire_epoch``, ``TaskScope``, ``SnapshotStore`` and
``DeadLetters`` (see the modules of the same names). A Spark task attempt
writes through ONE ``TaskTxn`` (``task_txn.py``: epoch, restore, map writes,
snapshot, dead letters, sink marker, counters; one fenced commit, one
idempotence rule). Every key name is built in ``keys.py``, every script is in
``lua.py`` / ``lua_ns.py``; code outside this package reads no Redis structure's layout itself
(``batchstats.py``, ``runrecords.py``, ``sinkstream.py``, ``watermarks.py`` and ``wal.py`` read
them for the engine).
"""

from stormshift.state.maps import MapHandle, opaque_map, plain_map, transactional_map

__all__ = ["MapHandle", "opaque_map", "plain_map", "transactional_map"]
