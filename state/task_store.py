"""A task list kept in a folder, shareable by several agents and processes.

Layout (the seed's): `<folder>/.highwatermark` holds the highest ID ever handed out, and each
task is `<folder>/<id>.json`. Every operation runs under a lock that holds across processes,
loads the list, applies the same `TaskContext` operation the in-state tools use, and writes back
only what changed. Multi-file changes go through a small journal (`.journal.json`), replayed by
the next operation if a process dies half-way, so an edge is never left written on one side only
(the dead process's temporary files are removed then too).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from replan.state.fileio import (
    atomic_write_text,
    ensure_private_dir,
    folder_lock,
    fsync_dir,
    remove_leftover_temp_files,
)
from replan.state.tasks import Task, TaskContext, TaskError

T = TypeVar("T")

HIGH_WATERMARK_FILE = ".highwatermark"
JOURNAL_FILE = ".journal.json"
_TASK_FILE = re.compile(r"^([1-9][0-9]*)\.json$")
# Field names on disk follow the seed's JSON (camelCase); the model uses snake_case.
_DISK_KEYS = {"active_form": "activeForm", "blocked_by": "blockedBy", "created_at": "createdAt"}
_MODEL_KEYS = {disk: field for field, disk in _DISK_KEYS.items()}


class TaskStoreCorruptError(TaskError):
    """Files in the task folder could not be read; nothing was changed."""


class FileTaskStore:
    """A task list in a folder; `transact` runs one operation on it atomically."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def read(self) -> TaskContext:
        """The current task list (a snapshot; changing it does not change the files)."""
        return self.transact(lambda context: context)

    def transact(self, operation: Callable[[TaskContext], T]) -> T:
        """Run `operation` on the stored list under the cross-process lock, then save changes.

        If `operation` raises, nothing is written.
        """
        ensure_private_dir(self.directory)
        with folder_lock(self.directory):
            self._recover()
            context = self._load()
            before = _snapshot(context), context.high_watermark
            result = operation(context)
            self._save(*before, context)
            return result

    # -- loading -------------------------------------------------------------------------

    def _load(self) -> TaskContext:
        tasks: list[Task] = []
        problems: list[str] = []
        for entry in sorted(os.scandir(self.directory), key=lambda e: e.name):
            match = _TASK_FILE.match(entry.name)
            if not match:
                continue
            try:
                raw = json.loads(Path(entry.path).read_text("utf-8"))
                task = Task.model_validate(_from_disk(raw))
            except (OSError, ValueError, ValidationError) as error:
                problems.append(f"{entry.name}: {_first_line(error)}")
                continue
            if task.id != match.group(1):
                problems.append(f"{entry.name}: holds task id {task.id!r}")
                continue
            tasks.append(task)
        watermark = self._read_watermark(problems)
        if problems:
            raise TaskStoreCorruptError(
                f"The task folder {self.directory} has unreadable files ({'; '.join(problems)}). "
                "Nothing was changed. Repair or remove those files, then try again."
            )
        return TaskContext(tasks=tasks, high_watermark=watermark)

    def _read_watermark(self, problems: list[str]) -> int:
        path = self.directory / HIGH_WATERMARK_FILE
        try:
            text = path.read_text("utf-8").strip()
        except FileNotFoundError:
            return 0
        if not text.isdigit():
            problems.append(f"{HIGH_WATERMARK_FILE}: {text[:40]!r} is not a whole number")
            return 0
        return int(text)

    # -- saving --------------------------------------------------------------------------

    def _save(
        self, before: dict[str, dict[str, Any]], watermark_before: int, context: TaskContext
    ) -> None:
        """Write what the operation changed (nothing at all for a read)."""
        after = _snapshot(context)
        journal = {
            "high_watermark": context.high_watermark,
            "write": {tid: data for tid, data in after.items() if before.get(tid) != data},
            "delete": [tid for tid in before if tid not in after],
        }
        if journal["write"] or journal["delete"] or context.high_watermark != watermark_before:
            atomic_write_text(self.directory / JOURNAL_FILE, json.dumps(journal))
            self._apply(journal)

    def _recover(self) -> None:
        """Finish the change of a process that died half-way, and drop its temporary files."""
        remove_leftover_temp_files(self.directory)
        path = self.directory / JOURNAL_FILE
        try:
            journal = json.loads(path.read_text("utf-8"))
        except FileNotFoundError:
            return
        except ValueError:
            # The journal is written atomically, so an unreadable one was never complete.
            path.unlink()
            return
        self._apply(journal)

    def _apply(self, journal: dict[str, Any]) -> None:
        atomic_write_text(self.directory / HIGH_WATERMARK_FILE, str(journal["high_watermark"]))
        for tid, data in journal["write"].items():
            atomic_write_text(self.directory / f"{tid}.json", json.dumps(_to_disk(data), indent=2))
        for tid in journal["delete"]:
            (self.directory / f"{tid}.json").unlink(missing_ok=True)
        (self.directory / JOURNAL_FILE).unlink(missing_ok=True)
        fsync_dir(self.directory)


def _snapshot(context: TaskContext) -> dict[str, dict[str, Any]]:
    return {task.id: task.model_dump(mode="json") for task in context.tasks}


def _to_disk(data: dict[str, Any]) -> dict[str, Any]:
    return {_DISK_KEYS.get(key, key): value for key, value in data.items()}


def _from_disk(data: Any) -> Any:
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return {_MODEL_KEYS.get(key, key): value for key, value in data.items()}


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__
