"""`FileTaskStore`: a shared task list in a folder, for processes on one machine.

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
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from replan.state.fileio import (
    atomic_write_text,
    ensure_private_dir,
    folder_lock,
    overwrite_text,
    remove_leftover_temp_files,
)
from replan.state.task_stores.journal import (
    APPLIED,
    WATERMARK,
    Records,
    apply_records,
    boot_id,
    disk_form,
    fold,
    from_disk,
    header,
    header_fields,
    record_line,
)
from replan.state.task_stores.store import (
    TaskChange,
    TaskStoreCorruptError,
    first_line,
    run_operation,
    snapshot,
    unavailable,
)
from replan.state.task_table import TaskTable
from replan.state.tasks import TASK_ID, Task, TaskContext

T = TypeVar("T")

HIGH_WATERMARK_FILE = ".highwatermark"
JOURNAL_FILE = ".journal.json"
JOURNAL_LIMIT = 1 << 20  # bytes of log after which the task files are flushed and it restarts
_TASK_FILE = re.compile(rf"({TASK_ID.pattern})\.json")
_DAMAGED = object()


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


class FileTaskStore:
    """A task list in a folder (the seed's layout), shared by processes on one machine.

    A `TaskStore`: `transact(operation)` runs under the folder's lock; `read()` is a snapshot.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self._seen: _Seen | None = None
        self._log = _Log(-1, None, None, 0)  # the open journal, during a session

    @property
    def location(self) -> str:
        return f"shared task folder {self.directory}"

    def read(self) -> TaskContext:
        """The current task list (a snapshot; changing it does not change the store)."""
        return self.transact(snapshot)

    def transact(self, operation: Callable[[TaskContext], T]) -> T:
        """Run `operation` on the stored list under the folder's lock and save what changed, all
        or nothing (`TaskStore.transact`)."""
        return run_operation(self._session(), self._save, operation)

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
        with self._folder_errors():
            self._append(record_line(change), flush=True)
            ids = {*change.written, *change.deleted}
            self._write_files(context, ids, watermark=change.watermark_changed)
            self._append(APPLIED, flush=False)
            if self._log.size > JOURNAL_LIMIT:
                self._restart_log()
            self._remember(context)

    @contextmanager
    def _folder_errors(self) -> Iterator[None]:
        try:
            yield
        except OSError as error:
            self._seen = None
            raise unavailable(self.location, error) from error

    def _current(self) -> TaskContext:
        """The stored list: what this store saw last, brought up to date, or read afresh."""
        log, seen = self._log, self._seen
        if seen is None or log.token != seen.token or log.size < seen.offset:
            context = self._load()
        elif log.size == seen.offset:
            return seen.context
        else:
            records = self._read_records(seen.offset)
            context = apply_records(seen.context, records)
            if records.unapplied:  # a writer died before writing its files: finish for it
                watermark = records.high_watermark is not None
                self._write_files(context, records.unapplied, watermark=watermark)
                remove_leftover_temp_files(self.directory)
                self._append(APPLIED, flush=False)
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
            atomic_write_text(path, header(secrets.token_hex(16)))
            fd = os.open(path, os.O_RDWR | os.O_APPEND)
        try:
            first = os.pread(fd, 256, 0).split(b"\n", 1)[0]
            size = os.fstat(fd).st_size
        except OSError:
            os.close(fd)
            raise
        return _Log(fd, *header_fields(first), size)

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

    def _read_records(self, offset: int) -> Records:
        """Fold the log's lines from `offset` on; a torn last line is dropped (never applied)."""
        log = self._log
        data = os.pread(log.fd, log.size - offset, offset)
        if log.token is None:  # a journal from before headers was written whole, atomically
            data = data.rstrip(b"\n") + b"\n"
        complete, _, tail = data.rpartition(b"\n")
        if tail:
            log.size -= len(tail)
            log.torn_tail = True
        records = Records()
        lines = complete.split(b"\n") if complete else []
        skip_header = offset == 0 and log.token is not None
        for number, line in enumerate(lines[skip_header:], start=1 + skip_header):
            fold(records, line, self._journal_problem(line, number if offset == 0 else None))
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
        atomic_write_text(self.directory / JOURNAL_FILE, header(token))
        log = self._log
        log.token, log.boot, log.size, log.torn_tail = token, boot_id(), len(header(token)), False

    # -- the folder ----------------------------------------------------------------------

    def _load(self) -> TaskContext:
        """Read every task file and bring them up to date with the log.

        Since the machine started, every record but an interrupted last one is in the files
        already (the page cache outlives a killed process). A log from before a restart may be
        ahead of files that never reached the disk: then every record is replayed, the files
        are repaired and the log starts over.
        """
        log, boot = self._log, boot_id()
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
                task = Task.model_validate(from_disk(raw))
            except ValueError as error:  # also ValidationError, UnicodeDecodeError
                if task_id in replayed:
                    on_disk[task_id] = _DAMAGED  # the log has its content
                else:
                    problems.append(f"{entry.name}: {first_line(error)}")
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
            if (task_id in on_disk if task is None else on_disk.get(task_id) != disk_form(task))
        }
        watermark_stale = high_watermark != watermark
        if stale or watermark_stale:
            self._write_files(context, stale, watermark=watermark_stale)
        if log.token is None or log.boot != boot:
            self._restart_log()
        elif not records.last_applied:
            self._append(APPLIED, flush=False)
        return context

    def _read_watermark(self, problems: list[str], *, logged: bool) -> int:
        try:
            text = (self.directory / HIGH_WATERMARK_FILE).read_text("utf-8").strip()
        except FileNotFoundError:
            return 0
        except UnicodeDecodeError:
            text = "(not text)"
        if WATERMARK.fullmatch(text):
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
                overwrite_text(path, json.dumps(disk_form(task), indent=2))
