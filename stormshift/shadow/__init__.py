"""Shadow runs: the same input through the legacy side and the port, compared key by key.

Runs in the driver process (the CLI or a script): it drives the local engine
and the Spark engine through their public ``run()`` and reads only their
``RunSummary`` (leaf outputs, per-component counters, final state).

Vocabulary:

- *legacy* (left): the topology on the local engine with Storm semantics,
  optionally with injected Storm failures (``faultspec.py``);
- *baseline*: the legacy run again without the failures (only when faults
  were injected; tells Storm's at-least-once effects from the port's);
- *port* (right): the topology (or a ported copy of it) on the Spark engine;
- *leaf stream*: a stream no component subscribes to; its *result mode*
  (``latest`` / ``sum`` / ``set`` / ``list`` per key) says which emits form
  its result (``results.py``, with the inference rule);
- *final state*: what each bolt holds at the end -- its tasks' user
  attributes and its keyed state maps -- compared per component, per
  attribute (or map), per key (``final_state.py``);
- *divergence*: a key whose result (or final state) differs -- missing key,
  extra key, value differs, count differs (``compare.py``; within the float
  tolerance it is *rounding*) -- with its *cause*, one class each
  (``classify.py``): the port, Storm's replay double count, Storm's crash
  losing in-memory state, a nondeterministic component, rounding, not
  comparable;
- *verdict* (``verdict.py``): the one line a team acts on and its exit code:
  SAFE TO SWITCH, PORT DIFFERS, NOTHING COMPARED, MOSTLY FAILED;
- *findings* (``findings.py``): ``check``'s static analysis, used before the
  run (a component writing outside the framework refuses it) and in the
  classification (what the wall clock or unseeded randomness reaches).

The *live shadow* (``live.py``, ``compare_live``) compares a port running
beside production under a shadow namespace with the legacy's own outputs,
read where it wrote them (``legacy_outputs.py``: the ``shadow.legacy``
mapping, and ``extractors.py``); its command is ``stormshift compare --live``
(``cli/compare.py``).

Modules: ``run.py`` (``run_shadow``), ``inputs.py`` (``--input``),
``results.py``, ``compare.py``, ``final_state.py``, ``findings.py``,
``classify.py``, ``verdict.py``,
``report_text.py``, ``report_html.py`` + ``report_sections.py`` (the
per-component drill-down) + ``chart.py`` + ``key_chart.py`` (the
self-contained HTML report),
the ``stormshift shadow`` click command lives in ``stormshift/cli/shadow.py``.
"""

from stormshift.shadow.compare import (
    Divergence,
    DivergenceKind,
    StreamComparison,
    Tolerance,
    compare_stream,
)
from stormshift.shadow.final_state import StateComparison, compare_state
from stormshift.shadow.findings import ProjectFindings, analyse
from stormshift.shadow.live import LiveResult, compare_live
from stormshift.shadow.report_html import render_html, write_html
from stormshift.shadow.report_text import print_report
from stormshift.shadow.results import ResultMode, ResultSpec, infer_spec, leaf_streams, result_specs
from stormshift.shadow.run import (
    ShadowOptions,
    ShadowRefused,
    ShadowResult,
    compare_runs,
    plan_shadow,
    run_shadow,
)
from stormshift.shadow.verdict import Verdict, judge

__all__ = [
    "Divergence",
    "DivergenceKind",
    "LiveResult",
    "ProjectFindings",
    "ResultMode",
    "ResultSpec",
    "ShadowOptions",
    "ShadowRefused",
    "ShadowResult",
    "StateComparison",
    "StreamComparison",
    "Tolerance",
    "Verdict",
    "analyse",
    "compare_live",
    "compare_runs",
    "compare_state",
    "compare_stream",
    "infer_spec",
    "judge",
    "leaf_streams",
    "plan_shadow",
    "print_report",
    "render_html",
    "result_specs",
    "run_shadow",
    "write_html",
]
