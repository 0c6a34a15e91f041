"""Building a user's pystorm component in-process, safely.

pystorm components are made to own a process: their constructor wraps
stdin/stdout, may install a SIGUSR1 handler, ``_setup_component`` adds a
handler to the root logger and may replace ``sys.stdout``, and
``TicklessBatchingBolt`` starts a background thread. Here:

- streams are private ``BytesIO`` objects and ``rdb_signal=None``;
- ``_setup_component`` is never called: ``setup_instance`` sets the same
  attributes (``topology_name``, ``task_id``, ``component_name``, ``debug``,
  ``storm_conf``, ``context``, ``logger``, ``pid``, and for bolts
  ``_source_tuple_types``) with a per-task logger;
- a ``TicklessBatchingBolt`` gets no batcher thread and no signal handler;
  the engine drives its batches (``BoltHost.flush_tickless``).
"""

from __future__ import annotations

import importlib
import inspect
import io
import os
import signal
import threading
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import pystorm.bolt

from stormshift.adapters.logging_capture import component_logger
from stormshift.errors import TopologyError


def import_class(class_path: str, source_dirs: Sequence[str], component: str) -> type:
    """The user's class for ``class_path`` (``module.ClassName``)."""
    try:
        from stormshift.topology.loader import import_component_class
    except ImportError:  # loader not importable: same job, minimal version
        pass
    else:
        return import_component_class(class_path, source_dirs)
    from stormshift.topology.sources import use_sources

    use_sources(source_dirs)
    module_name, _, class_name = class_path.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), class_name)  # type: ignore[no-any-return]
    except (ImportError, AttributeError) as exc:
        raise TopologyError(
            f"cannot import {class_path!r}: {exc}",
            component=component,
            fix=f"make sure {module_name!r} is importable from {list(source_dirs)}",
        ) from exc


def _user_defines(cls: type, name: str) -> bool:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__module__.split(".")[0] not in ("pystorm", "streamparse", "builtins")
    return False


def _streams() -> dict[str, Any]:
    return {"input_stream": io.BytesIO(), "output_stream": io.BytesIO(), "rdb_signal": None}


def _accepts_streams(cls: type) -> bool:
    try:
        params = inspect.signature(cls.__init__).parameters.values()  # type: ignore[misc]
    except (TypeError, ValueError):
        return True
    names = {p.name for p in params}
    return any(p.kind is p.VAR_KEYWORD for p in params) or {"input_stream", "rdb_signal"} <= names


def construct(cls: type, component: str, *, tickless: bool = False) -> Any:
    """An instance of the user's component class, without process side effects
    (``tickless``: a TicklessBatchingBolt, from its capabilities)."""
    if tickless:
        return _construct_tickless(cls, component)
    if _accepts_streams(cls):
        return cls(**_streams())
    return _construct_on_stdio(cls, component)


def _construct_on_stdio(cls: type, component: str) -> Any:
    """A user ``__init__(self)`` gets pystorm's defaults (stdio, SIGUSR1): undo them."""
    if threading.current_thread() is not threading.main_thread():
        raise TopologyError(
            f"{cls.__qualname__}.__init__ takes no stream arguments, so pystorm would install "
            "a signal handler, which only works on the main thread",
            component=component,
            fix="accept and pass on *args, **kwargs: def __init__(self, *args, **kwargs): "
            "super().__init__(*args, **kwargs)",
        )
    previous = signal.getsignal(signal.SIGUSR1)
    try:
        instance = cls()
    finally:
        signal.signal(signal.SIGUSR1, previous)
    _off_stdio(instance)
    return instance


def _off_stdio(instance: Any) -> None:
    """Give the instance private streams; never close the process's stdio."""
    serializer: Any = getattr(instance, "serializer", None)
    for name in ("input_stream", "output_stream"):
        wrapper = getattr(serializer, name, None)
        if isinstance(wrapper, io.TextIOWrapper):
            wrapper.detach()
    instance.serializer = type(serializer)(
        io.BytesIO(), io.BytesIO(), instance._reader_lock, instance._writer_lock
    )


def _construct_tickless(cls: type, component: str) -> Any:
    instance: Any = object.__new__(cls)
    if not _user_defines(cls, "__init__"):
        pystorm.bolt.BatchingBolt.__init__(instance, **_streams())
        instance.exc_info = None
        instance._batch_lock = threading.RLock()
        instance._batcher = None
        return instance
    # The user's __init__ chains into TicklessBatchingBolt.__init__, which
    # installs a SIGUSR1 handler and starts the batcher thread. Give the thread
    # a no-op body (it ends at once, so it can never emit) and put the signal
    # handler and the thread name back.
    if threading.current_thread() is not threading.main_thread():
        raise TopologyError(
            f"{cls.__qualname__} (a TicklessBatchingBolt) defines __init__, which can only be "
            "run on the main thread (pystorm installs a signal handler there)",
            component=component,
            fix="move the setup in __init__ to initialize(self, conf, ctx)",
        )
    previous = signal.getsignal(signal.SIGUSR1)
    thread_name = threading.current_thread().name
    instance._batch_entry = lambda: None
    try:
        if _accepts_streams(cls):
            cls.__init__(instance, **_streams())  # type: ignore[misc]
        else:
            cls.__init__(instance)  # type: ignore[misc]
            _off_stdio(instance)
    finally:
        signal.signal(signal.SIGUSR1, previous)
        threading.current_thread().name = thread_name
        del instance._batch_entry
    batcher = getattr(instance, "_batcher", None)
    if batcher is not None:
        batcher.join()
    instance._batcher = None
    return instance


def setup_instance(
    instance: Any,
    component: str,
    conf: dict[str, Any],
    context: dict[str, Any],
    logs_sink: list[tuple[str, str]],
    source_tuple_types: Mapping[tuple[str, str], type] | None = None,
) -> None:
    """What pystorm's ``_setup_component`` sets, minus its process-wide effects."""
    instance.topology_name = conf.get("topology.name", "")
    instance.task_id = context["taskid"]
    instance.component_name = component
    instance.debug = conf.get("topology.debug", False)
    instance.storm_conf = conf
    instance.context = context
    instance.pid = os.getpid()
    instance.logger = component_logger(component, logs_sink, conf)
    if source_tuple_types is not None:
        types: defaultdict[str, dict[str, type]] = defaultdict(dict)
        for (source, stream), vtype in source_tuple_types.items():
            types[source][stream] = vtype
        instance._source_tuple_types = types
