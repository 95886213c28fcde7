"""A fresh PostgreSQL schema per test, on the server named by REPLAN_TEST_POSTGRES_URL.

Default `postgresql://postgres@127.0.0.1:5432/test`; the database is created (through the
server's `postgres` maintenance database) when it does not exist. When no server answers, or
psycopg is not installed, the test is skipped with a reason saying how to enable it, unless
REPLAN_REQUIRE_POSTGRES=1, which makes it fail instead (CI sets it).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

import pytest

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"
ENABLE_HINT = (
    "start PostgreSQL and point REPLAN_TEST_POSTGRES_URL at a database you may create "
    f"schemas in (default {DEFAULT_URL}); install the extra: pip install -e '.[postgres,dev]'"
)


def _unavailable(reason: str) -> None:
    if os.environ.get("REPLAN_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"PostgreSQL is required (REPLAN_REQUIRE_POSTGRES=1): {reason}")
    pytest.skip(f"{reason}; to run this test, {ENABLE_HINT}")


@contextmanager
def fresh_schema_url() -> Iterator[str]:
    """A URL whose connections see only a new, empty schema; the schema is dropped after."""
    try:
        import psycopg
        from psycopg import sql
    except ImportError:
        _unavailable("psycopg is not installed")
        raise  # not reached: skip and fail raise
    url = os.environ.get("REPLAN_TEST_POSTGRES_URL", DEFAULT_URL)
    try:
        connection = psycopg.connect(url, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as error:
        if f'database "{psycopg.conninfo.conninfo_to_dict(url).get("dbname")}" does not' not in str(
            error
        ):
            _unavailable(f"no PostgreSQL answers at {url} ({str(error).strip()})")
        _create_database(url)
        connection = psycopg.connect(url, autocommit=True, connect_timeout=5)
    schema = f"replan_test_{secrets.token_hex(6)}"
    with connection:
        connection.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        try:
            separator = "&" if "?" in url else "?"
            yield f"{url}{separator}options={quote(f'-c search_path={schema}')}"
        finally:
            connection.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def _create_database(url: str) -> None:
    import psycopg
    from psycopg import sql

    params = psycopg.conninfo.conninfo_to_dict(url)
    name = str(params["dbname"])
    maintenance = psycopg.conninfo.make_conninfo(url, dbname="postgres")
    with psycopg.connect(maintenance, autocommit=True, connect_timeout=5) as connection:
        try:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        except (psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
            pass  # another test run created it first
