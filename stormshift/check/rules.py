"""The catalogue of ``stormshift check`` rules and the finding they produce.

A *rule* is one porting hazard: an id (also the anchor of its section in
``migrations_guide/check.md``), a default severity, why it matters on Spark
and the usual fix. A *finding* is one place in the user's code where a rule
applies. Severities:

- ``error``: will not behave the same on Spark (lost exactly-once, refused at
  load, state shared or lost); fix before porting;
- ``warning``: behaves differently in a way that may matter (timing, replays,
  task numbers); read the guide section and decide;
- ``info``: worth knowing, nothing to change.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

__all__ = ["GUIDE", "RULES", "Finding", "Rule", "Severity"]

GUIDE = "migrations_guide/check.md"


class Severity(str, enum.Enum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]


@dataclass(frozen=True)
class Rule:
    id: str
    severity: Severity
    title: str
    why: str
    fix: str

    @property
    def guide(self) -> str:
        return f"{GUIDE}#{self.id}"


@dataclass(frozen=True)
class Finding:
    """One place where a rule applies. ``file`` is relative to the project dir."""

    rule: str
    severity: Severity
    file: str
    line: int
    component: str | None
    message: str
    via: tuple[str, ...] = field(default=())

    @property
    def spec(self) -> Rule:
        return RULES[self.rule]

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    def to_dict(self) -> dict[str, Any]:
        rule = self.spec
        return {
            "rule": self.rule, "severity": self.severity.value, "file": self.file,
            "line": self.line, "component": self.component, "message": self.message,
            "via": list(self.via), "why": rule.why, "fix": rule.fix, "guide": rule.guide,
        }


def _rules(*rules: Rule) -> dict[str, Rule]:
    return {r.id: r for r in rules}


E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO
RULES: dict[str, Rule] = _rules(
    Rule("external-write", E, "bolt writes to an external system",
         "Spark re-runs a failed micro-batch: the write happens again (a counter "
         "incremented twice, a row inserted twice); only stormshift's own state is exactly-once",
         "keep the value in a stormshift state map (stormshift.state, see "
         "migrations_guide/state.md) or emit it and let a sink write it (--sink)"),
    Rule("idempotent-write", W, "bolt writes to an external system (looks idempotent)",
         "a replayed micro-batch writes again; harmless only if the write is idempotent "
         "(same key, same value) and nobody reads it before the batch commits",
         "prefer a state map or a sink (--sink); keep the write only if it is truly idempotent"),
    Rule("external-read", W, "bolt asks an external service while processing (HTTP GET)",
         "a replayed micro-batch asks again and may get another answer (a price, a profile, "
         "a flag that changed since), so the replay can emit or store other values than the "
         "first attempt; nothing is written",
         "ask once in initialize(), or keep each answer in a state map keyed by the request so "
         "a replay reads the same answer; or accept that the output depends on when it ran"),
    Rule("redis-py-signature", E, "a Redis call written for redis-py 2",
         "redis-py 3 changed zincrby(name, value, amount=1) to zincrby(name, amount, value): a "
         "two-argument call raises TypeError on every tuple (streamparse's own redis example "
         "does this)",
         "write zincrby(name, amount, member), e.g. self.redis.zincrby('words', 1, word)"),
    Rule("wall-clock", W, "wall-clock time read while processing",
         "a replayed micro-batch reads another time, so it can emit or store different values "
         "than the first attempt: results depend on when, not on what",
         "take time from the tuple (an event-time field) or use stormshift windows"),
    Rule("unseeded-random", W, "unseeded randomness while processing",
         "a replayed micro-batch draws other numbers, so the replay's output differs",
         "seed it from the tuple or the config (random.Random(seed)), or derive ids from the "
         "tuple's values (uuid.uuid5) instead of uuid4"),
    Rule("thread", E, "component starts a thread or process",
         "a Spark task runs a bolt for one micro-batch only; work a background thread does "
         "outside process() is not part of any batch: not replayed, not snapshotted, "
         "its emits are lost or land in another batch",
         "do the work inside process() (or process_batch()); for I/O use a sink"),
    Rule("executor", W, "component uses a thread or process pool",
         "fine if every future is awaited inside the same process() call; anything still "
         "running when process() returns escapes the micro-batch",
         "wait for all futures before returning from process(), or do the work inline"),
    Rule("shared-module-state", E, "module-level mutable state changed by a component",
         "on Storm each streamparse task had its own process; on Spark tasks of one Python "
         "worker share module globals, and globals are never snapshotted: counts mix "
         "across tasks and are lost or doubled on replay",
         "move the value into an instance attribute set in initialize() (snapshotted) or a "
         "state map"),
    Rule("shared-class-state", E, "class-level mutable attribute changed through self/cls",
         "a class attribute is shared by every task of the component in one worker and is not "
         "part of the instance's snapshot",
         "create the container in initialize(): self.name = {}"),
    Rule("unpicklable-attribute", W, "instance attribute that cannot be snapshotted",
         "stormshift snapshots a bolt's attributes with pickle after every batch; an attribute "
         "that cannot be pickled is skipped and comes back from initialize() after a failure, "
         "so whatever it held (an iterator's position, a buffer) is lost",
         "keep state in picklable values (dicts, lists, Counters) and make clients, locks, "
         "files and generators in initialize() without keeping state in them"),
    Rule("unpicklable-client", I, "unpicklable attribute made by initialize()",
         "not snapshotted; initialize() makes it again after a failure, which is fine as long "
         "as it holds no state of its own",
         "nothing, if it is a connection or lock; otherwise see unpicklable-attribute"),
    Rule("run-error", W, "component raised during the short local run",
         "on Spark a tuple whose processing raises is retried, then dead-lettered",
         "fix the error, or check that the input of the short run is what the bolt expects"),
    Rule("run-skipped", I, "the short local run did not run",
         "findings that need the run (unpicklable attributes) were not looked for",
         "fix what stopped it (see the message), or run with --no-run to silence this"),
    Rule("java-spout", E, "JavaSpout without a replacement",
         "a JavaSpout runs in the JVM; stormshift hosts only Python components and refuses "
         "the topology at load",
         'replace it with a Python spout of the same outputs through "stormshift.replacements" '
         "in config (see migrations_guide/sources.md)"),
    Rule("java-spout-replaced", I, "JavaSpout replaced through stormshift.replacements",
         "the Python replacement runs instead of the Java spout",
         "check that the replacement reads the same input (shadow run)"),
    Rule("java-bolt", E, "JavaBolt", "a JavaBolt runs in the JVM; stormshift refuses it at load",
         "rewrite it as a streamparse Bolt with the same outputs"),
    Rule("shell-component", E, "ShellSpout / ShellBolt",
         "a shell component runs an external program over Storm's multilang pipe; stormshift "
         "hosts Python classes in-process and refuses it at load",
         "port it to a streamparse Spout/Bolt subclass declared with YourClass.spec(...)"),
    Rule("custom-grouping", E, "custom Java grouping",
         "a CustomStreamGrouping's chooseTasks() is JVM code; stormshift routes every tuple in "
         "Python and refuses it at load",
         "use Grouping.fields(...) on the keys it partitions by, or Grouping.SHUFFLE"),
    Rule("tick-timing", W, "process_tick() overridden",
         "on Spark a bolt gets at most one tick per micro-batch, after the batch's tuples, at "
         "the batch's recorded time: flushes and time-based logic run at batch cadence",
         "make the tick logic independent of how many tuples came since the last tick, or use "
         "stormshift windows for time-based aggregation"),
    Rule("batching-bolt", I, "BatchingBolt / TicklessBatchingBolt",
         "groups are flushed on ticks, which on Spark come once per micro-batch: process_batch "
         "sees other groups than on Storm",
         "nothing if process_batch's result does not depend on how tuples were grouped"),
    Rule("fail-replay", W, "spout replays tuples from fail()",
         "on Spark fail() is never called: a tuple that fails is retried inside its batch, "
         "then dead-lettered; replay counters and retry limits in the spout do nothing",
         "rely on the dead letters (stormshift deadletter) and a replayable source"),
    Rule("spout-fail", I, "spout overrides fail()",
         "on Spark fail() is never called (failed tuples go to the dead letters)",
         "nothing, unless the spout's behaviour depends on fail() being called"),
    Rule("task-ids", W, "emit(..., need_task_ids=True)",
         "task ids are Storm's (numbered by component name) but a fields grouping picks tasks "
         "by another hash than Storm's: the ids returned differ from the legacy run",
         "do not store or compare the returned task ids across runs"),
    Rule("shadowed-module", W, "project module named like a standard or installed module",
         "stormshift puts the project's source dirs after the standard library and the "
         "installed packages, so a project cannot break them: `import NAME` gets the library's "
         "module, never the project's (Storm's multilang workers had src/ first)",
         "rename the project's module (and the imports of it)"),
    Rule("missing-package", E, "the project imports a package that is not installed",
         "every process that hosts the component (driver, Spark's planner and workers) imports "
         "it: stormshift refuses the topology at load until it is installed; check stood it in "
         "to read the rest, and the short run waits for it",
         "pip install it (the message names it), or add it to the project's requirements; a "
         "module of the project itself belongs in src/"),
    Rule("emit-arity", E, "emit() of a literal list whose length differs from its stream's fields",
         "every such emit fails, on Storm and on both engines: the tuple is refused (dead "
         "letter on Spark, a failed tree on the local engine) and nothing downstream sees it",
         "emit as many values as the stream declares, or declare the fields the emit sends "
         "(outputs = ['word', 'count'], or Stream(fields=[...], name=...))"),
    Rule("emit-without-outputs", E, "emit() from a component that declares no outputs",
         "the component declares no stream (outputs = [] or none), so every emit fails on "
         "both engines: the tuple is refused and nothing downstream sees it",
         "declare the fields it emits (outputs = ['word', 'count']), or drop the emit if the "
         "component is a sink"),
    Rule("emit-undeclared-stream", E, "emit() to a stream the component does not declare",
         "an emit to a stream name that is not among the component's outputs fails on both "
         "engines: the tuple is refused and nothing downstream sees it",
         "declare the stream (outputs = [Stream(fields=[...], name='NAME')]) or fix the "
         "stream= name of the emit"),
    Rule("run-budget", I, "the short local run stopped at its budget",
         "the short run is bounded (spout tuples and seconds) so that check always reports; "
         "a spout that sleeps or blocks gets fewer tuples through than the bound",
         "nothing; findings that need the run saw only what the short run processed"),
    Rule("direct-emit", W, "direct emit to a task number",
         "a direct emit names the receiving task; code that picks the number from its own "
         "assumptions (a constant, a hash) may pick another task than on Storm",
         "compute targets from context['task->component'], never from constants"),
)
