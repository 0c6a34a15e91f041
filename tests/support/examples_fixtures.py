"""Run an example's components the way Storm does, without Storm or stormshift.

``StormTask`` is one component task driven through pystorm's real multilang
loop: Storm's handshake and commands are written as JSON messages into the
component's input stream and its replies are read back from its output
stream, so the user's class runs under pystorm exactly as on a Storm worker
(auto-ack, anchoring, logging). Independent of every stormshift layer, it
is the reference the examples' behaviour is checked against.
"""

from __future__ import annotations

import io
import json
import logging
import sys
from collections import deque
from pathlib import Path
from typing import Any, Self

_EXAMPLE_PACKAGES = ("spouts", "bolts", "adgen")


class _Feed(io.RawIOBase):
    """A readable byte stream the test pushes Storm's messages into."""

    def __init__(self) -> None:
        self._chunks: deque[bytes] = deque()

    def readable(self) -> bool:
        return True

    def push(self, msg: Any) -> None:
        self._chunks.append((json.dumps(msg) + "\nend\n").encode("utf-8"))

    def readinto(self, buf) -> int:
        if not self._chunks:
            return 0
        chunk = self._chunks.popleft()
        n = min(len(buf), len(chunk))
        buf[:n] = chunk[:n]
        if n < len(chunk):
            self._chunks.appendleft(chunk[n:])
        return n


class _Sink(io.RawIOBase):
    """A writable byte stream collecting the component's messages."""

    def __init__(self) -> None:
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        self.data += bytes(b)
        return len(b)

    def messages(self) -> list[Any]:
        text, self.data = self.data.decode("utf-8"), bytearray()
        return [json.loads(m) for m in text.split("\nend\n") if m.strip()]


def tuple_msg(tup_id: str, component: str, task: int, values: list) -> dict:
    """Storm's message delivering one tuple to a bolt."""
    return {"id": tup_id, "comp": component, "stream": "default", "task": task, "tuple": values}


class StormTask:
    """One task of a component (``task_ids`` are all tasks of the component)."""

    def __init__(
        self,
        cls: type,
        conf: dict,
        component: str,
        task_ids: list[int],
        task_id: int,
        pid_dir: Path,
    ) -> None:
        self._feed, self._sink = _Feed(), _Sink()
        self.instance = cls(input_stream=self._feed, output_stream=self._sink, rdb_signal=None)
        context = {
            "taskid": task_id,
            "componentid": component,
            "task->component": {str(t): component for t in task_ids},
        }
        self._feed.push({"conf": conf, "context": context, "pidDir": str(pid_dir)})
        handlers = list(logging.getLogger().handlers)
        storm_conf, ctx = self.instance.read_handshake()
        self.instance._setup_component(storm_conf, ctx)
        for handler in logging.getLogger().handlers:  # pystorm adds one per task to root
            if handler not in handlers:
                logging.getLogger().removeHandler(handler)
                handler.close()
        self.instance.initialize(storm_conf, ctx)
        self._sink.messages()  # the pid reply

    def command(self, msg: dict, emits: bool = False) -> Any:
        """Deliver one message; returns the replies (bolts: the ack/fail reply with
        its ``emits`` attached; spouts: the emit messages). StopIteration from a
        spout's ``next_tuple`` propagates (stormshift's end-of-input convention)."""
        self._feed.push(msg)
        self.instance._run()
        replies = [m for m in self._sink.messages() if m.get("command") not in ("log", "sync")]
        out = [m for m in replies if m["command"] == "emit"]
        rest = [m for m in replies if m["command"] != "emit"]
        if "tuple" in msg:  # a bolt: exactly one ack or fail per tuple
            (reply,) = rest
            reply["emits"] = [m["tuple"] for m in out]
            return reply if emits else [reply]
        return out if emits else rest


class ExampleImport:
    """Put an example's ``src/`` first on sys.path; forget its modules on exit.

    Every streamparse project has top-level ``spouts``/``bolts`` packages, so
    one project's modules must not be found when the next one is imported.
    """

    def __init__(self, project: Path) -> None:
        self.src = str(project / "src")

    def __enter__(self) -> Self:
        self._forget()
        sys.path.insert(0, self.src)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.path.remove(self.src)
        self._forget()

    def cls(self, module: str, name: str) -> type:
        return getattr(__import__(module, fromlist=[name]), name)

    @staticmethod
    def _forget() -> None:
        for mod in list(sys.modules):
            if mod.split(".")[0] in _EXAMPLE_PACKAGES:
                del sys.modules[mod]
