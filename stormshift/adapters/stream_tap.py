"""The bolt a shadow taps a stream with: it re-emits each tuple it reads, unchanged.

Added to the graph both sides of a shadow run (``shadow/tap.py`` says why);
here, beside the other classes the engines host, because engines and the
shadow read what a component can do from its definition, never import its
class (``tests/test_code_quality.py``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from streamparse import Bolt

__all__ = ["StreamTap"]


class StreamTap(Bolt):  # type: ignore[misc]
    """Re-emits each tuple it reads, unchanged, on its leaf stream."""

    outputs: ClassVar[list[str]] = []  # declared per tap in the graph (the stream's fields)

    def process(self, tup: Any) -> None:
        self.emit(list(tup.values))
