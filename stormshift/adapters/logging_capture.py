"""Per-task loggers whose records land in that task's outbox.

pystorm's ``_setup_component`` adds a ``StormHandler`` to the *root* logger
(so every component in a process would log through every other's pipe) and
may replace ``sys.stdout``. We never call it. Each hosted task instead gets
its own ``logging.Logger`` named ``stormshift.component.<name>``, created
outside the logging manager: it has no parent, so records reach only the
task's ``OutboxHandler`` (never the root handlers), and it is garbage
collected with the host. Levels follow pystorm: ``pystorm.log.level``
(default info), DEBUG when ``topology.debug`` is true.

The default format has no timestamp, so captured logs are deterministic.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

STORM_LEVEL_NAMES = {0: "TRACE", 1: "DEBUG", 2: "INFO", 3: "WARN", 4: "ERROR"}
_PY_TO_STORM = {
    logging.CRITICAL: "ERROR",
    logging.ERROR: "ERROR",
    logging.WARNING: "WARN",
    logging.INFO: "INFO",
    logging.DEBUG: "DEBUG",
}
_PY_LEVELS = {
    "critical": logging.CRITICAL,
    "error": logging.ERROR,
    "warning": logging.WARNING,
    "warn": logging.WARNING,
    "info": logging.INFO,
    "debug": logging.DEBUG,
    "trace": logging.DEBUG,
}
DEFAULT_FORMAT = "%(name)s - %(message)s"


def storm_level_name(levelno: int) -> str:
    if levelno in _PY_TO_STORM:
        return _PY_TO_STORM[levelno]
    if levelno >= logging.ERROR:
        return "ERROR"
    if levelno >= logging.WARNING:
        return "WARN"
    if levelno >= logging.INFO:
        return "INFO"
    return "DEBUG" if levelno >= logging.DEBUG else "TRACE"


class OutboxHandler(logging.Handler):
    """Appends ``(level, formatted message)`` to a list (an outbox's ``logs``)."""

    def __init__(self, sink: list[tuple[str, str]], level: int = logging.NOTSET):
        super().__init__(level)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.sink.append((storm_level_name(record.levelno), self.format(record)))
        except Exception:  # noqa: BLE001 - logging.Handler convention
            self.handleError(record)


def component_logger(
    component: str, sink: list[tuple[str, str]], conf: Mapping[str, Any]
) -> logging.Logger:
    """A parentless logger for one task, writing into ``sink``."""
    logger = logging.Logger(f"stormshift.component.{component}")  # noqa: LOG001 - parentless on purpose
    logger.propagate = False
    level = _PY_LEVELS.get(str(conf.get("pystorm.log.level", "info")).lower(), logging.INFO)
    if conf.get("topology.debug"):
        level = logging.DEBUG
    handler = OutboxHandler(sink, level)
    handler.setFormatter(logging.Formatter(conf.get("pystorm.log.format", DEFAULT_FORMAT)))
    logger.addHandler(handler)
    logger.setLevel(level)
    return logger
