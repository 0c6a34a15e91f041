"""A shadow run's sides record their HTTP and Kafka writes instead of sending them.

A bolt that POSTs to a billing service or produces to a Kafka topic hard-codes its target
as often as one that writes Redis; run on both sides of a shadow, every request would reach
production twice. While the graph's config holds ``stormshift.shadow.scratch_calls`` (a
directory per side), a write the project's own code makes through

- ``requests`` (any method but GET / HEAD / OPTIONS, through ``Session.request``, which every
  ``requests.post(...)`` goes through) or ``urllib.request`` (a request with a body),
- ``confluent_kafka.Producer.produce`` (the project's ``Producer`` is a recording stand-in),

is appended to that directory as one JSON line (``http.jsonl``, ``kafka.jsonl``) and not sent:
a request gets an empty ``200``, a produce its delivery callback. Reads (GET) still go out:
they change nothing. The shadow compares the two sides' lines like any output
(``dump_calls``). Other clients (``aiohttp``, ``httpx``, raw sockets) are not redirected,
and a shadow refuses to start on them unless ``--allow-external-writes``.

Appends are one ``os.write`` of a line to an ``O_APPEND`` file: whole lines from any number of
worker processes.
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
from collections import Counter
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

from stormshift.topology.graph import TopologyGraph

__all__ = ["SCRATCH_CALLS_KEY", "dump_calls", "from_project", "record_calls", "record_calls_for"]

SCRATCH_CALLS_KEY = "stormshift.shadow.scratch_calls"
_READS = frozenset({"GET", "HEAD", "OPTIONS"})
_lock = threading.Lock()
_target: dict[str, Any] = {}  # "dir", "roots"
_installed: list[str] = []


def from_project(roots: tuple[str, ...]) -> bool:
    """Whether a frame of the calling stack runs a file under ``roots`` (the project's own
    code asked, directly or through a library): the Redis and the HTTP redirects' test."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if os.path.realpath(frame.f_code.co_filename).startswith(roots):
            return True
        frame = frame.f_back
    return False


def _active() -> dict[str, Any] | None:
    target = dict(_target)
    return target if target and from_project(target["roots"]) else None


def _append(directory: str, name: str, record: dict[str, Any]) -> None:
    os.makedirs(directory, exist_ok=True)
    line = (json.dumps(record, sort_keys=True, default=str) + "\n").encode()
    fd = os.open(os.path.join(directory, name), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _body(data: Any, js: Any = None) -> Any:
    """A request body as comparable data: JSON as its value (key order aside), else text."""
    if js is not None:
        return js
    if data is None:
        return None
    if isinstance(data, dict):
        return {str(k): v for k, v in sorted(data.items())}
    raw = data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _install_requests() -> None:
    try:
        import requests
        from requests.models import Response
    except ImportError:
        return
    original = requests.sessions.Session.request

    def request(self: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        target = _active() if str(method).upper() not in _READS else None
        if target is None:
            return original(self, method, url, *args, **kwargs)
        data = kwargs.get("data", args[1] if len(args) > 1 else None)
        _append(target["dir"], "http.jsonl", {"method": str(method).upper(), "url": str(url),
                                              "body": _body(data, kwargs.get("json"))})
        response = Response()
        response.status_code, response.url, response._content = 200, str(url), b""
        response.raw = io.BytesIO(b"")
        return response

    requests.sessions.Session.request = request  # type: ignore[method-assign,assignment]


def _install_urllib() -> None:
    import email.message
    import urllib.request
    import urllib.response

    original = urllib.request.OpenerDirector.open

    def open_(self: Any, fullurl: Any, data: Any = None, *args: Any, **kwargs: Any) -> Any:
        request = fullurl if isinstance(fullurl, urllib.request.Request) else None
        body = data if data is not None else (request.data if request is not None else None)
        method = (request.get_method() if request is not None
                  else ("POST" if body is not None else "GET"))
        target = _active() if method.upper() not in _READS else None
        if target is None:
            return original(self, fullurl, data, *args, **kwargs)
        url = request.full_url if request is not None else str(fullurl)
        _append(target["dir"], "http.jsonl", {"method": method.upper(), "url": url,
                                              "body": _body(body)})
        return urllib.response.addinfourl(io.BytesIO(b""), email.message.Message(), url, 200)

    urllib.request.OpenerDirector.open = open_  # type: ignore[method-assign]


class ScratchProducer:
    """``confluent_kafka.Producer`` for a shadow side: ``produce`` records the message and
    calls its delivery callback at the next ``poll`` / ``flush``; nothing is sent."""

    def __init__(self, config: Any = None, **kwargs: Any) -> None:
        self._pending: list[tuple[Any, dict[str, Any]]] = []

    def produce(self, topic: str, value: Any = None, key: Any = None, *args: Any,
                **kwargs: Any) -> None:
        target = dict(_target)
        record = {"topic": topic, "key": _body(key), "value": _body(value)}
        if target:
            _append(target["dir"], "kafka.jsonl", record)
        callback = kwargs.get("on_delivery") or kwargs.get("callback")
        if callback is not None:
            self._pending.append((callback, record))

    def poll(self, timeout: float | None = None) -> int:
        done, self._pending = self._pending, []
        for callback, _ in done:
            callback(None, None)
        return len(done)

    def flush(self, timeout: float | None = None) -> int:
        self.poll(timeout)
        return 0

    def __len__(self) -> int:
        return len(self._pending)

    def __reduce__(self) -> Any:
        """Unpicklable like the real producer, so a bolt's state leaves it out alike on both
        sides (the engines snapshot picklable attributes only)."""
        raise TypeError("cannot pickle 'cimpl.Producer' object")


def _swap_producers(roots: tuple[str, ...]) -> None:
    """Every project module's ``Producer`` name bound to confluent_kafka's, and the module's
    own attribute, now the stand-in (the class is a C type: its methods cannot be patched)."""
    kafka: Any = sys.modules.get("confluent_kafka")
    if kafka is None:  # imported later by the project's module (a Spark worker's first task)
        try:
            import confluent_kafka as kafka
        except ImportError:
            return
    real = getattr(kafka, "_stormshift_real_producer", None) or getattr(kafka, "Producer", None)
    kafka._stormshift_real_producer = real
    kafka.Producer = ScratchProducer
    for module in _project_modules(roots):
        for name, value in list(module.__dict__.items()):
            if value is real:
                setattr(module, name, ScratchProducer)


def _project_modules(roots: tuple[str, ...]) -> list[ModuleType]:
    out = []
    for module in list(sys.modules.values()):
        path = _module_file(module)
        if path and os.path.realpath(path).startswith(roots):
            out.append(module)
    return out


def _module_file(module: Any) -> str | None:
    if not isinstance(module, ModuleType):
        return None
    try:
        path = getattr(module, "__file__", None)
    except Exception:  # noqa: BLE001 - a lazy module may raise on any attribute
        return None
    return path if isinstance(path, str) else None


def _restore_producers(roots: tuple[str, ...]) -> None:
    kafka: Any = sys.modules.get("confluent_kafka")
    real = getattr(kafka, "_stormshift_real_producer", None) if kafka is not None else None
    if real is None:
        return
    kafka.Producer = real
    for module in _project_modules(roots):
        for name, value in list(module.__dict__.items()):
            if value is ScratchProducer:
                setattr(module, name, real)


def record_calls(directory: str | None, roots: tuple[str, ...] = ()) -> None:
    """From now on (``directory``) or no longer (None), the project's HTTP and Kafka writes in
    this process are recorded there instead of sent."""
    with _lock:
        if directory is None:
            if _target:
                _restore_producers(_target["roots"])
            _target.clear()
            return
        roots = tuple(os.path.realpath(r).rstrip(os.sep) + os.sep for r in roots if r)
        _target.update(dir=directory, roots=roots)
        if not _installed:
            _install_requests()
            _install_urllib()
            _installed.append("http")
        _swap_producers(roots)


def record_calls_for(graph: TopologyGraph) -> bool:
    """``record_calls`` as the graph's config says (its ``SCRATCH_CALLS_KEY``)."""
    directory = (graph.config or {}).get(SCRATCH_CALLS_KEY)
    if not directory:
        if _target:
            record_calls(None)
        return False
    roots = [*getattr(graph, "source_dirs", ()), getattr(graph, "project_dir", None) or ""]
    record_calls(directory, tuple(r for r in roots if r))
    return True


def dump_calls(directory: str, kind: str) -> dict[str, int]:
    """A side's recorded ``kind`` ("http" or "kafka") writes as ``LINE`` -> how many times
    (the order they arrived in is no part of what they did): ``METHOD URL BODY`` or
    ``TOPIC[KEY] VALUE``."""
    out: Counter[str] = Counter()
    path = Path(directory, f"{kind}.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    for line in lines:
        record = json.loads(line)
        if kind == "http":
            out[f"{record['method']} {record['url']} {json.dumps(record['body'], sort_keys=True)}"] += 1
        else:
            key, value = (json.dumps(record[k], sort_keys=True) for k in ("key", "value"))
            out[f"{record['topic']}[{key}] {value}"] += 1
    return dict(sorted(out.items()))
