"""The protocol every shared task store implements, and the rules all of them share.

`TaskStore` is the interface: `transact(operation)` runs one `TaskContext` operation on the
stored list under a lock that holds across processes and saves what it changed, all or nothing;
`read()` returns a snapshot. A backend only holds its lock and yields the stored list (a
session), then stores a `TaskChange` inside it: `run_operation` copies the list, runs the
operation and checks the change before the backend sees it, so every backend behaves the same.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic_core import PydanticSerializationError

from replan.state.tasks import Task, TaskContext, TaskError

T = TypeVar("T")


class TaskStoreCorruptError(TaskError):
    """The stored list could not be read; nothing was changed."""


class TaskStoreUnavailableError(TaskError):
    """The store's folder or database cannot be used right now; nothing was changed."""


@runtime_checkable
class TaskStore(Protocol):
    """A shared task list: one operation at a time, across threads, processes and machines."""

    @property
    def location(self) -> str:
        """Where the list lives, for messages ("shared task folder ./tasks")."""
        ...

    def read(self) -> TaskContext:
        """The current task list (a snapshot; changing it does not change the store)."""
        ...

    def transact(self, operation: Callable[[TaskContext], T]) -> T:
        """Run `operation` on the stored list under the store's lock, then save what changed.

        If `operation` raises, or leaves a task that cannot be stored, nothing is saved.
        Raises TaskStoreCorruptError for a damaged list, TaskStoreUnavailableError when the
        store cannot be reached.
        """
        ...


@dataclass(frozen=True)
class TaskChange:
    """What one operation changed, checked to be storable: the whole write, or nothing."""

    written: dict[str, dict[str, Any]]  # task ID -> the task as JSON-ready data
    deleted: list[str]
    high_watermark: int
    watermark_changed: bool

    @property
    def empty(self) -> bool:
        return not (self.written or self.deleted or self.watermark_changed)

    @classmethod
    def between(cls, before: TaskContext, after: TaskContext) -> TaskChange:
        """The change from `before` to `after`; TaskError if `after` holds what cannot be stored."""
        written, deleted = before.tasks.changes_to(after.tasks)
        if after.high_watermark < before.high_watermark:
            raise TaskError("The high watermark cannot go down: IDs are never reused. Not saved.")
        watermark = max(after.high_watermark, *(int(task.id) for task in written), 0)
        return cls(
            written={task.id: storable(task) for task in written},
            deleted=deleted,
            high_watermark=watermark,
            watermark_changed=watermark != before.high_watermark,
        )


def run_operation(
    session: AbstractContextManager[TaskContext],
    save: Callable[[TaskChange, TaskContext], None],
    operation: Callable[[TaskContext], T],
) -> T:
    """A backend's `transact`: run `operation` on a copy of the list `session` yields (under the
    store's lock), then `save` what it changed inside the session.

    `save` gets the change and the list it leads to. An exception in `operation`, in the check
    or in `save` leaves the session by raising, and the backend saves nothing.
    """
    with session as stored:
        context = stored.clone()
        result = operation(context)
        change = TaskChange.between(stored, context)
        if not change.empty:
            save(change, context)
        return result


def snapshot(context: TaskContext) -> TaskContext:
    """The operation a backend's `read` runs: the list as it is (`transact` gives a copy)."""
    return context


def storable(task: Task) -> dict[str, Any]:
    """`task` as JSON-ready data, after checking every field's type; TaskError if it is not.

    Operations on a `TaskContext` validate their input, but `transact` runs any callable.
    """
    try:
        data = Task.model_validate(dict(task)).model_dump(mode="json")
        json.dumps(data, ensure_ascii=False).encode("utf-8")  # lone surrogates have no encoding
    except (ValueError, TypeError, PydanticSerializationError) as error:
        raise TaskError(
            f"Task #{task.id} cannot be stored ({first_line(error)}). Nothing was changed."
        ) from error
    return data


def unavailable(location: str, error: Exception) -> TaskStoreUnavailableError:
    """The error for a store at `location` that cannot be reached (`error` says why)."""
    problem = " ".join(str(error).split())  # one line, whatever the driver says
    return TaskStoreUnavailableError(
        f"The {location} cannot be used ({problem}). Nothing was changed; tell the "
        "user, since retrying will not help until it is fixed."
    )


def first_line(error: Exception) -> str:
    """The first line of `error`'s message, or its type's name when it has none."""
    return str(error).splitlines()[0] if str(error) else type(error).__name__
