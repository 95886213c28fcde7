"""The storage protocol every plan backend implements, and the rules they all share.

A backend only has to read and write whole plans under its own lock or transaction: the
revision check, the bump and the keep-omitted-fields merge live in `apply_update`, so every
backend behaves the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from pydantic import ValidationError

from replan.state.clock import utc_now
from replan.state.plans.model import (
    InvalidPlan,
    Plan,
    PlanConflict,
    PlanCorrupt,
    PlanError,
    PlanListing,
    PlanNotFound,
    PlanSummary,
    PlanUpdate,
    validate_content,
    validate_label,
    validate_name,
)


@runtime_checkable
class PlanStorage(Protocol):
    """Where plans live. Implementations must make `upsert` and `delete` atomic."""

    def get(self, name: str) -> Plan | None:
        """The named plan, or None if there is none; raises PlanCorrupt if it is unreadable."""
        ...

    def upsert(self, update: PlanUpdate) -> Plan:
        """Create or update a plan (see `apply_update`) and return what was stored."""
        ...

    def list(self) -> PlanListing:
        """Summaries of every readable plan, sorted by name, with warnings for the others."""
        ...

    def delete(self, name: str, expected_revision: int | None = None) -> bool:
        """Remove a plan; False if there was none. Raises PlanConflict on a stale revision."""
        ...


def check_revision(name: str, expected: int | None, current: Plan | None) -> None:
    """Refuse the write unless `expected` is None or the current revision (0 when missing)."""
    current_revision = current.revision if current is not None else 0
    if expected is not None and expected != current_revision:
        raise PlanConflict(name, expected, current_revision)


def may_delete(name: str, expected: int | None, read: Callable[[str], Plan | None]) -> bool:
    """Whether the named plan exists and the caller may delete it (`read` fetches it).

    Raises PlanConflict on a stale revision. A corrupt plan may be deleted only without an
    expected revision, since there is no revision to compare.
    """
    validate_name(name)
    try:
        current = read(name)
    except PlanCorrupt:
        if expected is not None:
            raise
        return True
    if current is None:
        return False
    check_revision(name, expected, current)
    return True


def apply_update(current: Plan | None, update: PlanUpdate) -> Plan:
    """The plan that `update` turns `current` into, with the revision bumped.

    Raises PlanNotFound (must_exist on a missing plan), PlanConflict (stale revision) or
    InvalidPlan (bad name, empty content, a new plan without content).
    """
    name = validate_name(update.name)
    if current is None and update.must_exist:
        raise PlanNotFound(name)
    check_revision(name, update.expected_revision, current)
    if update.content is not None:
        validate_content(update.content)
    elif current is None:
        raise InvalidPlan(f"plan {name!r} does not exist yet: creating it needs content")
    labels = {
        field: validate_label(field, value)
        for field in ("title", "author", "status")
        if (value := getattr(update, field)) is not None
    }
    base: dict[str, Any] = current.model_dump() if current is not None else {"name": name}
    return Plan.model_validate(
        {
            **base,
            **labels,
            "content": update.content if update.content is not None else base["content"],
            "revision": (current.revision if current is not None else 0) + 1,
            "updated_at": utc_now(),
        }
    )


def decode_plan(name: str, raw: str | bytes | Mapping[str, Any]) -> Plan:
    """Parse a stored plan (JSON text or a row mapping); anything malformed is PlanCorrupt."""
    try:
        if isinstance(raw, str | bytes):
            plan = Plan.model_validate_json(raw)
        else:
            plan = Plan.model_validate(dict(raw))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "document"
        raise PlanCorrupt(name, f"{where}: {first['msg']}") from exc
    if plan.name != name:
        raise PlanCorrupt(name, f"it is stored under {name!r} but names itself {plan.name!r}")
    return plan


def make_listing(plans: Iterable[PlanSummary], warnings: Iterable[str] = ()) -> PlanListing:
    """A listing sorted by plan name."""
    return PlanListing(plans=sorted(plans, key=lambda plan: plan.name), warnings=list(warnings))


def listing_from_rows(rows: Iterable[Mapping[str, Any]]) -> PlanListing:
    """A listing of database rows (one plan per row); a malformed row becomes a warning."""
    plans = []
    warnings = []
    for row in rows:
        try:
            plans.append(decode_plan(str(row["name"]), row).summary())
        except PlanError as exc:
            warnings.append(str(exc))
    return make_listing(plans, warnings)
