"""``stage_overhead.py`` with its measured calls marked for ``valgrind --tool=callgrind``.

Python functions are invisible to callgrind (every one is the interpreter's eval loop),
so this runs each timed ``run_partition`` call through ``sys.call_tracing`` and each bare
``process()`` pass through ``operator.call``: two C functions nothing else on this path
calls, whose inclusive instruction counts (``callgrind_annotate --inclusive=yes``) are
the stages' and the bare bolts' own. Same arguments as ``stage_overhead.py``::

    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=cg.out \\
        python3.11 bench/stage_callgrind.py --tuples 1200 --rounds 1
"""

from __future__ import annotations

import operator
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import stage_overhead  # after the bench folder is on the path


def main() -> int:
    run, per_tuple = stage_overhead._run, stage_overhead.adclicks._per_tuple_ns
    stage_overhead._run = lambda jobs, table: sys.call_tracing(run, (jobs, table))
    stage_overhead.adclicks._per_tuple_ns = (
        lambda call, chunks, rounds=3: operator.call(per_tuple, call, chunks, rounds))
    return stage_overhead.main()


if __name__ == "__main__":
    raise SystemExit(main())
