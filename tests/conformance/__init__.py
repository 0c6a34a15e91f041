"""The engine-conformance suite: Storm features as data, on both engines, against oracles.

``scenarios/*.json`` (a topology of ``projects/features``, an input, the checks) are run
on the local engine (Storm semantics) and on Spark (``local[2]``, shared session), batch
cuts varied by a printed seed, and compared with ``oracle.py`` (plain Python, no engine).
Run it with ``pytest -m conformance``; ``harness.py`` says how a run becomes a view.
"""
