"""engines/spark/task: what runs inside ONE Spark task (a stage's ``mapInArrow`` on an executor).

Runs in: a Python worker forked by the daemon (``runtime/daemon.py``), once per
task attempt; any attempt may run again (Spark retry, speculative copy, driver
restart), so everything here is a pure function of (state committed at N-1,
input of N) and every write is fenced or idempotent.

- ``stage.py``: ``run_partition``: restore each hosted bolt task (``taskstate.py``),
  execute its chunks of input (a head's: ``headinput.py``) through the per-tuple kernel
  (``adapters/kernel.py``), emit rows for the next stage (``output.py``), commit what it
  wrote in one task transaction (``state/task_txn.py``);
- ``task_host.py``: the long-lived process, one per core slot, that runs a stage task
  handed over by the worker Spark picked (the worker sends the partition's rows and
  yields the host's), so the live instances of ``taskstate.py`` stay where their task
  runs across batches; the host runs ``stage.run_task`` as a worker would;
- ``poison.py``: the dead letter of a tuple that fails (whether to retry, redo or
  dead-letter: ``adapters/retry_policy.py``; whether a member's run stands or is
  redone: ``adapters/attempts.py``);
- ``sink.py``: leaf emits to JSON lines files or a Redis stream (the driver
  parses the ``--sink`` option and reads the files back with it too);
- ``windowing.py``: the batch's recorded time applied to windowed bolts before their
  tuples, ``end_of_input`` in the final batch, their reports to the driver;
- ``counters.py``: each task's counters record (committed with its task
  transaction, read by the driver after the batch's last stage).

Crosses the boundary: IN a pickled ``StageJob`` per stage (the ``layout.Layout``,
txid, namespace, sink, Redis URL) and Arrow rows (``protocol/rows.py``: chunks from the
source's ``read``, an upstream stage or the driver's redrive, or ``READ`` rows
naming spout ranges that ``headinput.py`` reads here through
``../protocol/spoutrange.py``); OUT Arrow rows for the next stage and
Redis writes through ``state/`` (a ``TaskTxn`` per member: epochs and fences,
maps, snapshots, dead letters, the sink marker, stats; attempt counters).
"""
