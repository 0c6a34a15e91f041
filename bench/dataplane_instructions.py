"""Instructions per tuple inside a Spark task, split into process(), hosting and data plane.

Issue 21 item 4 asks for the per-tuple cost inside a Spark task beyond the user's
``process()`` and the hosting to be at most 1 µs, measured by instruction counts
(seconds move 2x between days here; callgrind counts do not). This runs
``bench/stage_callgrind.py`` (the three adclicks stages through ``run_partition``,
real Redis) under ``valgrind --tool=callgrind`` at two input sizes and takes the
slope, so per-batch costs (Redis round trips, Arrow set-up) drop out. From the
inclusive counts of functions only the measured path calls:

- stage: ``sys_call_tracing`` (every ``run_partition`` call);
- bare ``process()``: ``_operator_call`` (the bolts' own code, emit/ack no-ops);
- attempt: the kernel's per-tuple attempt (``process()`` with the real emit and
  ack: the hosting around it, plus the emit's delivery into rows);
- deliver: ``MemberOutput`` deliver (plan, msgpack pack, row append): data plane.

(Where the rest of the data plane goes: ``python -m cProfile`` cannot see inside the
compiled modules; ``callgrind_annotate --inclusive=yes`` on the kept files can.)

hosting = attempt - bare - deliver; data plane = stage - attempt + deliver
(input decode, tuple building, the spout read in the head stage, output rows).
The µs figures convert at the bare ``process()`` rate of a plain (no valgrind)
``stage_overhead.py`` run in the same invocation: instructions per µs of the
user's own code on this machine today.

    python bench/dataplane_instructions.py [--small 300] [--large 1200] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
# The measured functions, by the name callgrind_annotate prints (file:function).
MARKERS = {
    "stage": re.compile(r"sysmodule\.c:sys_call_tracing$"),
    "bare": re.compile(r"_operator\.c:_operator_call$"),
    "attempt": re.compile(r"(kernel_\d+Kernel_\d+_compile_attempt|ckernel_\d+Attempt_attempt)$"),
    # the closure, or cwire.Deliver's C method where the install built it
    "deliver": re.compile(r"(output_\d+MemberOutput_\d+_compile_\d*deliver|cwire_\d+Deliver_deliver)$"),
}
STAGES_PER_LINE = 3  # parse_bolt, then ads_ctr_bolt and client_spent_bolt each get its tuple


def real_python() -> str:
    """The interpreter binary itself: valgrind must not trace a pyenv shim script."""
    exe = Path(sys.executable).resolve()
    libdir = sysconfig.get_config_var("BINDIR") or str(exe.parent)
    candidate = Path(libdir) / f"python{sys.version_info.major}.{sys.version_info.minor}"
    return str(candidate if candidate.exists() else exe)


def callgrind(lines: int, out: Path, redis: str) -> Path:
    """One valgrind run of stage_callgrind.py at ``lines`` input lines; the callgrind file."""
    target = out / f"cg.{lines}.out"
    env = dict(os.environ, PYTHONHASHSEED="0")
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={target}", real_python(),
           str(BENCH / "stage_callgrind.py"), "--tuples", str(lines), "--rounds", "1",
           "--redis", redis]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not target.exists() or target.stat().st_size == 0:
        raise SystemExit(f"callgrind run at {lines} lines failed ({done.returncode}):\n"
                         f"{done.stderr[-2000:]}")
    return target


def inclusive_counts(path: Path) -> dict[str, int]:
    """Inclusive instructions of each marker function in one callgrind file."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(path)],
                          capture_output=True, text=True, check=True).stdout
    found: dict[str, int] = {}
    for line in text.splitlines():
        if "=>" in line:
            continue
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S+)", line)
        if not m:
            continue
        name, count = m.group(2), int(m.group(1).replace(",", ""))
        for key, pattern in MARKERS.items():
            if pattern.search(name):
                found[key] = max(found.get(key, 0), count)
    missing = sorted(set(MARKERS) - set(found))
    if missing:
        raise SystemExit(f"{path}: no callgrind entry for {missing}; is the hot path compiled "
                         "(python setup.py build_ext --inplace) and STORMSHIFT_PURE unset?")
    return found


def split(small: dict[str, int], large: dict[str, int], lines: int) -> dict[str, float]:
    """Per tuple-stage instructions of each part, from the slope between the two sizes."""
    per = {k: (large[k] - small[k]) / lines / STAGES_PER_LINE for k in MARKERS}
    return {
        "stage": per["stage"],
        "process": per["bare"],
        "hosting": per["attempt"] - per["bare"] - per["deliver"],
        "data_plane": per["stage"] - per["attempt"] + per["deliver"],
        "of which deliver (route, pack, rows)": per["deliver"],
    }


def bare_rate(redis: str, lines: int) -> float:
    """Instructions per µs of the bolts' own code: a plain stage_overhead run's bare
    process() ns per tuple, against callgrind's bare count (caller supplies the count)."""
    done = subprocess.run([sys.executable, str(BENCH / "stage_overhead.py"), "--tuples", str(lines),
                           "--rounds", "3", "--redis", redis, "--json"],
                          capture_output=True, text=True, check=True)
    stages = json.loads(done.stdout.strip().splitlines()[-1])["stages"]
    return sum(s["bare_ns"] for s in stages.values()) / 1000  # µs per line, all three bolts


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--small", type=int, default=300)
    p.add_argument("--large", type=int, default=1200)
    p.add_argument("--redis", default="redis://127.0.0.1:6379")
    p.add_argument("--keep", help="write the callgrind files here (default: a temp dir)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if os.environ.get("STORMSHIFT_PURE"):
        print("note: STORMSHIFT_PURE is set: measuring the modules from source", file=sys.stderr)
    out = Path(args.keep or tempfile.mkdtemp(prefix="stormshift-dataplane-"))
    out.mkdir(parents=True, exist_ok=True)
    # The plain run first: it also writes the bench data both valgrind runs then reuse.
    bare_us_per_line = bare_rate(args.redis, args.large)
    small = inclusive_counts(callgrind(args.small, out, args.redis))
    large = inclusive_counts(callgrind(args.large, out, args.redis))
    parts = split(small, large, args.large - args.small)
    per_line_bare = parts["process"] * STAGES_PER_LINE
    rate = per_line_bare / bare_us_per_line  # instructions per µs
    from stormshift import native

    if args.json:
        print(json.dumps({"hot_path": native.summary(), "instructions_per_us": rate,
                          "per_tuple_stage": parts}))
        return 0
    print(native.summary())
    print(f"adclicks stages, slope {args.small:,} -> {args.large:,} lines, per tuple-stage "
          f"({STAGES_PER_LINE} per line); µs at {rate:,.0f} instructions/µs (the bolts' own "
          "code, measured in this run)")
    for name, count in parts.items():
        print(f"{name:>38} {count:>9,.0f} instr {count / rate:>7.2f} µs")
    print(f"callgrind files: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
