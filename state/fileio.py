"""Crash-safe file primitives shared by the file-backed stores.

`atomic_write_text` never leaves a partial file behind: it writes a temporary file in the same
folder, flushes it to disk, then renames it over the target. `folder_lock` is an advisory
`flock` on the folder's lock file, so it holds across threads *and* processes (each acquisition
opens its own file descriptor).

POSIX only (Linux, macOS): `flock` and flushing a folder's entries. This module imports on
Windows too (so does all of `replan.state`), but the file-backed stores built on it
(`FileTaskStore`, `FilesystemPlanStorage`) refuse to work there; use `SqlitePlanStorage` and
the in-state task tools instead.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700
LOCK_FILE = ".lock"
"""The file, inside each store's folder, that `folder_lock` locks."""
_TEMP_SUFFIX = ".tmp"


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) if missing; a folder we create is readable only by its owner."""
    if not path.is_dir():
        path.mkdir(parents=True, mode=PRIVATE_DIR_MODE, exist_ok=True)
    return path


def atomic_write_text(path: Path, text: str, *, mode: int = PRIVATE_FILE_MODE) -> None:
    """Replace `path` with `text` atomically: readers see the old or the new, never a mix."""
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=_TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(path.parent)


def remove_leftover_temp_files(folder: Path, name: str = "*") -> None:
    """Delete the temporary files of writers that died inside `atomic_write_text` (for files
    called `name`, or all). Only under `folder_lock`, when no live writer can own one."""
    for leftover in folder.glob(f".{name}.*{_TEMP_SUFFIX}"):
        leftover.unlink(missing_ok=True)


def overwrite_text(path: Path, text: str, *, mode: int = PRIVATE_FILE_MODE) -> None:
    """Write `text` over `path` in place, neither atomic nor flushed (and so far cheaper).

    For files whose every reader takes the writer's lock and that a durable log can rebuild
    after a crash: a process killed mid-write leaves a mix of old and new bytes.
    """
    data = text.encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.pwrite(fd, view, len(data) - len(view)) :]
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Flush a folder's entries (a rename or unlink) to disk."""
    dir_fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


@contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold the exclusive lock of `folder` (its `LOCK_FILE`) for the duration of the block.

    Blocks until the lock is free. The kernel releases it if the holder dies, so a killed
    process never leaves a stale lock behind. Raises OSError where there is no `flock`.
    """
    try:
        import fcntl  # POSIX only: imported here so that `replan.state` imports everywhere
    except ModuleNotFoundError as exc:
        raise OSError(
            "file-backed stores need POSIX file locks (fcntl), which this system lacks; "
            "use SqlitePlanStorage for plans and the in-state task tools instead"
        ) from exc
    fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock
