"""Wait on a child process's own progress, not on the wall clock: on a loaded 2-core
machine start-up alone can outlast a fixed sleep, so a signal "after 4 s" may land
before the run has begun. CPU time the child has used is the same whatever the load."""

from __future__ import annotations

import subprocess
import time

import psutil


def cpu_seconds(proc: subprocess.Popen) -> float:
    """CPU time (user + system) ``proc`` has used so far; 0 once it is gone."""
    try:
        times = psutil.Process(proc.pid).cpu_times()
    except psutil.NoSuchProcess:
        return 0.0
    return times.user + times.system


def used_cpu(proc: subprocess.Popen, seconds: float, timeout: float = 180.0) -> bool:
    """True once ``proc`` has used ``seconds`` of CPU (user + system); False if it ended
    first or ``timeout`` (wall) passed."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        if cpu_seconds(proc) >= seconds:
            return True
        time.sleep(0.1)
    return False
