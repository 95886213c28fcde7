"""`TaskTable`: the tasks of a list as an immutable collection that is cheap to copy and change.

Tasks live in chunks of `CHUNK` slots indexed by their numeric ID. A table is never changed in
place: `with_task` and `without` return a new table that copies the small chunk directory and
the one chunk they touch, and shares every other chunk with the old table. So copying a task
list costs nothing, changing one task costs the same at 10 or 100,000 tasks, and two versions of
a list tell what differs between them by comparing chunk identities (`changes_to`).

The table reads only a task's `id` and `status` (the `Numbered` protocol), so it does not import
the task model: `replan.state.tasks` holds `TaskTable[Task]`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, Protocol, TypeVar, overload

CHUNK = 64
_EMPTY_CHUNK: tuple[None, ...] = (None,) * CHUNK


class Numbered(Protocol):
    """What a table holds: a canonical numeric ID ("7", not "07") and a status."""

    @property
    def id(self) -> str: ...

    @property
    def status(self) -> str:
        """Open unless "completed" (`TaskTable.open_count` counts the open ones)."""
        ...


T = TypeVar("T", bound=Numbered)


class TaskTable(Sequence[T], Generic[T]):
    """An immutable sequence of tasks in numeric ID order, with lookup by ID.

    IDs are unique: building a table from two tasks with one ID raises ValueError.
    """

    __slots__ = ("_chunks", "_size", "_open", "_items")

    def __init__(self, tasks: Iterable[T] = ()) -> None:
        chunks: dict[int, list[T | None]] = {}
        size = unfinished = 0
        for task in tasks:
            number = int(task.id)
            slots = chunks.setdefault(number // CHUNK, [None] * CHUNK)
            if slots[number % CHUNK] is not None:
                raise ValueError(f"task ID {task.id} appears more than once")
            slots[number % CHUNK] = task
            size += 1
            unfinished += task.status != "completed"
        self._chunks: dict[int, tuple[T | None, ...]] = {
            key: tuple(slots) for key, slots in chunks.items()
        }
        self._size = size
        self._open = unfinished
        self._items: tuple[T, ...] | None = None

    # -- reading -------------------------------------------------------------------------

    def by_id(self, task_id: str) -> T | None:
        """The task with this canonical ID ("7", not "07"), or None."""
        if not task_id.isdigit():
            return None
        number = int(task_id)
        chunk = self._chunks.get(number // CHUNK)
        task = chunk[number % CHUNK] if chunk is not None else None
        return task if task is not None and task.id == task_id else None

    @property
    def open_count(self) -> int:
        """How many tasks are not completed."""
        return self._open

    def highest_id(self) -> int:
        """The highest task ID in the table (0 when empty)."""
        if not self._chunks:
            return 0
        top = max(self._chunks)
        slot = max(i for i, task in enumerate(self._chunks[top]) if task is not None)
        return top * CHUNK + slot

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[T]:
        for key in sorted(self._chunks):
            for task in self._chunks[key]:
                if task is not None:
                    yield task

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...
    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        if self._items is None:
            self._items = tuple(self)
        return self._items[index]

    def __contains__(self, value: object) -> bool:
        task_id = getattr(value, "id", None)
        return isinstance(task_id, str) and self.by_id(task_id) == value

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TaskTable):
            return self is other or (len(self) == len(other) and list(self) == list(other))
        if isinstance(other, list | tuple):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TaskTable({list(self)!r})"

    # -- new versions ----------------------------------------------------------------------

    def with_task(self, task: T) -> TaskTable[T]:
        """A table holding `task` (added, or replacing the task with its ID)."""
        number = int(task.id)
        key, slot = divmod(number, CHUNK)
        chunk = self._chunks.get(key, _EMPTY_CHUNK)
        old = chunk[slot]
        slots: list[T | None] = list(chunk)
        slots[slot] = task
        return self._derive(
            key,
            tuple(slots),
            size=self._size + (old is None),
            unfinished=self._open
            + (task.status != "completed")
            - (old is not None and old.status != "completed"),
        )

    def without(self, task_id: str) -> TaskTable[T]:
        """A table without the task with this ID (the same table if there is none)."""
        old = self.by_id(task_id)
        if old is None:
            return self
        key, slot = divmod(int(task_id), CHUNK)
        slots = list(self._chunks[key])
        slots[slot] = None
        return self._derive(
            key,
            tuple(slots) if any(s is not None for s in slots) else None,
            size=self._size - 1,
            unfinished=self._open - (old.status != "completed"),
        )

    def changes_to(self, newer: TaskTable[T]) -> tuple[list[T], list[str]]:
        """What differs in `newer`: the tasks it added or replaced, and the IDs it dropped.

        Chunks both tables share are skipped, so this costs what changed, not the table size.
        """
        written: list[T] = []
        removed: list[str] = []
        for key in self._chunks.keys() | newer._chunks.keys():
            old_chunk = self._chunks.get(key, _EMPTY_CHUNK)
            new_chunk = newer._chunks.get(key, _EMPTY_CHUNK)
            if old_chunk is new_chunk:
                continue
            for old, new in zip(old_chunk, new_chunk, strict=True):
                if old is new:
                    continue
                if new is not None:
                    written.append(new)
                elif old is not None:
                    removed.append(old.id)
        return written, removed

    def _derive(
        self, key: int, chunk: tuple[T | None, ...] | None, *, size: int, unfinished: int
    ) -> TaskTable[T]:
        table: TaskTable[T] = TaskTable.__new__(TaskTable)
        table._chunks = dict(self._chunks)
        if chunk is None:
            del table._chunks[key]
        else:
            table._chunks[key] = chunk
        table._size = size
        table._open = unfinished
        table._items = None
        return table

    # -- copying -------------------------------------------------------------------------

    def __copy__(self) -> TaskTable[T]:
        return self  # immutable

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> TaskTable[T]:
        return self  # immutable, and so are its tasks

    def __reduce__(self) -> tuple[Any, ...]:
        return (TaskTable, (list(self),))
