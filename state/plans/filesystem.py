"""Filesystem plan storage: one JSON file per plan, safe across threads, processes and crashes.

Every write happens under an exclusive `flock` on `<folder>/.lock`, so the revision check and
bump are atomic even between processes, and each file is replaced atomically (temporary file,
fsync, rename), so a reader or a process killed mid-write never sees a partial plan. Reads
take no lock. Files are created 0600 in a 0700 folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from replan.state.fileio import (
    atomic_write_text,
    ensure_private_dir,
    folder_lock,
    fsync_dir,
    remove_leftover_temp_files,
)
from replan.state.plans.model import (
    InvalidPlan,
    Plan,
    PlanCorrupt,
    PlanError,
    PlanListing,
    PlanStorageError,
    PlanSummary,
    PlanUpdate,
    validate_name,
)
from replan.state.plans.storage import apply_update, decode_plan, make_listing, may_delete

PLANS_DIR_ENV = "REPLAN_PLANS_DIR"
PLAN_SUFFIX = ".json"


def default_plans_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$REPLAN_PLANS_DIR`, else `<XDG_DATA_HOME or ~/.local/share>/replan/plans`."""
    env = os.environ if env is None else env
    if override := env.get(PLANS_DIR_ENV):
        return Path(override).expanduser()
    data_home = env.get("XDG_DATA_HOME", "")
    base = Path(data_home) if os.path.isabs(data_home) else Path.home() / ".local" / "share"
    return base / "replan" / "plans"


class FilesystemPlanStorage:
    """Plans as `<name>.json` files in one folder (created on the first write)."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_plans_dir()

    def __repr__(self) -> str:
        return f"FilesystemPlanStorage({str(self.directory)!r})"

    def path_of(self, name: str) -> Path:
        """The file that holds plan `name`."""
        return self.directory / f"{validate_name(name)}{PLAN_SUFFIX}"

    def get(self, name: str) -> Plan | None:
        """The named plan, None if it has no file, PlanCorrupt if the file is unreadable."""
        path = self.path_of(name)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise PlanCorrupt(name, f"cannot read {path.name}: {exc.strerror or exc}") from exc
        return decode_plan(name, raw)

    def upsert(self, update: PlanUpdate) -> Plan:
        """Create or update a plan; the check, bump and write happen under the folder lock."""
        with self._write_lock():
            plan = apply_update(self.get(update.name), update)
            path = self.path_of(plan.name)
            remove_leftover_temp_files(self.directory, path.name)
            atomic_write_text(path, plan.model_dump_json(indent=2) + "\n")
            return plan

    def list(self) -> PlanListing:
        """Every readable plan; a file that cannot be read becomes a warning naming it."""
        try:
            paths = sorted(self.directory.glob(f"*{PLAN_SUFFIX}"))
        except OSError as exc:
            raise PlanStorageError(f"cannot list {self.directory}: {exc}") from exc
        plans: list[PlanSummary] = []
        warnings: list[str] = []
        for path in paths:
            if path.name.startswith("."):
                continue
            try:
                plan = self.get(path.stem)
            except InvalidPlan:
                warnings.append(f"ignored {path.name}: not a valid plan file name")
            except PlanError as exc:
                warnings.append(str(exc))
            else:
                if plan is not None:  # None: deleted since the folder was read
                    plans.append(plan.summary())
        return make_listing(plans, warnings)

    def delete(self, name: str, expected_revision: int | None = None) -> bool:
        """Remove a plan's file; False if there was none."""
        with self._write_lock():
            if not may_delete(name, expected_revision, self.get):
                return False
            self.path_of(name).unlink()
            fsync_dir(self.directory)
            return True

    @contextmanager
    def _write_lock(self) -> Iterator[None]:
        """Hold the folder's cross-process lock; disk failures become PlanStorageError."""
        try:
            ensure_private_dir(self.directory)
            with folder_lock(self.directory):
                yield
        except OSError as exc:
            raise PlanStorageError(f"plan storage in {self.directory} failed: {exc}") from exc
