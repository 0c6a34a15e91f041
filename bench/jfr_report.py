"""Where a driver JVM's Java CPU went, by kind of work: ``python bench/jfr_report.py FILE``.

``FILE`` is a Java Flight Recording (``bench/jvm_experiments.py``'s ``measured:DIR``
variant writes ``DIR/driver.jfr``). Its execution samples (a thread running Java code,
every 10-20 ms; JIT compiler and GC threads are not sampled: read those from the
per-thread CPU ``spark_adclicks.py`` prints) are put in one category each: the first
rule of ``RULES`` that matches any frame of the stack, read from the innermost frame
out, so a sample is charged to the most specific work it was doing (compressing a
shuffle block inside the shuffle writer is "shuffle: compression"). Samples no rule
takes are listed by their innermost Spark frame, to write the next rule.

``--events N`` turns shares into µs per event, scaling the sampled shares to the
JVM's measured non-JIT CPU seconds (``--cpu-s``).
"""

from __future__ import annotations

import argparse
import re
import subprocess
from collections import Counter

# (category, substrings of a frame): first match, innermost frame first, wins.
RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("shuffle: compression", ("net.jpountz", "org.xerial.snappy", "com.github.luben.zstd",
                              "CompressionCodec", "LZ4Block")),
    ("shuffle: write", ("ShuffleWriter", "ShuffleExternalSorter", "DiskBlockObjectWriter",
                        "ShufflePartitionPairsWriter", "ShuffleMapOutputWriter",
                        "UnsafeRowSerializer$$anon$1", "ShuffleWriteProcessor")),
    ("shuffle: read", ("ShuffleBlockFetcherIterator", "BlockStoreShuffleReader",
                       "UnsafeRowSerializer$$anon$2", "ShuffledRowRDD", "ShuffleReader")),
    ("arrow: JVM rows -> Python", ("ArrowWriter", "ArrowFieldWriter", "PythonArrowInput",
                                   "ArrowStreamWriter", "ArrowPythonRunner$$anon",
                                   "BasicPythonArrowInput")),
    ("arrow: Python -> JVM rows", ("ArrowColumnVector", "PythonArrowOutput", "ArrowReader",
                                   "ArrowStreamReader", "ColumnarBatch", "ArrowUtils")),
    ("python worker I/O", ("PythonRunner", "PythonWorkerFactory", "java.net.Socket",
                           "sun.nio.ch", "PythonPlannerRunner")),
    ("source: Python data source", ("PythonDataSource", "PythonPartitionReader",
                                    "PythonMicroBatchStream", "PythonStreamingSource",
                                    "PythonStreamingSourceRunner")),
    ("source: files", ("FileScanRDD", "HadoopFileLinesReader", "LineRecordReader",
                       "FileStreamSource", "InMemoryFileIndex", "org.apache.hadoop.fs")),
    ("generated code (filter, project)", ("GeneratedClass", "UnsafeProjection",
                                          "codegen", "WholeStageCodegen")),
    ("planning: catalyst / streaming", ("org.apache.spark.sql.catalyst", "MicroBatchExecution",
                                        "IncrementalExecution", "QueryExecution",
                                        "SparkPlan", "StreamExecution", "Dataset")),
    ("scheduler / RPC / listeners", ("org.apache.spark.scheduler", "org.apache.spark.rpc",
                                     "org.apache.spark.util.ListenerBus", "io.netty",
                                     "MapOutputTracker", "BlockManager", "TaskMemoryManager",
                                     "org.apache.spark.storage")),
    ("py4j gateway", ("py4j",)),
    ("class loading / reflection", ("java.lang.ClassLoader", "jdk.internal.loader",
                                    "java.lang.reflect", "jdk.internal.reflect",
                                    "java.util.zip", "java.util.jar")),
)

_THREAD = re.compile(r'sampledThread = "([^"]*)"')


def samples(path: str) -> list[tuple[str, list[str]]]:
    """``(thread name, frames innermost first)`` of every execution sample."""
    text = subprocess.run(["jfr", "print", "--events", "jdk.ExecutionSample", "--stack-depth", "96",
                           path], capture_output=True, text=True, check=True).stdout
    out: list[tuple[str, list[str]]] = []
    thread, frames, in_stack = "", [], False
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("sampledThread"):
            m = _THREAD.search(s)
            thread = m.group(1) if m else "?"
        elif s.startswith("stackTrace = ["):
            frames, in_stack = [], True
        elif in_stack and s == "]":
            in_stack = False
            out.append((thread, frames))
        elif in_stack and s != "...":
            frames.append(s)
    return out


def thread_kind(name: str) -> str:
    if name.startswith("Executor task launch"):
        return "executor task"
    if name.startswith("stream execution thread"):
        return "stream execution (driver's batch)"
    return re.sub(r"[\d#]+", "N", name)[:40]


def category(frames: list[str]) -> str:
    for frame in frames:
        for name, needles in RULES:
            if any(n in frame for n in needles):
                return name
    return "other"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--events", type=int, help="events of the run: print µs per event")
    ap.add_argument("--cpu-s", type=float, help="the JVM's non-JIT, non-GC CPU seconds to scale to")
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args(argv)
    got = samples(args.file)
    total = len(got)
    by_cat: Counter[tuple[str, str]] = Counter()
    unknown: Counter[str] = Counter()
    for thread, frames in got:
        kind = thread_kind(thread)
        cat = category(frames)
        by_cat[(kind, cat)] += 1
        if cat == "other":
            spark = next((f for f in frames if "org.apache.spark" in f), frames[0] if frames else "?")
            unknown[f"{kind}: {frames[0][:70] if frames else '?'} <- {spark[:90]}"] += 1
    scale = (args.cpu_s * 1e6 / args.events / total) if args.events and args.cpu_s and total else None
    print(f"{total:,} execution samples")
    print(f"{'thread kind':36} {'category':36} {'samples':>8} {'share':>6}" + ("  µs/event" if scale else ""))
    for (kind, cat), n in by_cat.most_common():
        extra = f"  {n * scale:8.2f}" if scale else ""
        print(f"{kind:36} {cat:36} {n:8,} {n / total:6.1%}{extra}")
    print("\nuncategorised, by innermost frame <- innermost Spark frame:")
    for what, n in unknown.most_common(args.top):
        print(f"{n:6,}  {what}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
