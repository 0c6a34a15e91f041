"""The one input spout: the scenario's rows, from the topology config ``conform.rows``.

It is a *reliable* Storm spout (it keeps emitted tuples until acked and re-emits a failed
one), because Storm's replay on ``fail`` is one of the behaviours the suite checks; it ends
with ``StopIteration`` once every row was emitted and acked (while trees are pending it
emits nothing, as a Storm spout waiting for acks does).
"""

from __future__ import annotations

from streamparse import Spout

#: every conformance topology's config: the rows (set by the harness with ``-o``), and a
#: short idle timeout: on Spark this spout, waiting for acks after its last row, is taken as
#: done after it instead of after the default 10 s (its last acks come after its last batch)
BASE = {"conform.rows": [], "stormshift.idle_timeout_secs": 1}


class RowSpout(Spout):
    """Emits each row of ``conform.rows`` (a list of lists) once, msg id = its position."""

    outputs = ["n", "key"]

    def initialize(self, conf, ctx):
        self.rows = [list(row) for row in conf.get("conform.rows", [])]
        self.next_index = 0
        self.pending = {}
        self.replay = []

    def next_tuple(self):
        if self.replay:
            index = self.replay.pop(0)
        elif self.next_index < len(self.rows):
            index = self.next_index
            self.next_index += 1
        elif self.pending:
            return
        else:
            raise StopIteration
        self.pending[index] = True
        self.emit(self.rows[index], tup_id=index)

    def ack(self, tup_id):
        self.pending.pop(int(tup_id), None)

    def fail(self, tup_id):
        index = int(tup_id)
        if index in self.pending:
            self.replay.append(index)
