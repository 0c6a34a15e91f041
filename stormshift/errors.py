"""Every error stormshift raises on purpose.

Messages name the component, what was expected, what came, and the fix, so a
user porting a topology never has to read a traceback from inside Spark. Two live beside
what they format and are re-exported here on first use (``RedisOutage``: the outage
policy's line; ``RecordDecodeError``: a source record's position), so ``errors`` imports
nothing of the package.
"""

from __future__ import annotations

from typing import Any

_BESIDE = {"RedisOutage": "stormshift.state.outage", "RecordDecodeError": "stormshift.spouts.values"}


def __getattr__(name: str) -> Any:
    if name in _BESIDE:
        import importlib

        return getattr(importlib.import_module(_BESIDE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class StormshiftError(Exception):
    """Base of all stormshift errors."""


class RunFailedError(StormshiftError):
    """A run that started and then failed (e.g. the Spark streaming query died).

    Distinct from errors raised before anything ran: ``stormshift run`` exits 5
    for it, 2 for those.
    """


class TopologyError(StormshiftError):
    """A topology that cannot run as declared (raised at load time).

    ``component`` names the offending component (None for topology-wide
    problems); ``fix`` says what to change.
    """

    def __init__(self, message: str, *, component: str | None = None, fix: str | None = None):
        self.component = component
        self.fix = fix
        text = f"component {component!r}: {message}" if component else message
        if fix:
            text = f"{text}\n  fix: {fix}"
        super().__init__(text)


class MissingPackageError(TopologyError):
    """The user's code imports a package that is not installed here (or a module or name
    the installed version lacks). ``package`` is the top-level import name, ``file`` and
    ``line`` the import statement in the user's project (None / 0 when not located),
    ``summary`` the message without the location."""

    def __init__(self, message: str, *, package: str, file: str | None, line: int, fix: str,
                 summary: str = ""):
        super().__init__(message, fix=fix)
        self.package = package
        self.summary = summary or message
        self.file = file
        self.line = line
        self.detail = message


class TupleError(StormshiftError):
    """A tuple that cannot be delivered: wrong arity, unencodable value, ...

    Carries enough to dead-letter it: component, stream, values, reason.
    """

    def __init__(self, message: str, *, component: str, stream: str = "default", values: object = None):
        self.component = component
        self.stream = stream
        self.values = values
        self.msg_id: object = None  # a spout's tup_id, when a spout emitted it
        super().__init__(f"component {component!r}, stream {stream!r}: {message}")


class ComponentFailure(StormshiftError):
    """A user component raised while handling one call (``process``, ``next_tuple``...).

    ``where`` is the user's callable as ``module:line``; ``location`` the deepest
    frame in the user's project as ``file:line in function`` (relative to the
    project), with the library frame that raised beside it (``adapters/location.py``); ``traceback_text`` is
    the formatted traceback of the original exception (kept for dead letters).
    """

    def __init__(
        self,
        *,
        component: str,
        task: int,
        call: str,
        cause: BaseException,
        where: str,
        traceback_text: str,
        tup: object = None,
        location: str = "",
    ):
        self.component = component
        self.task = task
        self.call = call
        self.cause = cause
        self.where = where
        self.traceback_text = traceback_text
        self.tup = tup
        self.location = location  # the user's file:line in function (engines/problems.py)
        super().__init__(
            f"component {component!r} task {task}: {call}() raised "
            f"{type(cause).__name__}: {cause} "
            f"(at {location if location and location != 'unknown' else where})"
        )


class KeyedFusionError(StormshiftError):
    """A bolt fused by key (``stormshift.fuse.keyed``) was sent an emit its running task
    must not take: the batch fails (one line: the bolt, the values, the fix)."""


class FencedError(StormshiftError):
    """A write from a stale task attempt (zombie) or for an already-committed txid.

    Never retried: the attempt that gets it must stop; its successor owns the task.
    """


class StateError(StormshiftError):
    """State in Redis that cannot be used as asked (unknown checkpoint, bad snapshot, ...)."""


class SourceDataLostError(TopologyError):
    """Records a query still had to read are gone from its source (e.g. Kafka retention
    deleted an offset range before it was read). Never skipped silently: the message
    names the records lost, ``fix`` what to do."""


class InfraError(StormshiftError):
    """The infrastructure a command needs is not usable as given (Redis unreachable or
    refusing the password, a checkpoint directory that cannot be written, Java missing, a
    Spark master that does not answer, a topology's state taken over by another): found
    before anything ran, one line with the fix, exit 2."""


class LeaseHeldError(InfraError):
    """Another live run holds the namespace's lease (``state/lease.py``): a second run, a
    ``--reset-state`` or a ``state reset`` beside it is refused before it writes anything
    (exit 2); the message names the live run and how to stop it."""


class LeaseLostError(StormshiftError):
    """This run's lease of its namespace was taken over (``run --takeover``): the run
    stopped without committing anything after that (``stormshift run`` exits 6)."""


class TaskHostError(StormshiftError):
    """The task host failed the task (its error) or died while running it."""


class SpoutNotDeterministic(StormshiftError):
    """A fresh instance of an executor-side spout did not re-emit what its log holds."""


class ShadowRefused(StormshiftError):
    """The shadow must not run: a component writes outside the framework (exit 2)."""


class LegacyMappingError(StormshiftError):
    """``shadow.legacy`` cannot be read, or a legacy record does not fit it."""


class EndOfInput(StormshiftError):
    """Raised by a spout's ``next_tuple`` when its bounded input is used up.

    ``StopIteration`` means the same. The host sets ``exhausted`` and the
    engine stops calling ``next_tuple`` once in-flight tuples are done.
    """


class OptionError(StormshiftError):
    """A value the user gave is not understood: a command-line option, a ``-o`` setting or
    a topology config entry (a sink, an input, a shadow's result spec, a time, a port).
    The message names the option and the forms it takes."""


class NotFoundError(StormshiftError):
    """What a command reads is not there: a run's metrics record, a checkpoint's state key,
    the port's sink, a source stream or range. The message says where it looked and what
    to name instead."""


class CutoverRefused(StormshiftError):
    """``stormshift cutover`` / ``handback`` refused before writing anything (already cut
    over, a checkpoint of an earlier query, a source that cannot start at the legacy's
    position, a port that did not stop); the message says how to go on."""


class MigrationError(StormshiftError):
    """A component's state-upgrade hook raised or returned something it must not."""


class SpoutReadError(StormshiftError):
    """An executor's read of a spout's chunk failed (the chunk vanished, or the spout host
    died emitting it); Spark retries the read, which reads or emits it again."""


class WindowConfigError(StormshiftError, ValueError):
    """A windowed bolt's windows, triggers or watermark declared in a way that cannot run
    (raised when the bolt is declared or built); the message says the fix. Also a
    ``ValueError``, as these were."""


class FaultSpecError(StormshiftError, ValueError):
    """A fault-injection spec (the local engine's ``faults``, the Spark engine's
    ``STORMSHIFT_FAULTS``) that names no valid point, component, task or action. Also a
    ``ValueError``, as these were."""


class StateFormatError(StateError, ValueError):
    """State written in a format this stormshift cannot read (a newer snapshot, delta or
    windowing format, an unknown value encoding): upgrade stormshift or reset the state.
    Also a ``ValueError``, as these were."""
