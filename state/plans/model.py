"""Plan documents: the data model, name rules and the errors every storage raises.

A plan is a named markdown document shared by agents. Its `revision` starts at 1 and grows
by one on every write; callers pass the revision they last saw to detect concurrent edits.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9_-]*")
MAX_NAME_LENGTH = 64
MAX_CONTENT_BYTES = 10 * 1024 * 1024
"""The largest plan body in UTF-8 bytes; also the largest file the plan file tools import."""
MAX_CONTENT_SIZE = f"{MAX_CONTENT_BYTES // (1024 * 1024)} MiB"
"""`MAX_CONTENT_BYTES` as people read it."""
MAX_LABEL_LENGTH = 200
SUGGESTED_STATUSES = ("draft", "in-progress", "blocked", "done")
"""Status is a free-form label; these are only examples offered to models."""


class PlanError(Exception):
    """Base class of every plan-storage failure."""


class InvalidPlan(PlanError, ValueError):
    """The request breaks a rule (bad name, empty content, oversized field)."""


class PlanNotFound(PlanError, LookupError):
    """The named plan does not exist."""

    def __init__(self, name: str) -> None:
        super().__init__(f"plan {name!r} does not exist")
        self.name = name


class PlanConflict(PlanError):
    """The caller's expected revision is not the plan's current revision (0 = no plan)."""

    def __init__(self, name: str, expected: int, current: int) -> None:
        super().__init__(f"plan {name!r} is at revision {current}, not {expected}")
        self.name = name
        self.expected = expected
        self.current = current


class PlanCorrupt(PlanError):
    """The stored plan exists but cannot be read or decoded."""

    def __init__(self, name: str, detail: str) -> None:
        super().__init__(f"plan {name!r} is stored but unreadable: {detail}")
        self.name = name
        self.detail = detail


class PlanStorageError(PlanError):
    """The storage backend itself failed (disk, database)."""


def validate_name(name: str) -> str:
    """Return `name` unchanged if it is a valid plan name; refuse it otherwise (never rewrite)."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise InvalidPlan(
            f"invalid plan name {name!r}: use lowercase letters, digits, '-' and '_', "
            "starting with a letter or digit"
        )
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidPlan(f"invalid plan name: longer than {MAX_NAME_LENGTH} characters")
    return name


def validate_content(content: str) -> str:
    """Refuse empty (or whitespace-only), oversized and not-quite-Unicode plan bodies."""
    if not content.strip():
        raise InvalidPlan("plan content is empty: a plan needs a body")
    if len(_utf8("content", content)) > MAX_CONTENT_BYTES:
        raise InvalidPlan(f"plan content is larger than {MAX_CONTENT_SIZE}")
    return content


def validate_label(field: str, value: str) -> str:
    """Refuse over-long single-line labels (title, author, status) and lone surrogates."""
    if len(value) > MAX_LABEL_LENGTH or "\n" in value:
        raise InvalidPlan(f"{field} must be one line of at most {MAX_LABEL_LENGTH} characters")
    _utf8(field, value)
    return value


def lone_surrogate(text: str) -> str | None:
    """Where `text` holds a lone surrogate ("'\\ud800' at character 5"), or None.

    JSON can carry one ("\\ud800") into a Python string, but it is not Unicode text: it cannot
    be encoded, stored or sent back to a model.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"{text[exc.start]!r} at character {exc.start}"
    return None


def _utf8(field: str, text: str) -> bytes:
    """`text` as UTF-8; InvalidPlan if it holds a lone surrogate."""
    if (where := lone_surrogate(text)) is not None:
        raise InvalidPlan(f"{field} holds a lone surrogate ({where}): send valid Unicode text")
    return text.encode("utf-8")


class PlanSummary(BaseModel):
    """A plan without its body: what listings and status calls show."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=NAME_PATTERN.pattern, max_length=MAX_NAME_LENGTH)
    title: str = ""
    author: str = ""
    status: str = ""
    revision: int = Field(ge=1)
    updated_at: str


class Plan(PlanSummary):
    """A shared plan document; `author` records who wrote it last."""

    content: str = Field(min_length=1)

    def summary(self) -> PlanSummary:
        """This plan without its content."""
        return PlanSummary.model_validate(self.model_dump(exclude={"content"}))


class PlanUpdate(BaseModel):
    """A create-or-update request. A field left as None keeps the stored value.

    `expected_revision` turns on optimistic locking (0 means "the plan must not exist yet");
    `must_exist` refuses to create a plan that is missing.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    content: str | None = None
    title: str | None = None
    author: str | None = None
    status: str | None = None
    expected_revision: int | None = Field(default=None, ge=0)
    must_exist: bool = False


class PlanListing(BaseModel):
    """Every readable plan, plus one warning per stored entry that could not be read."""

    model_config = ConfigDict(frozen=True)

    plans: list[PlanSummary]
    warnings: list[str] = []
