"""The timestamp format every stored record uses (a task's `createdAt`, a plan's `updated_at`)."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> str:
    """The current time in UTC as ISO 8601 with milliseconds: `2025-01-31T09:30:00.123+00:00`.

    `datetime.fromisoformat` reads it back, as it does the whole-second stamps of older files.
    """
    return datetime.now(UTC).isoformat(timespec="milliseconds")
