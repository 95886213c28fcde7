"""In-memory plan storage: no persistence, safe to share between threads and agents."""

from __future__ import annotations

import threading

from replan.state.plans.model import Plan, PlanListing, PlanUpdate, validate_name
from replan.state.plans.storage import apply_update, make_listing, may_delete


class InMemoryPlanStorage:
    """Plans kept in a dict for the life of the object (tests, throw-away sessions)."""

    def __init__(self) -> None:
        self._plans: dict[str, Plan] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return "InMemoryPlanStorage()"

    def get(self, name: str) -> Plan | None:
        """The named plan, or None."""
        with self._lock:
            return self._plans.get(validate_name(name))

    def upsert(self, update: PlanUpdate) -> Plan:
        """Create or update a plan atomically."""
        with self._lock:
            plan = apply_update(self._plans.get(update.name), update)
            self._plans[plan.name] = plan
            return plan

    def list(self) -> PlanListing:
        """Summaries of every plan, sorted by name."""
        with self._lock:
            plans = list(self._plans.values())
        return make_listing(plan.summary() for plan in plans)

    def delete(self, name: str, expected_revision: int | None = None) -> bool:
        """Remove a plan; False if there was none."""
        with self._lock:
            if not may_delete(name, expected_revision, self._plans.get):
                return False
            del self._plans[name]
            return True
