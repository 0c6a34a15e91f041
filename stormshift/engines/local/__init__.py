"""The local engine: a topology run tuple at a time with Storm's semantics.

The reference ("legacy") side of every shadow run and correctness comparison.
"""

from stormshift.engines.local.engine import LocalEngine
from stormshift.engines.local.faults import CrashTask, FailTuples, FaultPlan
from stormshift.engines.local.scheduler import Clock, SimClock, WallClock

__all__ = ["Clock", "CrashTask", "FailTuples", "FaultPlan", "LocalEngine", "SimClock", "WallClock"]
