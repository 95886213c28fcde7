"""PostgreSQL for tests: a new, empty schema per test on the server the tests are given.

The server and database are `$REPLAN_TEST_POSTGRES_URL` (default `DEFAULT_URL`; the database
is created through the server's `postgres` maintenance database if it does not exist). Tests
ask for the `postgres_url` fixture (tests/conftest.py): the URL of that database with a schema
made for the test as its search path (`options=-csearch_path=...`), so every table a test or
its subprocesses create lands there and tests, or concurrent test runs, never see each
other's rows. After the test its connections are closed and the schema is dropped. A schema
costs a few milliseconds where a database costs seconds.

When no server answers, or psycopg is not installed, such tests are skipped with a reason that
says how to enable them; with `REPLAN_REQUIRE_POSTGRES=1` (set by `.ci/run`) they fail instead.
"""

from __future__ import annotations

import functools
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest

URL_ENV = "REPLAN_TEST_POSTGRES_URL"
DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"
REQUIRE_ENV = "REPLAN_REQUIRE_POSTGRES"
MAINTENANCE_DB = "postgres"
SCHEMA_PREFIX = "replan_test_"
ENABLE_HINT = (
    f"start PostgreSQL, point {URL_ENV} at it (default {DEFAULT_URL}) and "
    "pip install -e '.[postgres]'"
)


def with_database(url: str, name: str) -> str:
    """`url` naming database `name` instead of its own."""
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def with_schema(url: str, schema: str) -> str:
    """`url` whose connections use `schema` (search path) and name themselves after it."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    query["options"] = f"{query.get('options', '')} -csearch_path={schema}".strip()
    query["application_name"] = schema
    return urlunsplit(parts._replace(query=urlencode(query)))


@functools.cache
def _test_database() -> tuple[str, str]:
    """(URL of the test database, "") or ("", why there is none); creates it if missing."""
    try:
        import psycopg
        from psycopg import errors, sql
    except ImportError:
        return "", "psycopg is not installed"
    url = os.environ.get(URL_ENV) or DEFAULT_URL
    try:
        with psycopg.connect(url, connect_timeout=5):
            return url, ""
    except psycopg.Error as exc:
        problem = " ".join(str(exc).split())
    name = urlsplit(url).path.lstrip("/")
    try:
        with psycopg.connect(with_database(url, MAINTENANCE_DB), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except errors.DuplicateDatabase:
        pass  # created by a concurrent test run
    except psycopg.Error:
        return "", f"no PostgreSQL server answers at {url} ({problem})"
    return url, ""


def database_url() -> str:
    """The URL of the test database; skips the calling test (fails it when
    REPLAN_REQUIRE_POSTGRES=1) when there is no server."""
    url, problem = _test_database()
    if not url:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but {problem}")
        pytest.skip(f"{problem}: to run the PostgreSQL tests, {ENABLE_HINT}")
    return url


@contextmanager
def fresh_schema() -> Iterator[str]:
    """A URL whose connections see only a new, empty schema; on exit the connections opened
    with it are closed and the schema is dropped."""
    import psycopg
    from psycopg import sql

    url = database_url()
    schema = f"{SCHEMA_PREFIX}{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    try:
        yield with_schema(url, schema)
    finally:
        terminate_connections(schema)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def schema_of(url: str) -> str:
    """The schema of a `fresh_schema` URL (its connections' application name)."""
    return dict(parse_qsl(urlsplit(url).query))["application_name"]


def terminate_connections(schema: str) -> int:
    """Close, from the server's side, every connection opened with `schema`'s URL; how many."""
    import psycopg

    with psycopg.connect(database_url(), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = %s AND pid <> pg_backend_pid()",
            (schema,),
        ).fetchall()
    return len(rows)
