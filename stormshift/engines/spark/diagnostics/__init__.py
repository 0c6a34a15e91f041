"""engines/spark/diagnostics: observing a run, never changing what it computes.

Runs in every process of a run that calls it (driver, planners, Python workers,
spout and task hosts), switched on by environment variables the processes inherit:

- ``faults.py``: named fault points (``STORMSHIFT_FAULTS``), the exactly-once
  suite's lever to kill or stall a process at a chosen step;
- ``profiling.py``: opt-in per-task profiles (``STORMSHIFT_PROFILE``) of the
  source's ``read`` and every stage task.

Crosses the boundary: only the environment in, and marker / profile files out
(``STORMSHIFT_FAULT_DIR``, ``STORMSHIFT_PROFILE``); nothing of a batch.
"""
