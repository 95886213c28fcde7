"""Shared plan documents: the model, the storage protocol and its backends.

`PostgresPlanStorage` is loaded on first use (it needs `pip install 'replan[postgres]'`), so
this package imports without psycopg.
"""

from typing import TYPE_CHECKING, Any

from replan.state.plans.filesystem import PLANS_DIR_ENV, FilesystemPlanStorage, default_plans_dir
from replan.state.plans.memory import InMemoryPlanStorage
from replan.state.plans.model import (
    MAX_CONTENT_BYTES,
    MAX_CONTENT_SIZE,
    MAX_NAME_LENGTH,
    NAME_PATTERN,
    SUGGESTED_STATUSES,
    InvalidPlan,
    Plan,
    PlanConflict,
    PlanCorrupt,
    PlanError,
    PlanListing,
    PlanNotFound,
    PlanStorageError,
    PlanSummary,
    PlanUpdate,
    validate_name,
)
from replan.state.plans.sqlite import SqlitePlanStorage
from replan.state.plans.storage import PlanStorage
from replan.state.plans.workspace import Workspace, WorkspaceError

if TYPE_CHECKING:  # loaded on first use; not in __all__, so `import *` never needs psycopg
    from replan.state.plans.postgres import PostgresPlanStorage as PostgresPlanStorage


def __getattr__(name: str) -> Any:
    """Load `PostgresPlanStorage` (and psycopg) only when it is asked for."""
    if name == "PostgresPlanStorage":
        from replan.state.plans.postgres import PostgresPlanStorage

        return PostgresPlanStorage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "MAX_CONTENT_BYTES",
    "MAX_CONTENT_SIZE",
    "MAX_NAME_LENGTH",
    "NAME_PATTERN",
    "PLANS_DIR_ENV",
    "SUGGESTED_STATUSES",
    "FilesystemPlanStorage",
    "InMemoryPlanStorage",
    "InvalidPlan",
    "Plan",
    "PlanConflict",
    "PlanCorrupt",
    "PlanError",
    "PlanListing",
    "PlanNotFound",
    "PlanStorage",
    "PlanStorageError",
    "PlanSummary",
    "PlanUpdate",
    "SqlitePlanStorage",
    "Workspace",
    "WorkspaceError",
    "default_plans_dir",
    "validate_name",
]
