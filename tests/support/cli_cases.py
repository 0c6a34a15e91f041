"""Running a ``stormshift`` command line in-process as a user would, with no JVM allowed.

Shared by the bad-input catalogue (``test_bad_input.py``) and the Redis-mistake
matrix (``test_infra_errors.py``): both assert that a mistake is found before any
JVM starts, so any start of ``java`` / ``spark-submit`` fails the case.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tier_guard import check_command

#: the environment a case starts without (each case sets what it needs)
ENV_CLEARED = ("STORMSHIFT_REDIS", "STORMSHIFT_REDIS_URL", "REDIS_URL", "STORMSHIFT_STATE_DIR",
               "STORMSHIFT_CHECKPOINT", "STORMSHIFT_MASTER", "STORMSHIFT_NAME")


@contextmanager
def no_jvm() -> Iterator[None]:
    """Any start of java / spark-submit / a Spark ``stormshift run`` fails the case."""
    real = subprocess.Popen.__init__

    def init(self: Any, args: Any, *a: Any, **kw: Any) -> None:
        name = str(args[0] if isinstance(args, (list, tuple)) else args)
        if "redis-server" not in name:  # the tier guard judges Redis starts
            check_command(args)
        real(self, args, *a, **kw)

    subprocess.Popen.__init__ = init  # type: ignore[method-assign]
    try:
        yield
    finally:
        subprocess.Popen.__init__ = real  # type: ignore[method-assign]
