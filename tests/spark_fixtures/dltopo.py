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
