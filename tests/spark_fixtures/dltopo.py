"""A topology with poison tuples for the dead-letter tests (tests/test_deadletter.py).

``numbers`` emits ``(n, key)`` for n in ``[numbers.start, numbers.limit)``,
key ``k{n % 7}``; every n in ``numbers.dups`` is emitted twice (two identical
tuples, distinct msg ids). ``checker`` (fields grouping on key, so both copies
meet on one task) keeps a running sum per key and emits ``(key, sum)``:

- n == 13 raises ValueError unless ``poison.fixed`` is set (the bug a fix repairs);
- n == 17 is failed with ``self.fail(tup)``;
- n == 19 makes the bolt emit one value on a two-field stream (wrong arity);
- n == 23 raises OSError while the file ``poison.service_file`` (if set) is
  missing: a transient failure, gone once the file exists.

The sum changes *before* the checks that raise: a dead-lettered tuple must
still leave no trace in the sums, and a retried one count once. ``PoisonLines`` is the same bolt behind a replayable
JSON-lines spout (``jsonlines.path``), whose input a later run can extend.
"""

from __future__ import annotations

import os
from collections import Counter

from streamparse import Bolt, Grouping, Spout, Topology

RAISES, FAILS, WRONG_ARITY, TRANSIENT = 13, 17, 19, 23


class Numbers(Spout):
    outputs = ["n", "key"]

    def initialize(self, conf, ctx):
        self.todo = []
        for n in range(int(conf.get("numbers.start", 0)), int(conf.get("numbers.limit", 40))):
            self.todo.append((n, str(n)))
            if n in conf.get("numbers.dups", [RAISES]):
                self.todo.append((n, f"{n}-again"))
        self.todo.reverse()

    def next_tuple(self):
        if not self.todo:
            raise StopIteration
        n, msg_id = self.todo.pop()
        self.emit([n, f"k{n % 7}"], tup_id=msg_id)


class Checker(Bolt):
    outputs = ["key", "total"]

    def initialize(self, conf, ctx):
        self.sums = Counter()

    def process(self, tup):
        n, key = tup.values
        if n == FAILS:
            self.fail(tup)
            return
        # State changes first, then the checks: a tuple that raises after changing
        # state must still leave no trace once dead-lettered (the member is redone).
        self.sums[key] += n
        # The flag is read from the conf, not kept in an attribute: attributes are
        # state, restored from the snapshot (a flag kept there would stay False).
        if n == RAISES and not self.storm_conf.get("poison.fixed", False):
            raise ValueError(f"cannot handle {n} yet")
        service = self.storm_conf.get("poison.service_file")
        if n == TRANSIENT and service and not os.path.exists(service):
            raise OSError(f"service down ({service} missing)")
        if n == WRONG_ARITY:
            self.emit([key])
            return
        self.emit([key, self.sums[key]])


class Poison(Topology):
    config = {"numbers.start": 0, "numbers.limit": 40, "numbers.dups": [RAISES], "poison.fixed": False}
    numbers = Numbers.spec(par=1)
    checker = Checker.spec(inputs={numbers: Grouping.fields("key")}, par=2)


from stormshift.spouts.jsonlines import JsonLinesSpout


class NumberLines(JsonLinesSpout):
    """Replayable: lines {"n": .., "key": ..} from ``jsonlines.path``."""

    outputs = ["n", "key"]


class PoisonLines(Topology):
    config = {"jsonlines.fields": ["n", "key"], "jsonlines.bounded": True, "poison.fixed": False}
    numbers = NumberLines.spec(par=1)
    checker = Checker.spec(inputs={numbers: Grouping.fields("key")}, par=2)


class PoisonLinesLocal(Topology):
    """PoisonLines with a shuffle grouping of the spout's par: ``checker`` runs on the source's
    partitions, except in a batch that redrives dead letters to it (those need a shuffle).
    One task each, so a key's running sum stays in one task, as with the fields grouping."""

    config = PoisonLines.config
    numbers = NumberLines.spec(par=1)
    checker = Checker.spec(inputs={numbers: Grouping.SHUFFLE}, par=1)


class BadEmitter(Spout):
    """A generic spout emitting ``(n, key)`` for n < ``bademits.limit`` with msg id ``m<n>``:
    n == 7 with one field (wrong arity), n == 11 with a value no codec can keep. Its
    ``fail(msg_id)`` calls are appended to ``bademits.failed_file`` (it runs in Spark's
    planner process, so a file is how a test sees them)."""

    outputs = ["n", "key"]

    def initialize(self, conf, ctx):
        self.n = 0
        self.limit = int(conf.get("bademits.limit", 13))
        self.failed_file = conf.get("bademits.failed_file")

    def next_tuple(self):
        n = self.n
        if n >= self.limit:
            raise StopIteration
        self.n += 1
        if n == 7:
            self.emit([n], tup_id=f"m{n}")
        elif n == 11:
            self.emit([n, object()], tup_id=f"m{n}")
        else:
            self.emit([n, f"k{n % 7}"], tup_id=f"m{n}")

    def fail(self, tup_id):
        if self.failed_file:
            with open(self.failed_file, "a") as fh:
                fh.write(f"{tup_id}\n")


class BadEmits(Topology):
    config = {"poison.fixed": False}
    bademits = BadEmitter.spec(par=1)
    checker = Checker.spec(inputs={bademits: Grouping.fields("key")}, par=2)
