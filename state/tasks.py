"""Tasks and the task list: typed data and the operations an agent (or application code) runs on it.

Everything here is plain Python over pydantic models; nothing imports LangGraph. Every mutating
operation is atomic: it checks all of its inputs and builds the new list first, and only then
replaces the context's list, so a call that raises leaves the context exactly as it was.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler, GetPydanticSchema
from pydantic_core import CoreSchema, core_schema

from replan.state.clock import utc_now
from replan.state.task_graph import cycle_through
from replan.state.task_table import TaskTable

TaskStatus = Literal["pending", "in_progress", "completed"]
"""The status a stored task has."""
UpdateStatus = Literal[TaskStatus, "deleted"]
"""The statuses an update may set: a task's statuses, or "deleted" to remove it."""
TASK_STATUSES: tuple[str, ...] = get_args(TaskStatus)
UPDATE_STATUSES: tuple[str, ...] = get_args(UpdateStatus)
DELETED = UPDATE_STATUSES[-1]  # "deleted": the update status that removes the task

MAX_TASK_ID_DIGITS = 18  # IDs stay below 2**63: they fit a 64-bit integer column
WRITTEN_TASK_ID = re.compile(r"\s*(?:task\s*)?#?\s*(\S*?)\s*", re.IGNORECASE)
"""A task ID as models write it; group 1 is the ID itself, checked against TASK_ID."""
TASK_ID = re.compile(rf"[1-9][0-9]{{0,{MAX_TASK_ID_DIGITS - 1}}}")  # use fullmatch


class TaskError(ValueError):
    """A task operation was refused; the message says why and what to do instead."""


class Task(BaseModel):
    """One unit of planned work: an immutable value.

    Operations build a new Task instead of changing one, so task lists can share tasks. Assigning
    a field raises; treat `blocks`, `blocked_by` and `metadata` as read-only too.
    """

    model_config = ConfigDict(frozen=True)

    id: str = Field(pattern=rf"^{TASK_ID.pattern}$", description="Numeric ID, unique in its list.")
    subject: str = Field(min_length=1, description="Short imperative title.")
    description: str = Field(default="", description="What to do and how to tell it is done.")
    status: TaskStatus = "pending"
    active_form: str | None = Field(
        default=None, description="Present-continuous label shown while in progress."
    )
    owner: str | None = Field(default=None, description="Agent or person working on it.")
    blocks: list[str] = Field(default_factory=list, description="IDs waiting for this task.")
    blocked_by: list[str] = Field(default_factory=list, description="IDs this task waits for.")
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: str = Field(default_factory=utc_now, description="ISO-8601, UTC.")

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Task:
        """A full copy, about 3x faster than pydantic's generic one.

        LangGraph's ToolNode deep-copies every Command a tool returns, so this is on the hot
        path of every task tool call.
        """
        return self.model_copy(
            update={
                "blocks": [*self.blocks],
                "blocked_by": [*self.blocked_by],
                "metadata": copy.deepcopy(self.metadata, memo) if self.metadata else {},
            }
        )


@dataclass(frozen=True)
class TaskUpdateResult:
    """What an update did: the fields it changed, and whether it deleted or cleared tasks."""

    task_id: str
    changed: tuple[str, ...] = ()
    deleted: bool = False
    cleared: bool = False


def parse_task_id(value: object) -> str:
    """Return `value` as a canonical task ID, or raise TaskError naming the bad value.

    The forms small models write for task 3 ("#3", "Task #3", "task3") are read as "3"."""
    written = WRITTEN_TASK_ID.fullmatch(str(value)) if isinstance(value, str | int) else None
    text = written[1] if written else None
    if text is None or not TASK_ID.fullmatch(text):
        raise TaskError(
            f'{value!r} is not a task ID. IDs are positive whole numbers such as "3"; '
            "call TaskList to see the IDs that exist."
        )
    return text


def _task_table_schema(source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
    """Validate a list of tasks (or take a TaskTable as is); serialize as a list of tasks."""
    items = handler.generate_schema(list[Task])

    def keep_tables(value: Any, validate: core_schema.ValidatorFunctionWrapHandler) -> Any:
        return value if isinstance(value, TaskTable) else validate(value)

    return core_schema.no_info_wrap_validator_function(
        keep_tables,
        core_schema.no_info_after_validator_function(TaskTable, items),
        serialization=core_schema.wrap_serializer_function_ser_schema(
            lambda table, serialize: serialize(list(table)), schema=items
        ),
    )


class TaskContext(BaseModel):
    """A task list and its high watermark, the highest ID ever handed out.

    IDs are never reused: deleting the newest task, or clearing the list, keeps the watermark.
    `tasks` is an immutable `TaskTable` (a sequence in ID order; assigning a list converts it);
    operations replace it, and the tasks in it, instead of changing them. So a copy of a
    context (`clone`, `copy.deepcopy`) shares all tasks and costs the same at any list size,
    and so does each operation (only a dependency check walks the part of the graph it needs).
    """

    model_config = ConfigDict(validate_assignment=True)

    tasks: Annotated[TaskTable[Task], GetPydanticSchema(_task_table_schema)] = Field(
        default_factory=TaskTable
    )
    high_watermark: int = Field(default=0, ge=0)

    def clone(self) -> TaskContext:
        """An independent copy: operations on it never change this context. Constant time."""
        return self.model_copy()

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> TaskContext:
        """The same as `clone`: tasks are immutable values, so copies share them.

        LangGraph's ToolNode deep-copies every Command a tool returns; this keeps that free.
        """
        return self.clone()

    # -- reading -------------------------------------------------------------------------

    def sorted_tasks(self) -> list[Task]:
        """The tasks in numeric ID order (#2 before #10)."""
        return list(self.tasks)

    def get(self, task_id: str) -> Task:
        """The task with this ID; TaskError if the ID is malformed or unknown."""
        return self._existing(task_id)

    def unfinished_ids(self) -> set[str]:
        """IDs of the tasks that are not completed."""
        return {task.id for task in self.tasks if task.status != "completed"}

    def open_blockers(self, task: Task, unfinished: set[str] | None = None) -> list[str]:
        """IDs of the tasks blocking `task` that are not completed yet, in numeric order.

        Pass `unfinished` (from `unfinished_ids`) when asking for many tasks in a row.
        """
        if unfinished is None:
            open_ids = [b for b in task.blocked_by if _is_open(self.tasks.by_id(b))]
        else:
            open_ids = [b for b in task.blocked_by if b in unfinished]
        return sorted(open_ids, key=int)

    # -- changing ------------------------------------------------------------------------

    def create(
        self,
        subject: str,
        description: str = "",
        *,
        active_form: str | None = None,
        owner: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Task:
        """Add a pending task with the next free ID and return it."""
        _check_types(
            subject=subject,
            description=description,
            active_form=active_form,
            owner=owner,
            metadata=metadata,
        )
        if not subject or not subject.strip():
            raise TaskError("A task needs a subject: a short imperative title such as 'Run tests'.")
        next_id = max(self.high_watermark, self.tasks.highest_id()) + 1
        task = Task(
            id=str(next_id),
            subject=subject.strip(),
            description=description,
            active_form=active_form or None,
            owner=owner or None,
            metadata=_without_nulls(metadata or {}),
        )
        self.tasks = self.tasks.with_task(task)
        self.high_watermark = next_id
        return task

    def update(
        self,
        task_id: str,
        *,
        subject: str | None = None,
        description: str | None = None,
        active_form: str | None = None,
        status: str | None = None,
        owner: str | None = None,
        add_blocks: Iterable[str] = (),
        add_blocked_by: Iterable[str] = (),
        metadata: Mapping[str, Any] | None = None,
        clear_when_all_completed: bool = True,
    ) -> TaskUpdateResult:
        """Change the given fields of one task, all or nothing.

        `status="deleted"` deletes the task. `metadata` merges; a None value removes that key.
        `add_blocks` / `add_blocked_by` add dependency edges on both tasks; an edge that exists
        already is skipped, and edges that would form a cycle are refused together. When this
        update completes the last unfinished task, the list is cleared (unless turned off).
        """
        _check_types(
            subject=subject,
            description=description,
            active_form=active_form,
            status=status,
            owner=owner,
            metadata=metadata,
        )
        add_blocks, add_blocked_by = _id_list(add_blocks), _id_list(add_blocked_by)
        task = self._existing(task_id)
        tid = task.id
        if status is not None and status not in UPDATE_STATUSES:
            raise TaskError(
                f"Status {status!r} is not allowed. Use one of: {', '.join(UPDATE_STATUSES)}."
            )
        if status == DELETED:
            self.delete(tid)
            return TaskUpdateResult(task_id=tid, deleted=True)
        if subject is not None and not subject.strip():
            raise TaskError("The subject cannot be empty; leave it out to keep the current one.")
        new_edges = self._new_edges(tid, add_blocks, add_blocked_by)

        changes = _field_changes(
            task,
            subject=subject.strip() if subject is not None else None,
            description=description,
            active_form=active_form,
            status=status,
            owner=owner,
        )
        if metadata:
            merged = _without_nulls({**task.metadata, **metadata})
            if merged != task.metadata:
                changes["metadata"] = merged
        table = self.tasks
        if changes:
            table = table.with_task(Task.model_validate({**dict(task), **changes}))
        for blocker, blocked in new_edges:
            table = _with_edge(table, blocker, blocked)
        changed = list(changes)
        if any(blocker == tid for blocker, _ in new_edges):
            changed.append("blocks")
        if any(blocked == tid for _, blocked in new_edges):
            changed.append("blocked_by")

        cleared = clear_when_all_completed and status == "completed" and table.open_count == 0
        if cleared:  # the watermark already covers every ID, unless the list was seeded above it
            self.high_watermark = max(self.high_watermark, table.highest_id())
        self.tasks = TaskTable() if cleared else table
        return TaskUpdateResult(task_id=tid, changed=tuple(changed), cleared=cleared)

    def delete(self, task_id: str) -> None:
        """Remove a task and every reference to it in other tasks' edges."""
        task = self._existing(task_id)
        table = self.tasks.without(task.id)
        for other_id in {*task.blocks, *task.blocked_by}:
            other = table.by_id(other_id)
            if other is not None:
                table = table.with_task(
                    other.model_copy(
                        update={
                            "blocks": [b for b in other.blocks if b != task.id],
                            "blocked_by": [b for b in other.blocked_by if b != task.id],
                        }
                    )
                )
        self.high_watermark = max(self.high_watermark, int(task.id))
        self.tasks = table

    def add_dependency(self, blocker_id: str, blocked_id: str) -> TaskUpdateResult:
        """Make `blocked_id` wait for `blocker_id` (both sides of the edge are written)."""
        return self.update(blocked_id, add_blocked_by=[blocker_id])

    # -- internals -----------------------------------------------------------------------

    def _existing(self, task_id: object) -> Task:
        tid = parse_task_id(task_id)
        task = self.tasks.by_id(tid)
        if task is None:
            raise TaskError(f"Task #{tid} does not exist. Call TaskList to see the current tasks.")
        return task

    def _successors(self, task_id: str) -> Sequence[str]:
        """The IDs of the tasks waiting for task `task_id` (none when it does not exist)."""
        task = self.tasks.by_id(task_id)
        return task.blocks if task else ()

    def _new_edges(
        self, tid: str, add_blocks: Sequence[str], add_blocked_by: Sequence[str]
    ) -> list[tuple[str, str]]:
        """Validate requested edges (blocker, blocked); return the ones not present yet."""
        requested = [(tid, self._existing(other).id) for other in add_blocks]
        requested += [(self._existing(other).id, tid) for other in add_blocked_by]
        edges: list[tuple[str, str]] = []
        for blocker, blocked in requested:
            if blocker == blocked:
                raise TaskError(f"Task #{tid} cannot depend on itself.")
            if blocked not in self.get(blocker).blocks and (blocker, blocked) not in edges:
                edges.append((blocker, blocked))
        cycle = cycle_through(edges, self._successors)
        if cycle:
            path = " -> ".join(f"#{node}" for node in cycle)
            raise TaskError(
                f"These dependencies would form a cycle ({path} means each waits on the "
                "next, so none could ever start). Nothing was changed; drop the edge that "
                "closes the loop."
            )
        return edges


def _check_types(**values: Any) -> None:
    """Refuse arguments of the wrong type before anything changes (text fields, metadata)."""
    for name, value in values.items():
        if value is None:
            continue
        if name != "metadata":
            if not isinstance(value, str):
                raise TaskError(f"{name} must be text, not {_kind(value)}.")
            continue
        if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
            raise TaskError(f"metadata must be an object with text keys, not {_kind(value)}.")
        try:
            json.dumps(dict(value), allow_nan=False)
        except (TypeError, ValueError) as error:
            raise TaskError(f"metadata must hold JSON values only ({error}).") from error


def _id_list(values: Iterable[str]) -> list[str]:
    """Well-formed task IDs given as a list (or other iterable), never as one bare string."""
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable):
        raise TaskError(f"Dependencies must be a list of task IDs, not {_kind(values)}.")
    return [parse_task_id(value) for value in values]


def _kind(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _without_nulls(values: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


def _is_open(task: Task | None) -> bool:
    return task is not None and task.status != "completed"


def _field_changes(task: Task, **values: str | None) -> dict[str, Any]:
    """The given fields whose new value differs from the task's, normalised."""
    changes: dict[str, Any] = {}
    for field, value in values.items():
        if value is None:
            continue
        normalised = value or None if field in ("active_form", "owner") else value
        if getattr(task, field) != normalised:
            changes[field] = normalised
    return changes


def _with_edge(table: TaskTable[Task], blocker: str, blocked: str) -> TaskTable[Task]:
    """`table` with the edge blocker -> blocked written on both tasks."""
    before, after = table.by_id(blocker), table.by_id(blocked)
    assert before is not None and after is not None
    table = table.with_task(before.model_copy(update={"blocks": [*before.blocks, blocked]}))
    return table.with_task(after.model_copy(update={"blocked_by": [*after.blocked_by, blocker]}))
