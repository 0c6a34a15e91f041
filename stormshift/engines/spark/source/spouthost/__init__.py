"""engines/spark/source/spouthost: the spout host process, one per spout task and executor.

Runs in: a long-lived process of its own, started detached by the first read
that needs it (``python -m`` ``read/host_client.HOST_MODULE``; its life --
socket, owner, idle exit -- is ``runtime/hosts.py``). ``spout_host.py`` keeps an
executor-side spout task's live instance at the log's head for every Python
worker of the executor, and runs the read's own catch-up and chunk code
(``../live_spout.py``) on it.

Crosses the boundary: msgpack frames over a Unix socket from the workers
(``../host_wire.py``, both ends; the workers' side is ``../read/host_client.py``); Redis reads of the chunk log to
settle a chunk (``records/chunks.py``). It writes no log: the worker that asked does.
"""
