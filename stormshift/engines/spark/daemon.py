"""Compatibility shim: the worker daemon lives in ``runtime/daemon.py``.

Kept because cluster users pass ``--conf spark.python.daemon.module=stormshift.engines.spark.daemon``
(the README said so before the daemon moved): Spark runs this module as ``__main__``.
"""

from stormshift.engines.spark.runtime.daemon import main

if __name__ == "__main__":
    main()
