"""Fixtures shared by several test modules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import pg_support


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A `postgresql://` URL whose connections see only a new, empty schema made for this test
    (tests/pg_support.py); skipped without a server, failed when REPLAN_REQUIRE_POSTGRES=1."""
    with pg_support.fresh_schema() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def runs_db(request: pytest.FixtureRequest) -> list[str]:
    """The `--db` arguments of a `replan` runs database: none (./replan.sqlite in the working
    folder) or a PostgreSQL URL from `postgres_url`."""
    if request.param == "postgres":
        return ["--db", request.getfixturevalue("postgres_url")]
    return []
