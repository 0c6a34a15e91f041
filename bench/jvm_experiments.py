"""A/B variants of ``spark_adclicks.py``'s stormshift phase against one baseline, in one run.

Issue 21's measuring half: the hand-written job is run once, then the stormshift phase
once per named variant (each in a fresh process with its own JVM, one after the other),
and every variant's throughput is quoted as a ratio to that baseline. A variant is a set
of environment variables ``spark_adclicks.py`` reads:

- ``BENCH_SPARK_CONF``: Spark settings (JSON), ``spark.sql.*`` also over the engine's own;
- ``BENCH_CHUNK_TUPLES``: tuples per Arrow row (``rows.CHUNK_TUPLES``, set in every
  process by ``bench/hooks/sitecustomize.py``);
- ``BENCH_FUSE=1``: ads_ctr_bolt and client_spent_bolt shuffle-grouped, so fused into
  parse_bolt's stage: no Spark shuffle at all (a bound; not adclicks' semantics);
- ``measured:DIR``: the default, with a Java Flight Recording of the driver JVM
  (``DIR/driver.jfr``, ``jfr_report.py``) and the Python tasks' times
  (``STORMSHIFT_PROFILE=DIR``, time mode, ``profile_report.py``).

Usage::

    flock /tmp/stormshift-heavy.lock python bench/jvm_experiments.py \\
        --variants default,chunk128,noshufflecompress --events 2000000 --batch 500000

Prints, per variant: events/s (overall, after the first batch, last half), the steady
and last-half ratios to the baseline, CPU µs per event (Python workers, driver JVM, its
JIT), the JVM's CPU per thread kind, and Spark's per-trigger medians; ``--json FILE``
keeps them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spark_adclicks as sa

HOOKS = Path(__file__).resolve().parent / "hooks"


def _conf(**conf: str) -> dict[str, str]:
    return {"BENCH_SPARK_CONF": json.dumps(conf)}


VARIANTS: dict[str, dict[str, str]] = {
    "default": {},
    "chunk16": {"BENCH_CHUNK_TUPLES": "16"},
    "chunk64": {"BENCH_CHUNK_TUPLES": "64"},
    "chunk128": {"BENCH_CHUNK_TUPLES": "128"},
    "chunk256": {"BENCH_CHUNK_TUPLES": "256"},
    "arrow1k": _conf(**{"spark.sql.execution.arrow.maxRecordsPerBatch": "1000"}),
    "arrow10k": _conf(**{"spark.sql.execution.arrow.maxRecordsPerBatch": "10000"}),
    "arrow1m": _conf(**{"spark.sql.execution.arrow.maxRecordsPerBatch": "1000000"}),
    "noaqe": _conf(**{"spark.sql.adaptive.enabled": "false"}),
    "nobypass": _conf(**{"spark.shuffle.sort.bypassMergeThreshold": "1"}),
    "noshufflecompress": _conf(**{"spark.shuffle.compress": "false"}),
    "zstd": _conf(**{"spark.io.compression.codec": "zstd"}),
    "snappy": _conf(**{"spark.io.compression.codec": "snappy"}),
    "kryo": _conf(**{"spark.serializer": "org.apache.spark.serializer.KryoSerializer"}),
    "noreuse": _conf(**{"spark.python.worker.reuse": "false"}),
    "pysparkdaemon": {"BENCH_SPARK_DAEMON": "pyspark.daemon"},
    "fused": {"BENCH_FUSE": "1"},
    # the engine's local-master default since jvmshare (session.driver_jit_conf) is C1
    # only; "c2" is the JVM's own default (every tier), the engine's before
    "c1": _conf(**{"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}),
    "c2": _conf(**{"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=4"}),
    "c2only": _conf(**{"spark.driver.extraJavaOptions": "-XX:-TieredCompilation"}),
    "jit1thread": _conf(**{"spark.driver.extraJavaOptions": "-XX:CICompilerCount=2"}),
    "noshufflecompress_chunk128": {**_conf(**{"spark.shuffle.compress": "false"}),
                                   "BENCH_CHUNK_TUPLES": "128"},
}


def variant_env(name: str) -> dict[str, str]:
    if name.startswith("conf:"):  # conf:KEY=VALUE[,KEY=VALUE]
        return _conf(**dict(kv.split("=", 1) for kv in name[5:].split(",")))
    if name.startswith("measured:"):  # measured:DIR, the default variant recorded: the JVM
        where = name[9:]                # (DIR/driver.jfr) and the Python tasks (time mode)
        os.makedirs(where, exist_ok=True)
        return {"BENCH_JFR": os.path.join(where, "driver.jfr"), "STORMSHIFT_PROFILE": where,
                "STORMSHIFT_PROFILE_MODE": "time"}
    env = dict(VARIANTS[name])
    if "BENCH_CHUNK_TUPLES" in env:
        env["PYTHONPATH"] = f"{sa.REPO}{os.pathsep}{HOOKS}"
    return env


def line(name: str, res: dict[str, Any], base: dict[str, Any]) -> str:
    if "error" in res:
        return f"{name:>28}: NOT MEASURED — {res['error']}"
    per = 1e6 / res["events"]
    cpu = res["cpu_s"]
    steady = res["steady_events_per_s"] / max(base.get("steady_events_per_s", 0), 1e-9)
    late = res.get("late_events_per_s", 0) / max(base.get("late_events_per_s", 0), 1e-9)
    threads = ", ".join(f"{n or '?'} {v * per:.1f}" for n, v in list(res.get("jvm_threads_s", {}).items())[:6])
    ms = res.get("spark_ms", {})
    spark = ", ".join(f"{k} {v:,.0f}" for k, v in ms.items() if v)
    sc = res.get("steady_cpu", {})
    steady_cpu = ", ".join(f"{k} {v:.2f}" for k, v in list(sc.items())[:10])
    steps = ", ".join(f"{k} {v:,.1f}" for k, v in res.get("driver_steps_ms", {}).items())
    return (f"{name:>28}: {res['events_per_s']:>9,.0f} / {res['steady_events_per_s']:>9,.0f} / "
            f"{res.get('late_events_per_s', 0):>9,.0f} ev/s (overall / after batch 1 / last half); "
            f"ratio steady {steady:.3f}, last half {late:.3f}\n{'':>30}CPU µs/event: workers "
            f"{cpu['python_worker'] * per:.2f}, JVM {cpu['driver_jvm'] * per:.2f} (JIT "
            f"{res['jit_s'] * per:.2f}), driver py {cpu['driver_python'] * per:.2f}; batches "
            f"{res['batches']}, p50 {res['batch_ms_p50']:,.0f} ms\n{'':>30}JVM threads µs/event: "
            f"{threads}\n{'':>30}Spark ms (median after batch 1): {spark}"
            + (f"\n{'':>30}steady CPU µs/event (batch 2 on): {steady_cpu}" if sc else "")
            + (f"\n{'':>30}driver steps ms (median after batch 1): {steps}" if steps else ""))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variants", default="default", help=f"comma list of {', '.join(VARIANTS)}, "
                    "conf:KEY=VALUE,... (then ; between variants), measured:DIR")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--json", help="write every phase's result here")
    args, rest = ap.parse_known_args(argv)
    forwarded = [*rest, "--no-check"]
    sargs = sa.parse_args(forwarded)
    sa.ensure_data(sargs.events, sargs.batch, sargs.files_per_batch, Path(sargs.data_root),
                   sargs.ads, sargs.uniform_ads)
    results: dict[str, dict[str, Any]] = {}
    if not args.no_baseline:
        print("running baseline ...", file=sys.stderr, flush=True)
        results["baseline"] = sa.run_phase_in_subprocess("baseline", forwarded)
    for name in [v for v in args.variants.split(";" if ";" in args.variants else ",") if v]:
        print(f"running stormshift, {name} ...", file=sys.stderr, flush=True)
        key = name if name not in results else f"{name} (again)"
        results[key] = sa.run_phase_in_subprocess("stormshift", forwarded, env=variant_env(name))
    base = results.get("baseline", {})
    for name, res in results.items():
        res.pop("totals", None)
        print(line(name, res, base))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
