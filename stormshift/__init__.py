"""stormshift: run streamparse topologies unchanged on PySpark micro-batches, exactly once.

The layers follow ARCHITECTURE.md: ``topology`` (the frozen graph), ``adapters``
(hosting user components in-process, routing), ``engines.local`` (Storm
semantics, tuple at a time), ``engines.spark`` (micro-batches), ``state``
(Redis, exactly-once), ``windows`` and ``shadow``. ``deadletters``
(``DeadLetterDesk``) is the one public API for dead letters and their redrive.
"""

from stormshift import native

native.install()  # before any hot-path module is imported: compiled or its source (native.py)

from stormshift.topology.graph import TopologyGraph
from stormshift.topology.loader import load_topology

__all__ = ["TopologyGraph", "__version__", "load_topology"]
__version__ = "0.1.0"
