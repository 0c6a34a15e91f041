"""Components of the conformance project: plain streamparse spouts and bolts, written as a
Storm team writes them (no stormshift import except where a feature is stormshift's own:
keyed state maps, windows). Every leaf emits what it saw, so the engines' outputs can be
compared with the plain-Python oracle (``tests/conformance/oracle.py``)."""
