"""Fixtures for the Aegra tests: its environment, PostgreSQL and Redis, the scripted model, and
one server shared by the module's tests (`aegra_served`).

Without a Python 3.12, a PostgreSQL or a Redis server these tests are skipped with the reason;
with `REPLAN_REQUIRE_AEGRA=1` (set by `.ci/run`) they fail instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from replan.testing import ScriptedOpenAIServer, aegra, plan_script
from tests.support import aegra_server as here
from tests.support import pg_support

SHARED_LIST = "served-test"
"""The task list `plan_execute_shared` uses in these tests."""


def unavailable(problem: str) -> NoReturn:
    """Skip the test saying how to enable it, or fail it when REPLAN_REQUIRE_AEGRA=1."""
    if os.environ.get(here.REQUIRE_ENV) == "1":
        pytest.fail(f"{here.REQUIRE_ENV}=1 but {problem}")
    pytest.skip(f"{problem}: the Aegra tests need Python 3.12+, PostgreSQL and Redis")


@pytest.fixture(scope="session")
def aegra_command() -> Path:
    """The `aegra` command of `.venv-aegra/` (made or updated for this session if needed)."""
    python = aegra.find_python()
    if python is None:
        unavailable(f"no Python 3.12 or later found (set {aegra.PYTHON_ENV})")
    return aegra.ensure_venv(python, here.VENV, here.REPO)


@pytest.fixture(scope="session")
def postgres_server() -> str:
    """The URL of the test PostgreSQL server's test database (tests/support/pg_support.py)."""
    return pg_support.database_url()


@pytest.fixture(scope="session")
def redis() -> str:
    """The URL of a Redis server that answers."""
    url = here.redis_url()
    if problem := aegra.redis_problem(url):
        unavailable(problem)
    return url


@pytest.fixture(scope="session")
def model() -> Iterator[ScriptedOpenAIServer]:
    """The scripted model every server of the session talks to; a test may swap its
    `responder` (and must put `plan_script.respond` back)."""
    with ScriptedOpenAIServer(plan_script.respond) as scripted:
        yield scripted


@dataclass(frozen=True)
class Cluster:
    """What a group of Aegra servers share: a database, Redis names and their environment."""

    database_url: str
    env: dict[str, str]
    command: Path
    folder: Path

    def server(self, name: str) -> AbstractContextManager[aegra.AegraServer]:
        """Start one more server of the group; killed on exit."""
        return here.server(self.command, self.env, self.folder / f"{name}.log")


@pytest.fixture
def cluster(
    aegra_command: Path,
    postgres_server: str,
    redis: str,
    model: ScriptedOpenAIServer,
    tmp_path: Path,
) -> Iterator[Cluster]:
    """A new database and Redis names for servers a test starts itself."""
    with aegra.aegra_database(postgres_server) as database_url:
        yield Cluster(
            database_url, cluster_env(database_url, redis, model), aegra_command, tmp_path
        )


def cluster_env(database_url: str, redis: str, model: ScriptedOpenAIServer) -> dict[str, str]:
    """The environment of a group of test servers on `database_url`."""
    extra = {
        **here.TEST_LEASES,
        "OPENAI_API_KEY": "test",
        "OPENAI_BASE_URL": model.base_url,
        "REPLAN_TASK_LIST": SHARED_LIST,
    }
    return aegra.aegra_env(database_url, redis, aegra.redis_names(), extra)


@dataclass(frozen=True)
class Served:
    """The module's server: its URL, SDK client and database, the scripted model, its log."""

    url: str
    client: SyncLangGraphClient
    database_url: str
    model: ScriptedOpenAIServer
    log: Path


@pytest.fixture(scope="module")
def aegra_served(
    aegra_command: Path,
    postgres_server: str,
    redis: str,
    model: ScriptedOpenAIServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Served]:
    """One Aegra server on a database of its own, for the tests of a module."""
    folder = tmp_path_factory.mktemp("aegra")
    with aegra.aegra_database(postgres_server) as database_url:
        env = cluster_env(database_url, redis, model)
        with here.server(aegra_command, env, folder / "server.log") as server:
            client = get_sync_client(url=server.url)
            yield Served(server.url, client, database_url, model, server.log)
