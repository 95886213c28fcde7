"""Confine plan import/export to one folder: no path given by a model may leave it.

A path is joined to the workspace root, then resolved (`..` collapsed, symlinks followed); the
result must still lie inside the root, so absolute paths elsewhere, `..` escapes and symlinks
pointing out are all refused. Only regular files of at most `MAX_CONTENT_BYTES` (the largest
plan body) are read; the type is checked with `stat` before opening, and the open itself uses
`O_NONBLOCK` and `O_NOFOLLOW`, so a FIFO, device or swapped-in symlink can never make a call
hang or escape. Those flags are POSIX: reading files needs Linux or macOS.

A file with more than one hard link is not imported either: another name for it may lie
outside the workspace. Export replaces a file (write to a temporary file, then rename), so it
never writes through a hard link.

Limit: a folder *inside* the workspace that another process swaps for a symlink between the
check and the open is not detected; the tools themselves cannot create symlinks.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from replan.state.fileio import PRIVATE_FILE_MODE, atomic_write_text
from replan.state.plans.model import MAX_CONTENT_BYTES, MAX_CONTENT_SIZE, lone_surrogate


class WorkspaceError(ValueError):
    """A path outside the workspace, or a file that may not be read or written."""


class Workspace:
    """A root folder for file import/export; defaults to the working directory at creation."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        resolved = (Path.cwd() if root is None else Path(root)).resolve()
        if not resolved.is_dir():
            raise WorkspaceError(f"workspace {resolved} is not an existing folder")
        self.root = resolved

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    def resolve(self, path: str) -> Path:
        """The real location of `path` (relative to the root), refused if outside the root."""
        if not path or "\0" in path:
            raise WorkspaceError("give a non-empty file path")
        if (where := lone_surrogate(path)) is not None:
            raise WorkspaceError(f"the path holds a lone surrogate ({where}): send valid Unicode")
        try:
            resolved = (self.root / path).resolve()
        except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python 3.11)
            raise WorkspaceError(f"cannot resolve {path!r}: {exc}") from exc
        if not resolved.is_relative_to(self.root):
            raise WorkspaceError(
                f"{path!r} is outside the workspace {self.root}: use a path inside it"
            )
        return resolved

    def read_text(self, path: str) -> str:
        """The UTF-8 text of a regular file inside the workspace, at most MAX_CONTENT_BYTES."""
        target = self.resolve(path)
        with _explained(path):
            before = _regular_file_stat(path, target)
            if before is None:
                raise WorkspaceError(f"there is no file at {path!r} in the workspace")
            if before.st_size > MAX_CONTENT_BYTES:
                raise WorkspaceError(_too_large(path))
            flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
            with open(os.open(target, flags), "rb") as handle:
                opened = os.fstat(handle.fileno())
                if (opened.st_dev, opened.st_ino) != (before.st_dev, before.st_ino):
                    raise WorkspaceError(f"{path!r} changed while it was being opened; retry")
                if opened.st_nlink > 1:
                    raise WorkspaceError(
                        f"{path!r} has {opened.st_nlink} hard links, and another one may lie "
                        "outside the workspace, so it is not read; use a copy of the file"
                    )
                data = handle.read(MAX_CONTENT_BYTES + 1)
        if len(data) > MAX_CONTENT_BYTES:
            raise WorkspaceError(_too_large(path))
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise WorkspaceError(f"{path!r} is not UTF-8 text") from exc

    def write_text(self, path: str, text: str, *, overwrite: bool = False) -> Path:
        """Write `text` atomically to `path`, creating parent folders; return the real path.

        An existing file is replaced only with `overwrite` (keeping its permissions); a new
        file is private to its owner (0600).
        """
        target = self.resolve(path)
        with _explained(path):
            existing = _regular_file_stat(path, target)
            if existing is not None and not overwrite:
                raise WorkspaceError(
                    f"{path!r} already exists: pass overwrite=true to replace it, "
                    "or choose another path"
                )
            target.parent.mkdir(parents=True, exist_ok=True)
            mode = stat.S_IMODE(existing.st_mode) if existing else PRIVATE_FILE_MODE
            atomic_write_text(target, text, mode=mode)
        return target


def _regular_file_stat(path: str, target: Path) -> os.stat_result | None:
    """`target`'s stat without following links; None if absent; refused unless a regular file."""
    try:
        info = os.stat(target, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(info.st_mode):
        raise WorkspaceError(f"{path!r} is not a regular file (a folder, FIFO or device?)")
    return info


def _too_large(path: str) -> str:
    return f"{path!r} is larger than {MAX_CONTENT_SIZE}"


@contextmanager
def _explained(path: str) -> Iterator[None]:
    """Turn an operating-system failure on `path` into a WorkspaceError."""
    try:
        yield
    except OSError as exc:
        raise WorkspaceError(f"cannot use {path!r}: {exc.strerror or exc}") from exc
