"""``run_shadow``: one input through the legacy side and the port, compared per leaf stream.

Call order (each step a public engine run, nothing of the engines' insides):

1. The input: ``inputs.apply_input`` replaces the spouts for ``jsonl:`` /
   ``redis:`` inputs (the same graph feeds both sides). A component that
   ``check`` finds writing outside the framework (``findings.py``) refuses
   the run here, before anything runs, unless ``allow_external_writes``.
2. Legacy: ``LocalEngine`` with a ``SimClock`` and ``seed`` (deterministic),
   with ``legacy_faults`` injected when given.
3. Baseline (with faults, or when a legacy bolt task restarted: its own code raised):
   the same legacy run without the faults and without restarting tasks (a raise only
   fails its tuple), so what Storm's failures and restarts lost shows apart from the
   port (``classify.py``).
4. Port: ``SparkEngine`` (``until_done``, a fresh checkpoint, state
   ``reset`` in its namespace, leaf emits read back from a jsonl sink), or
   with ``port_engine="local"`` a fault-free local run (a dry run of the
   comparison; with faults it shows what Storm's failures alone change).
5. Compare each leaf stream (``results.result_specs``, ``compare.compare_stream``)
   and the bolts' final state (``final_state.compare_state``), classify the
   divergences (``classify.classify``, with ``check``'s nondeterministic
   places) and judge (``verdict.judge``: the top line and the exit code).
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stormshift.engines.local import CrashTask, FailTuples, FaultPlan, LocalEngine, SimClock
from stormshift.engines.summary import RunSummary
from stormshift.errors import OptionError, ShadowRefused
from stormshift.shadow.classify import classify, own_config
from stormshift.shadow.compare import Tolerance, compare_stream
from stormshift.shadow.evidence import restarts
from stormshift.shadow.faultspec import describe_fault, describe_faults, parse_faults
from stormshift.shadow.final_state import StateComparison, compare_state, ignored
from stormshift.shadow.findings import ProjectFindings, merged, refusal
from stormshift.shadow.inputs import InputSpec, apply_input, parse_input
from stormshift.shadow.logs import attach_logs, capture
from stormshift.shadow.result import ShadowResult
from stormshift.shadow.results import RESULTS_KEY, ResultSpec, leaf_streams, result_specs
from stormshift.shadow.scratch import not_redirected, redirectable, scratch_servers
from stormshift.shadow.tap import add_taps, output_of
from stormshift.topology.graph import TopologyGraph

__all__ = [
    "ShadowOptions", "ShadowPlan", "ShadowRefused", "ShadowResult", "compare_runs", "execute",
    "plan_shadow", "run_shadow", "tolerance_of",
]

TOLERANCE_KEY = "shadow.tolerance"
Fault = FailTuples | CrashTask


@dataclass(frozen=True)
class ShadowOptions:
    """What one shadow run is asked for (see ``run_shadow``)."""

    input: str | InputSpec = "spout"
    legacy_faults: str | Sequence[Fault] | None = None
    max_tuples: int | None = None
    seed: int = 0
    ms_per_round: int = 1
    tolerance: Tolerance | None = None
    results: Mapping[str, Any] | None = None
    port_engine: str = "spark"
    spark: Any = None
    master: str = "local[2]"
    redis_url: str | None = None
    namespace: str | None = None
    batch_max_tuples: int | None = None
    workdir: str | None = None
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    #: ``check``'s static findings of the legacy project and of the port's own project
    #: (``findings.analyse``); None: not analysed (no refusal, no nondeterministic class)
    findings: ProjectFindings | None = None
    port_findings: ProjectFindings | None = None
    allow_external_writes: bool = False


def tolerance_of(config: Mapping[str, Any]) -> Tolerance:
    """``shadow.tolerance`` of a config: ``{"abs": 0.01, "rel": 1e-9}``; a field left out
    keeps its default (``Tolerance``: relative 1e-9, ``compare.py`` says why)."""
    entry = config.get(TOLERANCE_KEY) or {}
    if not isinstance(entry, Mapping) or set(entry) - {"abs", "rel"}:
        raise OptionError(f'{TOLERANCE_KEY} must be {{"abs": X, "rel": Y}}, got {entry!r}')
    try:
        default = Tolerance()
        return Tolerance(float(entry.get("abs", default.abs)), float(entry.get("rel", default.rel)))
    except (TypeError, ValueError) as exc:
        raise OptionError(f"{TOLERANCE_KEY}: {exc}") from None


@dataclass(frozen=True)
class ShadowPlan:
    """A checked shadow run: the graph both sides run, the faults, the result rules."""

    graph: TopologyGraph
    port_graph: TopologyGraph
    options: ShadowOptions
    input: InputSpec
    namespace: str
    faults: tuple[Fault, ...]
    specs: tuple[ResultSpec, ...]
    tolerance: Tolerance
    baseline_graph: TopologyGraph | None = None  # the legacy's, with a scratch target of its own


def plan_shadow(graph: TopologyGraph, options: ShadowOptions | None = None, *,
                port_graph: TopologyGraph | None = None, **settings: Any) -> ShadowPlan:
    """Check everything a shadow run needs before running anything (config errors raise
    ``StormshiftError`` here: input, faults, ``shadow.results``, ``shadow.tolerance``,
    ``shadow.state``).

    ``port_graph``: the port's topology when its code differs from the legacy's (a
    ported copy of the project); it must have the same leaf streams and fields.
    ``settings`` are ``ShadowOptions`` fields overriding ``options``.
    """
    opts = dataclasses.replace(options or ShadowOptions(), **settings)
    if opts.port_engine not in ("spark", "local"):
        raise OptionError(f"port engine {opts.port_engine!r}: use spark or local")
    legacy_side = "legacy" if opts.port_findings is not None else "both sides"
    sides = [(side, f) for side, f in ((legacy_side, opts.findings), ("port", opts.port_findings))
             if f is not None]
    refused = None if opts.allow_external_writes else refusal(sides, redirectable, not_redirected)
    if refused:
        raise ShadowRefused(refused)
    spec = opts.input if isinstance(opts.input, InputSpec) else parse_input(opts.input)
    raw_faults = opts.legacy_faults
    faults = parse_faults(raw_faults) if isinstance(raw_faults, str) else tuple(raw_faults or ())
    FaultPlan.of(faults).check(dict(graph.components))
    config = _config(graph, opts.results)
    specs = tuple(result_specs(graph, config))
    _check_ignored(graph, ignored(config))
    tol = opts.tolerance if opts.tolerance is not None else tolerance_of(config)
    namespace = opts.namespace or f"shadow-{graph.name}"
    port = port_graph if port_graph is not None else graph
    _check_same_leaves(graph, port)
    inner = [(s.component, s.stream) for s in specs if not s.leaf]  # tapped on both sides
    graph = add_taps(apply_input(graph, spec, namespace=namespace, source_url=opts.redis_url),
                     inner)
    port = graph if port_graph is None else add_taps(
        apply_input(port, spec, namespace=namespace, source_url=opts.redis_url), inner)
    return ShadowPlan(graph, port, opts, spec, namespace, faults, specs, tol)


def _check_ignored(graph: TopologyGraph, names: frozenset[str]) -> None:
    bolts = {b.name for b in graph.bolts}
    unknown = sorted(n for n in names if n.partition(".")[0] not in bolts)
    if unknown:
        raise OptionError(
            f"shadow.state ignores {unknown}: no such bolt; fix: name a bolt of "
            f"{sorted(bolts)}, or BOLT.ENTRY (an attribute or state map of it)"
        )


def _check_same_leaves(legacy: TopologyGraph, port: TopologyGraph) -> None:
    def leaves(g: TopologyGraph) -> dict[str, tuple[str, ...]]:
        return {f"{c}:{s}": g.stream_fields(c, s) for c, s in leaf_streams(g)}

    a, b = leaves(legacy), leaves(port)
    if a != b:
        raise OptionError(
            f"the port's leaf streams {b} differ from the legacy's {a}; fix: the port must keep "
            "the legacy's output streams and fields (that is what the shadow compares)"
        )


def run_shadow(graph: TopologyGraph, options: ShadowOptions | None = None,
               on_progress: Callable[[str], None] | None = None, *,
               port_graph: TopologyGraph | None = None, **settings: Any) -> ShadowResult:
    """Run ``graph``'s input through the legacy side and the port; compare (module docstring).

    ``port_graph``: the port's own topology (default ``graph``: the same code on both
    engines). ``settings`` are ``ShadowOptions`` fields (``input=``, ``legacy_faults=``,
    ``spark=``, ``redis_url=``, ...) overriding ``options``.
    """
    return execute(plan_shadow(graph, options, port_graph=port_graph, **settings), on_progress)


def execute(plan: ShadowPlan, on_progress: Callable[[str], None] | None = None) -> ShadowResult:
    """Steps 2-5 of the module docstring for a checked ``plan``; a component's own Redis
    writes go to a scratch server per side (``scratch.py``), compared as final state."""
    opts = plan.options
    writers = [] if opts.allow_external_writes else [  # the flag: the user set the targets
        f for found in (opts.findings, opts.port_findings) if found is not None
        for f in found.writers]
    with scratch_servers(writers) as scratch:
        if scratch is None:
            return _execute(plan, on_progress)
        sides = dataclasses.replace(plan, graph=scratch.graph("legacy", plan.graph),
                                    port_graph=scratch.graph("port", plan.port_graph),
                                    baseline_graph=scratch.graph("baseline", plan.graph))
        result = _execute(sides, on_progress, own=(plan.graph.config, plan.port_graph.config))
        external = scratch.compare(plan.tolerance)
        classify(plan.graph, external, result.legacy, None,
                 merged(opts.findings, opts.port_findings))
        result.states.extend(external)
        result.warnings.extend(scratch.said())
        return result


def _execute(plan: ShadowPlan, on_progress: Callable[[str], None] | None = None,
             own: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None) -> ShadowResult:
    opts, graph, faults = plan.options, plan.graph, plan.faults
    say = on_progress or (lambda line: None)
    say(f"legacy: local engine (Storm semantics){', faults: ' + describe_faults(faults) if faults else ''}")
    legacy_engine = LocalEngine(graph, clock=SimClock(ms_per_round=opts.ms_per_round),
                                seed=opts.seed, faults=faults, read_state=True)
    with capture() as legacy_logs:
        legacy = _whole(legacy_engine.run(max_tuples=opts.max_tuples))
    baseline, base_logs = None, None
    if faults or restarts(legacy):
        say("baseline: local engine without faults and without task restarts")
        with capture() as base_logs:
            baseline = _run_local(plan.baseline_graph or graph, opts, restart_on_crash=False)
    if opts.port_engine == "local":
        say("port: local engine (dry run without Spark)")
        # the baseline is the port's dry run too, unless a raise went unrestarted in it
        same = (baseline is not None and plan.port_graph is graph
                and not baseline.total("errors"))
        with capture() as port_logs:
            port = baseline if same and baseline is not None else _run_local(plan.port_graph, opts)
        port_logs = base_logs if port is baseline and base_logs is not None else port_logs
    else:
        say("port: spark engine")
        with capture() as port_logs:
            port = _run_spark(plan.port_graph, opts, plan.namespace, say)
    result = compare_runs(graph, legacy, port, baseline,
                          tolerance=plan.tolerance, results=opts.results,
                          findings=merged(opts.findings, opts.port_findings))
    attach_logs(result, graph, legacy_logs, port_logs, base_logs,
                merged(opts.findings, opts.port_findings))
    own_config([*result.streams, *result.states, *result.logs],
               *(own or (graph.config, plan.port_graph.config)))
    if opts.allow_external_writes:
        for side, found in (("legacy", opts.findings), ("port", opts.port_findings)):
            for f in (found.writers if found is not None else ()):
                result.warnings.append(f"{side}: {f.component} wrote outside the framework "
                                       f"({f.location}, allowed by --allow-external-writes)")
    result.input = plan.input.describe()
    result.faults = [describe_fault(f) for f in faults]
    result.injected = legacy_engine.injected
    result.port_engine = opts.port_engine
    return result


def _whole(summary: RunSummary) -> RunSummary:
    """A side's run that Ctrl-C / SIGTERM stopped ends the shadow (exit 130), not the side:
    the next side must not start, nor a verdict be drawn from half a run."""
    if summary.stop_reason == "interrupted":
        raise KeyboardInterrupt
    return summary


def _run_local(graph: TopologyGraph, opts: ShadowOptions,
               restart_on_crash: bool = True) -> RunSummary:
    clock = SimClock(ms_per_round=opts.ms_per_round)
    return _whole(LocalEngine(graph, clock=clock, seed=opts.seed, read_state=True,
                              restart_on_crash=restart_on_crash).run(max_tuples=opts.max_tuples))


def _config(graph: TopologyGraph, results: Mapping[str, Any] | None) -> dict[str, Any]:
    return {**graph.config, **({RESULTS_KEY: results} if results is not None else {})}


def compare_runs(graph: TopologyGraph, legacy: RunSummary, port: RunSummary,
                 baseline: RunSummary | None = None, *, tolerance: Tolerance | None = None,
                 results: Mapping[str, Any] | None = None,
                 findings: ProjectFindings | None = None) -> ShadowResult:
    """Compare two finished runs' leaf outputs and final state (``baseline``: the legacy
    re-run without faults and restarts; ``findings``: ``check``'s, for nondeterministic
    places)."""
    config = _config(graph, results)
    tol = tolerance if tolerance is not None else tolerance_of(config)
    specs = result_specs(graph, config)
    streams = [compare_stream(s, output_of(legacy, s.component, s.stream, not s.leaf),
                              output_of(port, s.component, s.stream, not s.leaf), tol)
               for s in specs]
    skip = ignored(config)
    states = _states(legacy, port, tol, skip)
    base = base_states = None
    if baseline is not None:
        base = {s.label: compare_stream(s, output_of(baseline, s.component, s.stream, not s.leaf),
                                        output_of(port, s.component, s.stream, not s.leaf), tol)
                for s in specs}
        base_states = {s.label: s for s in _states(baseline, port, tol, skip)}
    classify(graph, streams, legacy, base, findings, port=port, base_run=baseline)
    classify(graph, states, legacy, base_states, findings, port=port, base_run=baseline)
    result = ShadowResult(graph.name, "", streams, legacy, port, baseline, tolerance=tol,
                          states=states)
    result.warnings = _warnings(legacy, port)
    if bool(legacy.final_state) != bool(port.final_state):
        side = "port" if legacy.final_state else "legacy"
        result.warnings.append(f"final state not compared: the {side} run did not report it")
    return result


def _states(legacy: RunSummary, port: RunSummary, tol: Tolerance,
            skip: frozenset[str]) -> list[StateComparison]:
    if not (legacy.final_state and port.final_state):
        return []
    return compare_state(legacy.final_state, port.final_state, tol, skip)


def _warnings(legacy: RunSummary, port: RunSummary) -> list[str]:
    out = []
    for side, summary in (("legacy", legacy), ("port", port)):
        for kind in summary.problems.kinds():
            out.append(f"{side}: error in {kind.component}: {kind.headline()}")
        out.extend(f"{side}: {w}" for w in summary.warnings)
        if summary.pending_trees:
            out.append(f"{side}: {summary.pending_trees} spout tuple trees still pending at the end")
    return out


def _run_spark(graph: TopologyGraph, opts: ShadowOptions, namespace: str,
               say: Callable[[str], None]) -> RunSummary:
    from stormshift.engines.spark import SparkEngine

    own = opts.workdir is None
    workdir = Path(opts.workdir or tempfile.mkdtemp(prefix="stormshift-shadow-"))
    try:
        engine = SparkEngine(
            graph, master=opts.master, checkpoint_dir=str(workdir / "checkpoint"),
            redis_url=opts.redis_url, until_done=True, batch_max_tuples=opts.batch_max_tuples,
            sink=f"jsonl:{workdir / 'sink'}", state_mode="reset", spark=opts.spark,
            namespace=namespace, spark_conf=dict(opts.spark_conf), read_state=True,
        )
        return engine.run(max_tuples=opts.max_tuples, on_progress=say)
    finally:
        if own:
            shutil.rmtree(workdir, ignore_errors=True)
