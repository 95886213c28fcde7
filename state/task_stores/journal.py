"""The formats of a task folder: its write-ahead log's lines and its task files' JSON.

The log (`.journal.json`) starts with a header line, `{"journal": token, "boot": boot_id}`; then
each change is a record `{"high_watermark", "write", "delete"}`, followed by `{"applied":1}`
once the task files are written. Task files keep the seed's camelCase keys. Every name and
value read back is checked before anything acts on it; `FileTaskStore` does the file work.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from replan.state.task_stores.store import TaskChange, first_line
from replan.state.tasks import MAX_TASK_ID_DIGITS, TASK_ID, Task, TaskContext

BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"
APPLIED = b'{"applied":1}\n'  # follows a record once its files are written
WATERMARK = re.compile(rf"[0-9]{{1,{MAX_TASK_ID_DIGITS}}}")
_TOKEN = re.compile(r"[0-9a-f]{32}")
# Field names on disk follow the seed's JSON (camelCase); the model uses snake_case.
_DISK_KEYS = {"active_form": "activeForm", "blocked_by": "blockedBy", "created_at": "createdAt"}
_MODEL_KEYS = {disk: field for field, disk in _DISK_KEYS.items()}


@dataclass
class Records:
    """Journal lines folded into their net effect."""

    tasks: dict[str, Task | None] = field(default_factory=dict)  # None: deleted
    high_watermark: int | None = None
    unapplied: set[str] = field(default_factory=set)  # IDs of a record without its marker
    last_applied: bool = True


def header(token: str) -> str:
    """The first line of a new log."""
    return json.dumps({"journal": token, "boot": boot_id()}) + "\n"


def header_fields(first: bytes) -> tuple[str | None, str | None]:
    """The token and boot ID of a log's first line; (None, None) when it is no header (a log
    from before logs had one, or a damaged one)."""
    try:
        fields = json.loads(first)
    except ValueError:
        return None, None
    if not isinstance(fields, dict) or set(fields) != {"journal", "boot"}:
        return None, None
    token, boot = fields["journal"], fields["boot"]
    if not (isinstance(token, str) and _TOKEN.fullmatch(token)):
        return None, None
    return token, boot if isinstance(boot, str) else None


def boot_id() -> str | None:
    """This machine's boot ID (Linux), or None where there is none: then every store that opens
    the folder replays the whole log, as after a restart."""
    try:
        return Path(BOOT_ID_FILE).read_text("ascii").strip() or None
    except OSError:
        return None


def record_line(change: TaskChange) -> bytes:
    """The log line of one change."""
    record = {
        "high_watermark": change.high_watermark,
        "write": change.written,
        "delete": change.deleted,
    }
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


def fold(records: Records, line: bytes, problem: Callable[[str], Exception]) -> None:
    """Add one journal line to `records`, checking every name before anything acts on it."""
    try:
        entry = json.loads(line)
    except ValueError:
        raise problem("not JSON") from None
    if entry == {"applied": 1}:
        records.unapplied.clear()
        records.last_applied = True
        return
    if not isinstance(entry, dict) or set(entry) != {"high_watermark", "write", "delete"}:
        raise problem("expected the keys high_watermark, write and delete")
    watermark, written, deleted = entry["high_watermark"], entry["write"], entry["delete"]
    if type(watermark) is not int or not WATERMARK.fullmatch(str(watermark)):
        raise problem("high_watermark is not a small whole number")
    if not isinstance(written, dict) or not isinstance(deleted, list):
        raise problem("write must be an object and delete a list")
    tasks: dict[str, Task | None] = {}
    for task_id, data in written.items():
        if not _is_task_id(task_id):
            raise problem(f"{task_id!r} is not a task ID")
        try:
            task = Task.model_validate(from_disk(data))
        except (ValueError, ValidationError) as error:
            raise problem(f"task {task_id}: {first_line(error)}") from None
        if task.id != task_id:
            raise problem(f"task {task_id} holds id {task.id!r}")
        tasks[task_id] = task
    for task_id in deleted:
        if not _is_task_id(task_id):
            raise problem(f"{task_id!r} is not a task ID")
        tasks[task_id] = None
    records.tasks.update(tasks)
    records.unapplied.update(tasks)
    records.high_watermark = max(records.high_watermark or 0, watermark)
    records.last_applied = False


def apply_records(context: TaskContext, records: Records) -> TaskContext:
    """`context` with the folded records applied."""
    table = context.tasks
    for task_id, task in records.tasks.items():
        table = table.without(task_id) if task is None else table.with_task(task)
    watermark = max(context.high_watermark, records.high_watermark or 0, table.highest_id())
    return TaskContext.model_construct(tasks=table, high_watermark=watermark)


def disk_form(task: Task) -> dict[str, Any]:
    """`task` as its file's JSON (camelCase keys)."""
    return {_DISK_KEYS.get(key, key): value for key, value in task.model_dump(mode="json").items()}


def from_disk(data: Any) -> Any:
    """A task file's JSON with the model's field names; ValueError if it is not an object."""
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return {_MODEL_KEYS.get(key, key): value for key, value in data.items()}


def _is_task_id(value: object) -> bool:
    return isinstance(value, str) and TASK_ID.fullmatch(value) is not None
