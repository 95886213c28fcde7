"""Shared plan documents: the model, the storage protocol and its three backends."""

from replan.state.plans.filesystem import PLANS_DIR_ENV, FilesystemPlanStorage, default_plans_dir
from replan.state.plans.memory import InMemoryPlanStorage
from replan.state.plans.model import (
    MAX_CONTENT_BYTES,
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
from replan.state.plans.workspace import MAX_FILE_BYTES, Workspace, WorkspaceError

__all__ = [
    "MAX_CONTENT_BYTES",
    "MAX_FILE_BYTES",
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
