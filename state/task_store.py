"""Task lists kept outside the graph state, shared by several agents and processes.

`TaskStore` is the interface: `transact(operation)` runs one `TaskContext` operation on the
stored list under a lock that holds across processes and saves what it changed, all or nothing;
`read()` returns a snapshot. Each store keeps the list it last saw in memory and, on the next
call, takes in only what other writers changed since, so an operation costs what it touches,
not the size of the list. `FileTaskStore` (here) keeps the list in a folder;
`replan.state.task_store_postgres.PostgresTaskStore` in a PostgreSQL database.

The folder keeps the seed's layout: `<folder>/.highwatermark` holds the highest ID ever handed
out, and each task is `<folder>/<id>.json`. Beside them, `.journal.json` is a write-ahead log:
each change is appended to it as one JSON line and flushed to disk *before* the task files are
written (in place, not flushed), so a change costs one flush. A line `{"applied":1}` follows
once the files are written; a process killed in between leaves a record without it, which the
next operation completes. After a power loss, files may lag the log: the log's first line names
the boot it was started in, and a log from an earlier boot is replayed whole over the files.
When the log passes `JOURNAL_LIMIT` bytes, the files are flushed and the log starts over.

The first line also holds a random token. A store's memory of the list is good while the token
is the same and the log has not grown; otherwise it reads just the new lines (after a restart
of the log, the whole folder). Processes that change the folder through a `FileTaskStore` see
each other's changes at once; a file edited by hand is seen by stores opened afterwards.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from replan.state.fileio import (
    atomic_write_text,
    ensure_private_dir,
    folder_lock,
    overwrite_text,
    remove_leftover_temp_files,
)
from replan.state.task_table import TaskTable
from replan.state.tasks import MAX_TASK_ID_DIGITS, TASK_ID, Task, TaskContext, TaskError

T = TypeVar("T")

HIGH_WATERMARK_FILE = ".highwatermark"
JOURNAL_FILE = ".journal.json"
BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"
JOURNAL_LIMIT = 1 << 20  # bytes of log after which the task files are flushed and it restarts
_TASK_FILE = re.compile(rf"({TASK_ID.pattern})\.json")
_WATERMARK = re.compile(rf"[0-9]{{1,{MAX_TASK_ID_DIGITS}}}")
_TOKEN = re.compile(r"[0-9a-f]{32}")
_DAMAGED = object()
_APPLIED = b'{"applied":1}\n'  # follows a record once its files are written
# Field names on disk follow the seed's JSON (camelCase); the model uses snake_case.
_DISK_KEYS = {"active_form": "activeForm", "blocked_by": "blockedBy", "created_at": "createdAt"}
_MODEL_KEYS = {disk: field for field, disk in _DISK_KEYS.items()}


class TaskStoreCorruptError(TaskError):
    """The stored list could not be read; nothing was changed."""


class TaskStoreUnavailableError(TaskError):
    """The store's folder or database cannot be used right now; nothing was changed."""


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


def storable(task: Task) -> dict[str, Any]:
    """`task` as JSON-ready data, after checking every field's type; TaskError if it is not.

    Operations on a `TaskContext` validate their input, but `transact` runs any callable.
    """
    try:
        data = Task.model_validate(dict(task)).model_dump(mode="json")
        json.dumps(data, ensure_ascii=False).encode("utf-8")  # lone surrogates have no encoding
    except (ValueError, TypeError, PydanticSerializationError) as error:
        raise TaskError(
            f"Task #{task.id} cannot be stored ({_first_line(error)}). Nothing was changed."
        ) from error
    return data


class TaskStore(ABC):
    """A shared task list: one operation at a time, across threads, processes and machines."""

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the list lives, for messages ("shared task folder ./tasks")."""

    def read(self) -> TaskContext:
        """The current task list (a snapshot; changing it does not change the store)."""
        return self.transact(lambda context: context)

    def transact(self, operation: Callable[[TaskContext], T]) -> T:
        """Run `operation` on the stored list under the store's lock, then save what changed.

        If `operation` raises, or leaves a task that cannot be stored, nothing is saved.
        Raises TaskStoreCorruptError for a damaged list, TaskStoreUnavailableError when the
        store cannot be reached.
        """
        with self._session() as stored:
            context = stored.clone()
            result = operation(context)
            change = TaskChange.between(stored, context)
            if not change.empty:
                self._save(change, context)
            return result

    @abstractmethod
    def _session(self) -> AbstractContextManager[TaskContext]:
        """Hold the lock and yield the stored list; an exception in the block saves nothing."""

    @abstractmethod
    def _save(self, change: TaskChange, context: TaskContext) -> None:
        """Store `change` (which turns the yielded list into `context`) inside the session."""

    def _unavailable(self, error: Exception) -> TaskStoreUnavailableError:
        problem = " ".join(str(error).split())  # one line, whatever the driver says
        return TaskStoreUnavailableError(
            f"The {self.location} cannot be used ({problem}). Nothing was changed; tell the "
            "user, since retrying will not help until it is fixed."
        )


def open_task_store(where: TaskStore | str | os.PathLike[str]) -> TaskStore:
    """A store given as itself, a folder path, or a `postgresql://` URL."""
    if isinstance(where, TaskStore):
        return where
    if isinstance(where, str) and where.startswith(("postgresql://", "postgres://")):
        from replan.state.task_store_postgres import PostgresTaskStore

        return PostgresTaskStore(where)
    return FileTaskStore(where)


@dataclass
class _Seen:
    """What a FileTaskStore remembers between calls: the list as of a point in the log."""

    token: str
    offset: int
    context: TaskContext


@dataclass
class _Log:
    """The journal as read under the lock."""

    fd: int
    token: str | None  # None: a journal from before journals had a header (or a damaged one)
    boot: str | None  # the boot ID of the machine when the journal was started
    size: int  # up to the end of the last complete line
    torn_tail: bool = False  # an unfinished last line follows (a writer died mid-append)


@dataclass
class _Records:
    """Journal lines folded into their net effect."""

    tasks: dict[str, Task | None] = field(default_factory=dict)  # None: deleted
    high_watermark: int | None = None
    unapplied: set[str] = field(default_factory=set)  # IDs of a record without its marker
    last_applied: bool = True


class FileTaskStore(TaskStore):
    """A task list in a folder (the seed's layout), shared by processes on one machine."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self._seen: _Seen | None = None
        self._log = _Log(-1, None, None, 0)  # the open journal, during a session

    @property
    def location(self) -> str:
        return f"shared task folder {self.directory}"

    # -- session -------------------------------------------------------------------------

    @contextmanager
    def _session(self) -> Iterator[TaskContext]:
        with ExitStack() as stack:
            with self._folder_errors():
                ensure_private_dir(self.directory)
                stack.enter_context(folder_lock(self.directory))
                self._log = self._open_log()
                stack.callback(os.close, self._log.fd)
                stored = self._current()
            yield stored

    def _save(self, change: TaskChange, context: TaskContext) -> None:
        record = {
            "high_watermark": change.high_watermark,
            "write": change.written,
            "delete": change.deleted,
        }
        with self._folder_errors():
            self._append(json.dumps(record, separators=(",", ":")).encode() + b"\n", flush=True)
            ids = {*change.written, *change.deleted}
            self._write_files(context, ids, watermark=change.watermark_changed)
            self._append(_APPLIED, flush=False)
            if self._log.size > JOURNAL_LIMIT:
                self._restart_log()
            self._remember(context)

    @contextmanager
    def _folder_errors(self) -> Iterator[None]:
        try:
            yield
        except OSError as error:
            self._seen = None
            raise self._unavailable(error) from error

    def _current(self) -> TaskContext:
        """The stored list: what this store saw last, brought up to date, or read afresh."""
        log, seen = self._log, self._seen
        if seen is None or log.token != seen.token or log.size < seen.offset:
            context = self._load()
        elif log.size == seen.offset:
            return seen.context
        else:
            records = self._read_records(seen.offset)
            context = _apply(seen.context, records)
            if records.unapplied:  # a writer died before writing its files: finish for it
                watermark = records.high_watermark is not None
                self._write_files(context, records.unapplied, watermark=watermark)
                remove_leftover_temp_files(self.directory)
                self._append(_APPLIED, flush=False)
        self._remember(context)
        return context

    def _remember(self, context: TaskContext) -> None:
        assert self._log.token is not None  # _load restarts a log without a header
        self._seen = _Seen(self._log.token, self._log.size, context)

    # -- the log -------------------------------------------------------------------------

    def _open_log(self) -> _Log:
        path = self.directory / JOURNAL_FILE
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND)
        except FileNotFoundError:
            atomic_write_text(path, _header(secrets.token_hex(16)))
            fd = os.open(path, os.O_RDWR | os.O_APPEND)
        try:
            first = os.pread(fd, 256, 0).split(b"\n", 1)[0]
            size = os.fstat(fd).st_size
        except OSError:
            os.close(fd)
            raise
        try:
            header = json.loads(first)
        except ValueError:
            header = None
        if not isinstance(header, dict) or set(header) != {"journal", "boot"}:
            return _Log(fd, None, None, size)
        token, boot = header["journal"], header["boot"]
        if not (isinstance(token, str) and _TOKEN.fullmatch(token)):
            return _Log(fd, None, None, size)
        return _Log(fd, token, boot if isinstance(boot, str) else None, size)

    def _append(self, line: bytes, *, flush: bool) -> None:
        log = self._log
        if log.torn_tail:  # never write after a torn line: the new one would glue onto it
            os.ftruncate(log.fd, log.size)
            log.torn_tail = False
        view = memoryview(line)
        while view:
            view = view[os.write(log.fd, view) :]
        if flush:
            getattr(os, "fdatasync", os.fsync)(log.fd)
        log.size += len(line)

    def _read_records(self, offset: int) -> _Records:
        """Fold the log's lines from `offset` on; a torn last line is dropped (never applied)."""
        log = self._log
        data = os.pread(log.fd, log.size - offset, offset)
        if log.token is None:  # a journal from before headers was written whole, atomically
            data = data.rstrip(b"\n") + b"\n"
        complete, _, tail = data.rpartition(b"\n")
        if tail:
            log.size -= len(tail)
            log.torn_tail = True
        records = _Records()
        lines = complete.split(b"\n") if complete else []
        skip_header = offset == 0 and log.token is not None
        for number, line in enumerate(lines[skip_header:], start=1 + skip_header):
            _fold(records, line, self._journal_problem(line, number if offset == 0 else None))
        return records

    def _journal_problem(self, line: bytes, number: int | None) -> Callable[[str], Exception]:
        where = f"line {number}" if number else "a new line"

        def problem(reason: str) -> Exception:
            return TaskStoreCorruptError(
                f"The task folder {self.directory} has a damaged {JOURNAL_FILE} ({where}: "
                f"{reason}: {line[:80]!r}). Nothing was changed. Repair or remove that file, "
                "then try again."
            )

        return problem

    def _restart_log(self) -> None:
        """Flush the task files to disk, then start an empty log (a checkpoint)."""
        os.sync()
        token = secrets.token_hex(16)
        atomic_write_text(self.directory / JOURNAL_FILE, _header(token))
        log = self._log
        log.token, log.boot, log.size, log.torn_tail = token, _boot_id(), len(_header(token)), False

    # -- the folder ----------------------------------------------------------------------

    def _load(self) -> TaskContext:
        """Read every task file and bring them up to date with the log.

        Since the machine started, every record but an interrupted last one is in the files
        already (the page cache outlives a killed process). A log from before a restart may be
        ahead of files that never reached the disk: then every record is replayed, the files
        are repaired and the log starts over.
        """
        log, boot = self._log, _boot_id()
        records = self._read_records(0)
        same_boot = log.token is not None and boot is not None and log.boot == boot
        replayed = {
            task_id: task
            for task_id, task in records.tasks.items()
            if not same_boot or task_id in records.unapplied
        }
        tasks: list[Task] = []
        on_disk: dict[str, Any] = {}  # replayed ID -> its file's JSON (or _DAMAGED)
        problems: list[str] = []
        remove_leftover_temp_files(self.directory)  # of writers killed mid-write
        for entry in os.scandir(self.directory):
            match = _TASK_FILE.fullmatch(entry.name)
            if not match:
                continue
            task_id = match.group(1)
            try:
                raw = json.loads(Path(entry.path).read_text("utf-8"))
                task = Task.model_validate(_from_disk(raw))
            except ValueError as error:  # also ValidationError, UnicodeDecodeError
                if task_id in replayed:
                    on_disk[task_id] = _DAMAGED  # the log has its content
                else:
                    problems.append(f"{entry.name}: {_first_line(error)}")
                continue
            if task.id != task_id:
                problems.append(f"{entry.name}: holds task id {task.id!r}")
            elif task_id in replayed:
                on_disk[task_id] = raw
            else:
                tasks.append(task)
        logged_watermark = records.high_watermark is not None and (
            not same_boot or bool(records.unapplied)
        )
        watermark = self._read_watermark(problems, logged=logged_watermark)
        if problems:
            raise TaskStoreCorruptError(
                f"The task folder {self.directory} has unreadable files ({'; '.join(problems)}). "
                "Nothing was changed. Repair or remove those files, then try again."
            )
        table = TaskTable([*tasks, *(task for task in replayed.values() if task is not None)])
        high_watermark = max(watermark, records.high_watermark or 0, table.highest_id())
        context = TaskContext(tasks=table, high_watermark=high_watermark)
        stale = {
            task_id
            for task_id, task in replayed.items()
            if (task_id in on_disk if task is None else on_disk.get(task_id) != _disk_form(task))
        }
        watermark_stale = high_watermark != watermark
        if stale or watermark_stale:
            self._write_files(context, stale, watermark=watermark_stale)
        if log.token is None or log.boot != boot:
            self._restart_log()
        elif not records.last_applied:
            self._append(_APPLIED, flush=False)
        return context

    def _read_watermark(self, problems: list[str], *, logged: bool) -> int:
        try:
            text = (self.directory / HIGH_WATERMARK_FILE).read_text("utf-8").strip()
        except FileNotFoundError:
            return 0
        except UnicodeDecodeError:
            text = "(not text)"
        if _WATERMARK.fullmatch(text):
            return int(text)
        if not logged:  # else the log holds the value and the file is rewritten
            problems.append(f"{HIGH_WATERMARK_FILE}: {text[:40]!r} is not a whole number")
        return 0

    def _write_files(self, context: TaskContext, ids: set[str], *, watermark: bool) -> None:
        """Make the files of `ids` (and the watermark file) match `context`.

        In place and not flushed: every reader takes the lock, and the log (flushed first)
        rebuilds whatever a crash leaves half-written.
        """
        if watermark:
            overwrite_text(self.directory / HIGH_WATERMARK_FILE, str(context.high_watermark))
        for task_id in sorted(ids, key=int):
            path = self.directory / f"{task_id}.json"
            task = context.tasks.by_id(task_id)
            if task is None:
                path.unlink(missing_ok=True)
            else:
                overwrite_text(path, json.dumps(_disk_form(task), indent=2))


def _header(token: str) -> str:
    return json.dumps({"journal": token, "boot": _boot_id()}) + "\n"


def _boot_id() -> str | None:
    """This machine's boot ID (Linux), or None where there is none: then every store that opens
    the folder replays the whole log, as after a restart."""
    try:
        return Path(BOOT_ID_FILE).read_text("ascii").strip() or None
    except OSError:
        return None


def _fold(records: _Records, line: bytes, problem: Callable[[str], Exception]) -> None:
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
    if type(watermark) is not int or not _WATERMARK.fullmatch(str(watermark)):
        raise problem("high_watermark is not a small whole number")
    if not isinstance(written, dict) or not isinstance(deleted, list):
        raise problem("write must be an object and delete a list")
    tasks: dict[str, Task | None] = {}
    for task_id, data in written.items():
        if not _is_task_id(task_id):
            raise problem(f"{task_id!r} is not a task ID")
        try:
            task = Task.model_validate(_from_disk(data))
        except (ValueError, ValidationError) as error:
            raise problem(f"task {task_id}: {_first_line(error)}") from None
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


def _apply(context: TaskContext, records: _Records) -> TaskContext:
    table = context.tasks
    for task_id, task in records.tasks.items():
        table = table.without(task_id) if task is None else table.with_task(task)
    watermark = max(context.high_watermark, records.high_watermark or 0, table.highest_id())
    return TaskContext.model_construct(tasks=table, high_watermark=watermark)


def _is_task_id(value: object) -> bool:
    return isinstance(value, str) and TASK_ID.fullmatch(value) is not None


def _disk_form(task: Task) -> dict[str, Any]:
    return {_DISK_KEYS.get(key, key): value for key, value in task.model_dump(mode="json").items()}


def _from_disk(data: Any) -> Any:
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return {_MODEL_KEYS.get(key, key): value for key, value in data.items()}


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__
