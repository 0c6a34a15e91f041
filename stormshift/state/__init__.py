"""Exactly-once state in Redis (Trident-style txids, zombie fencing); knows nothing of Spark.

Bolts use ``opaque_map`` / ``transactional_map`` / ``plain_map``; engines use
``CommitLog``, ``acquire_epoch``, ``TaskScope``, ``SnapshotStore`` and
``DeadLetters`` (see the modules of the same names).
"""

from stormshift.state.maps import MapHandle, opaque_map, plain_map, transactional_map

__all__ = ["MapHandle", "opaque_map", "plain_map", "transactional_map"]
