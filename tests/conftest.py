"""Suite-wide setup: the developer's environment does not leak into the tests; fixtures shared
by several test modules."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from langchain_core.runnables.retry import ExponentialJitterParams

from replan.graphs.model import http_client
from replan.graphs.model import turn as chat_model
from replan.graphs.model.decision_modes import fallbacks
from replan.testing import ScriptedOpenAIServer
from replan.testing import plan_script as plan_execute_script
from tests.support import pg_support

CLEARED_PREFIXES = ("REPLAN_", "OPENAI_", "LANGSMITH_", "LANGCHAIN_")
"""replan's own settings (database, dev database, model, plans folder), the OpenAI client's
(key, base URL, organisation...) and LangSmith tracing."""
CLEARED_NAMES = ("XDG_DATA_HOME", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
"""The plans folder's fallback, and proxies (every test talks to 127.0.0.1 only)."""
KEPT_NAMES = (
    pg_support.URL_ENV,
    pg_support.REQUIRE_ENV,
    "REPLAN_REQUIRE_AEGRA",
    "REPLAN_REQUIRE_BFCL",
    "REPLAN_REQUIRE_BROWSER",
    "REPLAN_AEGRA_PYTHON",
    "REPLAN_TEST_REDIS_URL",
)
"""The test suite's own settings: which PostgreSQL server to test against, and whether it must;
the same for Aegra (tests/server/aegra.py): its Python, its Redis, and whether they must be
there."""


def _cleared(name: str) -> bool:
    if name in KEPT_NAMES:
        return False
    return name.upper().startswith(CLEARED_PREFIXES) or name.upper() in CLEARED_NAMES


@pytest.fixture(autouse=True, scope="session")
def _clean_environment() -> Iterator[None]:
    """Unset every variable that would change what replan or its clients do, for the whole
    session (subprocesses inherit the clean environment); tests set what they need."""
    with pytest.MonkeyPatch.context() as patch:
        for name in [name for name in os.environ if _cleared(name)]:
            patch.delenv(name)
        yield


@pytest.fixture(autouse=True)
def _environment_restored() -> Iterator[None]:
    """Undo what a test, or code it runs in this process (a benchmark's `main` sets
    OPENAI_API_KEY), left in the environment: no test passes thanks to the one before it."""
    before = dict(os.environ)
    yield
    if os.environ != before:
        os.environ.clear()
        os.environ.update(before)


QUICK_RETRY_BACKOFF = ExponentialJitterParams(max=0.05, jitter=0.01)
"""Waits between retries of an unusable model reply in this process's tests: what is tested is
how often a reply is asked for again, not the ~1 s waits a real server is given."""


QUICK_CLIENT_RETRY_SECONDS = 0.01
"""The first wait before retrying an HTTP 5xx or 429 without `retry-after` (0.5 s by default,
doubling), in this process's tests: refusals of the scripted quirks (llama-cpp-python answers
HTTP 500) are retried at once. A reply's own `retry-after-ms` still applies."""


@pytest.fixture(autouse=True)
def _quick_retries_of_unusable_replies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chat_model, "RETRY_BACKOFF", QUICK_RETRY_BACKOFF)
    monkeypatch.setattr(http_client, "INITIAL_RETRY_SECONDS", QUICK_CLIENT_RETRY_SECONDS)
    monkeypatch.setattr(http_client, "MAX_RETRY_SECONDS", 4 * QUICK_CLIENT_RETRY_SECONDS)


@pytest.fixture(autouse=True)
def _servers_unknown() -> None:
    """Each test's runs learn their servers' ways anew (a scripted server may get a port an
    earlier test's had)."""
    fallbacks.forget_servers()


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A `postgresql://` URL whose connections see only a new, empty schema made for this test
    (tests/support/pg_support.py); skipped without a server, failed when
    REPLAN_REQUIRE_POSTGRES=1."""
    with pg_support.fresh_schema() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def runs_db(request: pytest.FixtureRequest) -> list[str]:
    """The `--db` arguments of a `replan` runs database: none (./replan.sqlite in the working
    folder) or a PostgreSQL URL from `postgres_url`."""
    if request.param == "postgres":
        return ["--db", request.getfixturevalue("postgres_url")]
    return []


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAIServer]:
    """A scripted OpenAI-compatible server answering as `replan.testing.plan_script` does, with
    an API key set for the `ChatOpenAI` clients of the test."""
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with ScriptedOpenAIServer(plan_execute_script.respond) as scripted:
        yield scripted
