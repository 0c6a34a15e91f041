"""Exactly-once on a real multi-process Spark cluster (standalone master + workers on this host).

``stormshift submit examples/adclicks --master spark://...`` ships the project
and stormshift to executor JVMs that are not the driver's; then

- an executor is SIGKILLed (JVM and its Python workers) while a task of
  batch txid 2 is in flight; its worker relaunches one and the run finishes;
- a run with speculation on, where the first attempt of one task is slow,
  gets a speculative copy on the other "host" (127.0.0.2);

and each must give exactly the per-ad and per-advertiser totals of the
independent oracle (``examples/adclicks/expected.py``) and of a ``local[2]``
run over the same input -- the same emits, none lost, none doubled. A project
whose bolt imports a package that only the submitting side has (a wheel named in
its requirements.txt) runs on executors that lack it: ``submit`` ships it.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from support.cluster_harness import (
    APP_CONFS,
    REPO,
    TABLE,
    RedisServer,
    StandaloneCluster,
    event_log_confs,
    event_log_tasks,
    kill_group,
    start_submit,
    submit_env,
    wait_for,
)
from support.session_tables import record

pytestmark = [pytest.mark.slow, pytest.mark.faults, pytest.mark.spark, pytest.mark.redis]

PROJECT = REPO / "examples" / "adclicks"
NAMESPACE = "adclicks"  # the engine's default namespace: each run gets its own Redis db instead
EVENTS, BATCH, SEED = 8_000, 2_000, 7  # txids 0..3 hold data (then two drain batches)
SLOW_TXID = 2  # the faults hit this batch, after txids 0 and 1 committed
RUN_TIMEOUT = 200


def fault(name: str, secs: float) -> dict[str, Any]:
    """Attempt 0 of ads_ctr_bolt task 0 of txid SLOW_TXID sleeps ``secs`` when it starts."""
    return {"name": name, "at": "stage.start", "action": "sleep", "secs": secs,
            "when": {"txid": SLOW_TXID, "component": "ads_ctr_bolt", "task": 0, "attempt": 0}}


# -- fixtures --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    c = StandaloneCluster(tmp_path_factory.mktemp("spark-cluster"))
    try:
        c.start()
        c.add_worker("127.0.0.1", cores=2, memory="2g", wait=False)  # up while local[2] runs
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    s = RedisServer(tmp_path_factory.mktemp("cluster-redis"))
    yield s
    s.stop()


@pytest.fixture(scope="module")
def oracle() -> Any:
    spec = importlib.util.spec_from_file_location("adclicks_expected", PROJECT / "expected.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = module  # type: ignore[union-attr]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.compute(module.generated_lines(SEED, EVENTS))


@pytest.fixture(scope="module")
def local_run(spark: Any, server: RedisServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The same input on ``local[2]`` (the test session's SparkSession), failure-free."""
    from stormshift.engines.spark import SparkEngine
    from stormshift.engines.spark.task.sink import read_jsonl_outputs
    from stormshift.topology.loader import load_topology

    tmp = tmp_path_factory.mktemp("local2")
    graph = load_topology(str(PROJECT), overrides={"adclicks.events": EVENTS, "adclicks.seed": SEED})
    SparkEngine(graph, checkpoint_dir=str(tmp / "ck"), redis_url=server.url(1), spark=spark,
                namespace=NAMESPACE, until_done=True, batch_max_tuples=BATCH,
                sink=f"jsonl:{tmp / 'sink'}").run()
    return read_jsonl_outputs(str(tmp / "sink"))


# -- helpers -----------------------------------------------------------------------------------
def submit_args(cluster: StandaloneCluster, server: RedisServer, db: int, tmp: Path,
                confs: dict[str, str]) -> list[str]:
    args = [str(PROJECT), "--master", cluster.url, "--redis", server.url(db),
            "--checkpoint", str(tmp / "ck"), "--sink", f"jsonl:{tmp / 'sink'}",
            "--build-dir", str(tmp / "build"), "--until-done", "--batch-max-tuples", str(BATCH),
            "-o", f"adclicks.events={EVENTS}", "-o", f"adclicks.seed={SEED}",
            "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.ui.enabled=false"]
    for key, value in {**APP_CONFS, **confs}.items():
        args += ["--conf", f"{key}={value}"]
    return args


def fault_confs(faults: list[dict[str, Any]], fault_dir: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(spark confs, driver env) that plan ``faults`` in every process of the run."""
    env = {"STORMSHIFT_FAULTS": json.dumps(faults, separators=(",", ":")),
           "STORMSHIFT_FAULT_DIR": str(fault_dir)}
    return {f"spark.executorEnv.{k}": v for k, v in env.items()}, env


def fault_events(fault_dir: Path) -> list[dict[str, Any]]:
    path = fault_dir / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line] if path.exists() else []


def finish(proc: subprocess.Popen[Any]) -> int:
    """Wait for a submit to end (killed after RUN_TIMEOUT: exit code -1), then reap its group."""
    try:
        return proc.wait(RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        return -1
    finally:
        kill_group(proc)


def totals(sink: dict[tuple[str, str], list[list[Any]]]) -> dict[str, Any]:
    """Final per-ad [impressions, clicks, spend] and per-advertiser spend, and every emit."""
    ctr = {v[0]: tuple(v[1:4]) for v in sink.get(("ads_ctr_bolt", "default"), [])}
    spend = {v[0]: v[1] for v in sink.get(("client_spent_bolt", "default"), [])}
    emits = {f"{c}:{s}": Counter(tuple(v) for v in rows) for (c, s), rows in sink.items()}
    return {"ctr": ctr, "spend": spend, "emits": emits}


def check_exact(tmp: Path, local_run: dict[str, Any], oracle: Any) -> str:
    from stormshift.engines.spark.task.sink import read_jsonl_outputs

    got, local = totals(read_jsonl_outputs(str(tmp / "sink"))), totals(local_run)
    assert got["ctr"] == {ad: tuple(t) for ad, t in oracle.ctr_by_ad.items()}, "per-ad totals differ"
    assert got["spend"] == oracle.spend_by_advertiser, "per-advertiser spend differs"
    assert local["ctr"] == got["ctr"] and local["spend"] == got["spend"]
    # every running total emitted exactly once, as in the failure-free local[2] run
    assert got["emits"] == local["emits"], "the cluster run lost or doubled emits"
    assert sum(got["emits"]["ads_ctr_bolt:default"].values()) == EVENTS
    return "exact"


def counters(server: RedisServer, db: int) -> dict[str, int]:
    from stormshift.engines.spark.records.keys import attempts_key
    from stormshift.state.commit import CommitLog

    r = server.client(db)
    raw = {k.decode(): int(v) for k, v in r.hgetall(attempts_key(NAMESPACE)).items()}
    return {"committed": CommitLog(r, NAMESPACE).committed(), "retried": raw.get("retried", 0),
            "fenced": raw.get("fenced", 0)}


# -- tests -------------------------------------------------------------------------------------
def test_executor_sigkilled_mid_task_is_relaunched_and_totals_are_exact(
        cluster: StandaloneCluster, local_run: dict[str, Any], oracle: Any, server: RedisServer,
        tmp_path: Path) -> None:
    from stormshift.state.commit import CommitLog

    db, fault_dir, events_dir, log = 2, tmp_path / "faults", tmp_path / "events", tmp_path / "submit.log"
    fault_dir.mkdir()
    events_dir.mkdir()
    cluster.wait_alive("127.0.0.1")
    # the task sleeps long enough to be caught in flight; it never wakes: its executor dies
    confs, env = fault_confs([fault("hold-for-kill", 60)], fault_dir)
    confs.update(event_log_confs(events_dir))
    args = submit_args(cluster, server, db, tmp_path, confs)
    proc = start_submit(args, submit_env(env), log)

    def held_task() -> list[dict[str, Any]]:
        assert proc.poll() is None, f"submit ended before the kill (code {proc.returncode}):\n{_tail(log)}"
        return [e for e in fault_events(fault_dir) if e["fault"] == "hold-for-kill"]

    (held,) = wait_for(f"txid {SLOW_TXID}'s ads_ctr_bolt task 0 to start", held_task, RUN_TIMEOUT, 0.1)
    committed_at_kill = CommitLog(server.client(db), NAMESPACE).committed()
    (victim,) = [e for e in cluster.executors() if e.pid in _ancestors(held["pid"])]
    host = next(w.host for w in cluster.workers if w.proc.pid in _ancestors(victim.pid))
    killed = cluster.kill_executor(victim)
    relaunched = wait_for(f"the worker on {host} to relaunch an executor",
                          lambda: [e.pid for e in cluster.executors(host) if e.pid != victim.pid], 90)
    runs, codes = 1, [finish(proc)]
    if codes[-1] != 0:  # the driver gave up on the batch: resubmit once, same checkpoint
        runs += 1
        codes.append(finish(start_submit(args, submit_env(env), log)))
    assert codes[-1] == 0, f"submit failed (exit codes {codes}):\n{_tail(log)}"
    seen = counters(server, db)
    result = check_exact(tmp_path, local_run, oracle)
    assert committed_at_kill == SLOW_TXID - 1
    tasks = event_log_tasks(events_dir)
    lost = [t for t in tasks if t["reason"] == "ExecutorLostFailure"]
    assert lost, f"no task died with the executor: {tasks}"
    reasons = Counter(t["reason"] for t in tasks if t["reason"] != "Success")
    record(TABLE, {"run": "executor SIGKILL", "fault": f"txid {SLOW_TXID} ads_ctr_bolt:0 in flight",
                 "path": "same query finished" if runs == 1 else f"driver failed, resubmitted {codes}",
                 "batches": seen["committed"] + 1,
                 "spark": f"{len(killed)} pids killed, {len(relaunched)} new executor, "
                          + ", ".join(f"{n} {r}" for r, n in sorted(reasons.items())),
                 "stage retries": len({(t["stage"], t["stage_attempt"]) for t in tasks if t["stage_attempt"]}),
                 "retried": seen["retried"], "fenced": seen["fenced"], "result": result})


def test_speculative_copy_of_a_slow_attempt_keeps_totals_exact(
        cluster: StandaloneCluster, local_run: dict[str, Any], oracle: Any, server: RedisServer,
        tmp_path: Path) -> None:
    db, fault_dir, events_dir, log = 3, tmp_path / "faults", tmp_path / "events", tmp_path / "submit.log"
    fault_dir.mkdir()
    events_dir.mkdir()
    cluster.wait_alive("127.0.0.1")
    cores = sum(w.cores for w in cluster.workers)
    if "127.0.0.2" not in {w.host for w in cluster.workers}:
        # Spark never puts a speculative copy on a host that ran an attempt of the task:
        # a second "host". The driver waits for its executor (minRegisteredResourcesRatio).
        cores += cluster.add_worker("127.0.0.2", cores=1, memory="1g", wait=False).cores
    confs, env = fault_confs([fault("slow-first", 8)], fault_dir)
    confs.update({"spark.speculation": "true", "spark.speculation.quantile": "0.5",
                  "spark.speculation.multiplier": "1.5", "spark.speculation.minTaskRuntime": "200ms",
                  "spark.cores.max": str(cores), "spark.scheduler.minRegisteredResourcesRatio": "1.0",
                  "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
                  **event_log_confs(events_dir)})
    proc = start_submit(submit_args(cluster, server, db, tmp_path, confs), submit_env(env), log)
    code = finish(proc)
    assert code == 0, f"submit failed (exit code {code}):\n{_tail(log)}"
    seen = counters(server, db)
    result = check_exact(tmp_path, local_run, oracle)
    slow = [e for e in fault_events(fault_dir) if e["fault"] == "slow-first"]
    assert len(slow) == 1 and slow[0]["attempt"] == 0, slow
    tasks = event_log_tasks(events_dir)
    copies = [t for t in tasks if t["speculative"]]
    won = [t for t in copies if t["reason"] == "Success"]
    assert won, f"no speculative copy succeeded: {tasks}"
    assert seen["retried"] >= 1, "no attempt > 0 ran the stage body"
    reasons = Counter(t["reason"] for t in tasks if t["reason"] != "Success")
    record(TABLE, {"run": "speculation", "fault": f"txid {SLOW_TXID} ads_ctr_bolt:0 attempt 0 +8s",
                 "path": "same query finished", "batches": seen["committed"] + 1,
                 "spark": f"{len(copies)} speculative copies ({len(won)} won, on "
                          f"{sorted({t['host'] for t in won})}), "
                          + ", ".join(f"{n} {r}" for r, n in sorted(reasons.items())),
                 "stage retries": len({(t["stage"], t["stage_attempt"]) for t in tasks if t["stage_attempt"]}),
                 "retried": seen["retried"], "fenced": seen["fenced"], "result": result})


# -- reporting ---------------------------------------------------------------------------------
def _ancestors(pid: int) -> list[int]:
    import psutil

    try:
        return [p.pid for p in psutil.Process(pid).parents()]
    except psutil.NoSuchProcess:
        return []


def _tail(log: Path, lines: int = 60) -> str:
    text = log.read_text(errors="replace") if log.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


def test_submit_ships_a_dependency_the_executors_lack(
        cluster: StandaloneCluster, server: RedisServer, tmp_path: Path) -> None:
    import os
    import shutil

    from support.wheels import LEDGER, RATECARD, make_wheel

    from stormshift.state.final import committed_attributes

    site = tmp_path / "site" / "ratecard"  # importable by the submitting side only
    site.mkdir(parents=True)
    (site / "__init__.py").write_text(RATECARD)
    wheel = make_wheel(tmp_path, "ratecard", {"ratecard/__init__.py": RATECARD})
    project = tmp_path / "ledger"
    shutil.copytree(LEDGER, project)
    (project / "requirements.txt").write_text(f"{wheel}\n")
    bolt = project / "src" / "bolts" / "balance.py"
    bolt.write_text(bolt.read_text().replace(
        "from streamparse import Bolt", "from ratecard import rate\nfrom streamparse import Bolt"
    ).replace("self.balances[account] += n", "self.balances[account] += n * rate(account)"))
    db, log = 6, tmp_path / "submit.log"
    args = [str(project), "--master", cluster.url, "--redis", server.url(db),
            "--checkpoint", str(tmp_path / "ck"), "--build-dir", str(tmp_path / "build"),
            "--until-done", "--batch-max-tuples", "150",
            "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.ui.enabled=false"]
    for key, value in APP_CONFS.items():
        args += ["--conf", f"{key}={value}"]
    env = submit_env({"PIP_NO_INDEX": "1"})
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(tmp_path / "site")])
    code = finish(start_submit(args, env, log))
    assert code == 0, _tail(log)
    key = (tmp_path / "ck" / "stormshift-state.key").read_text().strip()
    got = sum((committed_attributes(server.client(db), "ledger", key, "balance", t)["balances"]
               for t in range(2)), Counter())
    want: Counter = Counter()
    for n in range(600):
        want[f"a{n % 7}"] += n * (n % 7 + 1)
    assert got == want


FASTRATE_C = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>

/* rate("aK") = K + 1, as ratecard's, in C */
static PyObject *rate(PyObject *self, PyObject *account) {
    const char *text = PyUnicode_AsUTF8(account);
    if (text == NULL) return NULL;
    return PyLong_FromLong(strtol(text + 1, NULL, 10) + 1);
}

static PyMethodDef methods[] = {{"rate", rate, METH_O, "rate of an account"},
                                {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "fastrate", NULL, -1, methods};
PyMODINIT_FUNC PyInit_fastrate(void) { return PyModule_Create(&module); }
"""


def build_fastrate(where: Path) -> tuple[Path, Path]:
    """``fastrate``, a C extension module built here with gcc: ``(its .so, its wheel)``."""
    import sysconfig

    from support.wheels import make_wheel

    source = where / "fastrate.c"
    source.write_text(FASTRATE_C)
    so_name = f"fastrate{sysconfig.get_config_var('EXT_SUFFIX')}"
    built = where / "build" / so_name
    built.parent.mkdir(parents=True)
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", f"-I{sysconfig.get_paths()['include']}",
                    str(source), "-o", str(built)], check=True, capture_output=True)
    abi = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    wheel = make_wheel(where, "fastrate", {so_name: built.read_bytes()},  # type: ignore[dict-item]
                       tag=f"{abi}-{abi}-{platform}")
    return built, wheel


def test_submit_ships_a_compiled_dependency_the_executors_lack(
        cluster: StandaloneCluster, server: RedisServer, tmp_path: Path) -> None:
    """A bolt importing ``fastrate`` (C, gcc-built, installed on the submitting side only):
    its wheel goes in the archive on ``--archives``, executors load the extension from it."""
    import os
    import shutil

    from support.wheels import LEDGER

    from stormshift.state.final import committed_attributes

    built, wheel = build_fastrate(tmp_path)
    site = tmp_path / "site"  # importable by the submitting side only
    site.mkdir()
    shutil.copy(built, site / built.name)
    probe = subprocess.run([sys.executable, "-c", "import fastrate; print(fastrate.rate('a3'))"],
                           capture_output=True, text=True, cwd=tmp_path, check=False)
    assert probe.returncode != 0  # the executors' Python (this one, bare) lacks it
    project = tmp_path / "ledger"
    shutil.copytree(LEDGER, project)
    (project / "requirements.txt").write_text(f"{wheel}\n")
    bolt = project / "src" / "bolts" / "balance.py"
    bolt.write_text(bolt.read_text().replace(
        "from streamparse import Bolt", "from fastrate import rate\nfrom streamparse import Bolt"
    ).replace("self.balances[account] += n", "self.balances[account] += n * rate(account)"))
    db, log = 7, tmp_path / "submit.log"
    args = [str(project), "--master", cluster.url, "--redis", server.url(db),
            "--checkpoint", str(tmp_path / "ck"), "--build-dir", str(tmp_path / "build-submit"),
            "--until-done", "--batch-max-tuples", "150",
            "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.ui.enabled=false"]
    for key, value in APP_CONFS.items():
        args += ["--conf", f"{key}={value}"]
    env = submit_env({"PIP_NO_INDEX": "1"})
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(site)])
    code = finish(start_submit(args, env, log))
    assert code == 0, _tail(log)
    import tarfile

    with tarfile.open(tmp_path / "build-submit" / "ledger-deps.tar.gz") as archive:
        assert built.name in archive.getnames()  # the extension went in the shipped archive
    key = (tmp_path / "ck" / "stormshift-state.key").read_text().strip()
    got = sum((committed_attributes(server.client(db), "ledger", key, "balance", t)["balances"]
               for t in range(2)), Counter())
    want: Counter = Counter()
    for n in range(600):
        want[f"a{n % 7}"] += n * (n % 7 + 1)
    assert got == want
