"""The Spark engine's data plane in C: its rows' wire, compiled where the install built it.

Runs wherever rows are read or written (a Spark task's ``mapInArrow``; no process of its
own). The pure truth stays beside the code that calls it, ``protocol/rows.py`` (the row
format) and ``task/output.py`` (a member's emits into rows); ``cwire.pyx`` is their compiled
twin, loaded by name (``stormshift.native.load``), never imported. It was the hosting
layer's (``adapters/cwire.pyx``) until the row format, an engine's, was moved here: the
hosting layer keeps only its own loops in C (``adapters/ckernel.pyx``, ``adapters/cemit.pyx``).
"""
