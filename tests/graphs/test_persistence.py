"""How `open_checkpointer` reads a `--db` value (paths and `sqlite:` forms, server URLs) and
what its savers leave out (the errors of tasks a stop cancelled)."""

from __future__ import annotations

import asyncio
import concurrent.futures
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.types import ERROR
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from replan.graphs.dev_checkpointer import port_note
from replan.graphs.persistence import (
    DatabaseUnavailableError,
    database_exists,
    display_target,
    is_postgres_url,
    open_checkpointer,
    sqlite_path,
)


@pytest.mark.parametrize(
    ("target", "path"),
    [
        ("runs.db", "runs.db"),
        ("sqlite:runs.db", "runs.db"),
        ("sqlite:///runs.db", "runs.db"),
        ("sqlite:////srv/runs.db", "/srv/runs.db"),
        ("sqlite:/srv/runs.db", "/srv/runs.db"),
    ],
)
def test_sqlite_targets_name_a_file(target: str, path: str) -> None:
    assert not is_postgres_url(target)
    assert sqlite_path(target) == Path(path)


@pytest.mark.parametrize("url", ["postgresql://h/db", "postgres://u@h:5432/db", "POSTGRESQL://h"])
def test_postgres_urls_are_recognised_and_need_no_file(url: str) -> None:
    assert is_postgres_url(url) and database_exists(url)


def test_other_url_schemes_are_refused() -> None:
    with pytest.raises(DatabaseUnavailableError, match="unsupported database URL scheme 'mysql'"):
        sqlite_path("mysql://root@h/db")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:pw@h:5/db", "postgresql://u:***@h:5/db"),
        (
            "postgresql://u:pw@h/db?password=pw&sslmode=require",
            "postgresql://u:***@h/db?password=***&sslmode=require",
        ),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("runs.db", "runs.db"),
    ],
)
def test_passwords_are_masked_for_display(url: str, shown: str) -> None:
    assert display_target(url) == shown


def test_a_sqlite_url_opens_the_file_it_names(tmp_path: Path) -> None:
    async def open_it() -> None:
        async with open_checkpointer(f"sqlite:{tmp_path}/runs.db") as saver:
            assert isinstance(saver, AsyncSqliteSaver)

    asyncio.run(open_it())
    assert (tmp_path / "runs.db").is_file() and database_exists(f"sqlite:///{tmp_path}/runs.db")


def test_a_sqlite_file_that_cannot_be_opened_is_one_line(tmp_path: Path) -> None:
    async def open_it() -> None:
        async with open_checkpointer(tmp_path / "missing-folder" / "runs.db"):
            pass

    with pytest.raises(DatabaseUnavailableError) as caught:
        asyncio.run(open_it())
    assert str(caught.value) == (
        f"cannot open the runs database {tmp_path}/missing-folder/runs.db: "
        f"the folder {tmp_path}/missing-folder does not exist"
    )


def test_a_task_cancelled_by_a_stop_is_not_saved_as_failed(
    tmp_path: Path, runs_db: list[str]
) -> None:
    """LangGraph saves a stopped task's `CancelledError` as its error: the saver (SQLite or
    PostgreSQL) leaves those writes out (the task is then not done, as after a kill); other
    errors are kept."""
    target = runs_db[-1] if runs_db else tmp_path / "runs.db"

    async def saved_writes(task_writes: dict[str, list[tuple[str, Any]]]) -> list[Any]:
        async with open_checkpointer(target) as saver:
            config: RunnableConfig = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
            config = await saver.aput(config, empty_checkpoint(), {}, {})
            for task_id, writes in task_writes.items():
                await saver.aput_writes(config, writes, task_id)
            stored = await saver.aget_tuple(config)
        assert stored is not None
        return list(stored.pending_writes or [])

    assert asyncio.run(
        saved_writes(
            {
                "stopped": [("plan", ["half done"]), (ERROR, asyncio.CancelledError())],
                "also stopped": [(ERROR, concurrent.futures.CancelledError())],
                "failed": [(ERROR, ValueError("bad reply"))],
                "done": [("plan", ["step"])],
            }
        )
    ) == [("done", "plan", ["step"]), ("failed", ERROR, "ValueError('bad reply')")]


LANGGRAPH_DEV = ["/venv/bin/langgraph", "dev", "--no-browser"]


@pytest.mark.parametrize(
    ("argv", "api_url", "moved_from"),
    [
        (LANGGRAPH_DEV, "http://127.0.0.1:2024", None),
        (LANGGRAPH_DEV, "http://127.0.0.1:41234", 2024),
        ([*LANGGRAPH_DEV, "--port", "8123"], "http://127.0.0.1:8123", None),
        ([*LANGGRAPH_DEV, "--port", "8123"], "http://127.0.0.1:2024", 8123),
        ([*LANGGRAPH_DEV, "--port=8123"], "http://127.0.0.1:9000", 8123),
        (LANGGRAPH_DEV, "https://quick-tunnel.trycloudflare.com", None),  # --tunnel: no port
        (LANGGRAPH_DEV, None, None),
        (["/venv/bin/aegra", "serve"], "http://127.0.0.1:8000", None),
        (["/venv/bin/langgraph", "up"], "http://127.0.0.1:8123", None),
    ],
)
def test_the_dev_server_says_when_it_moved_off_its_port(
    argv: list[str], api_url: str | None, moved_from: int | None
) -> None:
    note = port_note(argv, api_url)
    if moved_from is None:
        assert note is None
    else:
        assert note == (
            f"langgraph dev serves on {api_url}, not on port {moved_from}, which another "
            f"process holds: point Studio and clients (get_client(url=...)) at {api_url}, or "
            f"free port {moved_from} and restart"
        )
