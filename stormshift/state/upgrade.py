"""What new code does to a bolt's stored state: kept, added, removed, refused (pure).

Words (``stormshift plan`` prints them; a run applies them before any batch):

- *stored*: a task's committed attributes (its snapshot at the committed txid);
- *fresh*: the attributes a fresh instance of the new code has after ``initialize()``;
- *in code*: every ``self.NAME`` the new class's source mentions (an attribute a bolt
  makes in ``process()`` is not fresh, but is still the code's);
- *kept*: stored and fresh or in code, of a compatible type (the same type; ``None`` on
  either side; ``int`` and ``float``, as a sum started at ``0`` holds floats): restored
  as before (every stored attribute is kept when the class's source cannot be read);
- *added*: fresh, not stored: the value ``initialize()`` made, as every restart did;
- *removed*: stored, neither fresh nor in code: dropped from the state (a warning);
- *refused*: stored and fresh with types the code cannot read (``Counter`` -> ``int``):
  the run stops before any batch, naming the attribute, both types and the fix.

A bolt may declare ``migrate_state(self, old: dict) -> dict | None`` (``MIGRATE_HOOK``):
given a task's stored attributes by name it returns the attributes to restore (``None``:
``old`` as changed in place), for renames and reshapes. It must be idempotent (a restart
before the first batch commits sees the state it already migrated); Flink's state
schema evolution and Kafka Streams' application reset are the anchors.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stormshift.state.tracked import is_tracked, untracked_type

__all__ = ["MIGRATE_HOOK", "Refusal", "TaskChanges", "compare", "merge", "type_name"]

MIGRATE_HOOK = "migrate_state"


@dataclass(frozen=True)
class Refusal:
    """An attribute whose stored type the new code cannot read."""

    name: str
    stored: str
    fresh: str


@dataclass
class TaskChanges:
    """What the new code does to one component's stored state (over all its tasks)."""

    component: str
    tasks: int = 0
    kept: set[str] = field(default_factory=set)
    added: set[str] = field(default_factory=set)
    removed: set[str] = field(default_factory=set)
    refused: dict[str, Refusal] = field(default_factory=dict)
    migrated: bool = False  # the component declares the hook
    rewrite: bool = False  # what a task restores differs from what is stored

    def to_dict(self) -> dict[str, Any]:
        return {"component": self.component, "tasks": self.tasks, "kept": sorted(self.kept),
                "added": sorted(self.added), "removed": sorted(self.removed),
                "refused": [vars(r) for _, r in sorted(self.refused.items())],
                "migrate_state": self.migrated, "rewrite": self.rewrite}


def type_name(value: Any) -> str:
    t = untracked_type(value) if is_tracked(value) else type(value)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _compatible(stored: Any, fresh: Any) -> bool:
    if stored is None or fresh is None:
        return True
    a = untracked_type(stored) if is_tracked(stored) else type(stored)
    b = untracked_type(fresh) if is_tracked(fresh) else type(fresh)
    return a is b or {a, b} <= {int, float}


def compare(changes: TaskChanges, stored: Mapping[str, Any], fresh: Mapping[str, Any],
            in_code: Iterable[str] | None) -> dict[str, Any]:
    """Fold one task's ``stored`` attributes (after the hook) into ``changes``; returns
    what the task restores: ``stored`` without the removed attributes (``in_code`` None:
    the source is unknown, nothing is removed)."""
    code = set(stored if in_code is None else in_code)
    changes.tasks += 1
    keep: dict[str, Any] = {}
    for name, value in stored.items():
        if name in fresh:
            if _compatible(value, fresh[name]):
                changes.kept.add(name)
                keep[name] = value
            else:
                changes.refused.setdefault(
                    name, Refusal(name, type_name(value), type_name(fresh[name])))
        elif name in code:
            changes.kept.add(name)
            keep[name] = value
        else:
            changes.removed.add(name)
    changes.added.update(n for n in fresh if n not in stored)
    return keep


def merge(changes: TaskChanges) -> TaskChanges:
    """``changes`` with an attribute both kept (some tasks) and added (others) as kept."""
    changes.added -= changes.kept
    return changes
