"""Persistence for `langgraph dev`, enabled by langgraph.json's `checkpointer.path` (and its
`store.path`: `dev_store`, the store in the same database).

The dev server enters `dev_checkpointer()` once per worker thread and keeps every thread's
checkpoints where `$REPLAN_DEV_DB` says, chosen as the CLI's `--db` is: a `postgresql://` URL
keeps them in PostgreSQL, a path (or `sqlite:PATH`) in that SQLite file. Unset, the file is
`.langgraph_api/replan-dev.sqlite` under the directory the server runs in. The connection
settings are the CLI's, so `replan show --db SAME --thread-id ID` and `replan threads --db SAME`
read the runs started in Studio.

When the port `langgraph dev` was asked for (2024 unless `--port` says) is taken, the server
listens on another one and says so once, above its banner; clients written for 2024 would then
reach whatever holds that port. So replan logs it again as a warning when the server loads this
checkpointer (`port_note`), with the URL to use.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore

from replan.graphs.persistence import is_postgres_url, open_checkpointer, sqlite_path
from replan.graphs.run_store import open_run_store

DEFAULT_DEV_DB = Path(".langgraph_api") / "replan-dev.sqlite"
DEFAULT_DEV_PORT = 2024
"""The port `langgraph dev` listens on unless `--port` says otherwise."""
API_URL_ENV = "LANGGRAPH_API_URL"
"""Where `langgraph dev` records, in its own process, the URL it serves on."""

logger = logging.getLogger(__name__)


def dev_db() -> str:
    """Where the dev server keeps its checkpoints: `$REPLAN_DEV_DB` or the default file."""
    return os.environ.get("REPLAN_DEV_DB") or str(DEFAULT_DEV_DB)


def _requested_port(argv: Sequence[str]) -> int | None:
    """The port a `langgraph dev` command line asks for; None for any other command."""
    program = argv[0] if argv else ""
    is_langgraph = Path(program).stem == "langgraph" or "langgraph_cli" in program
    if not is_langgraph or "dev" not in argv[1:]:
        return None
    for position, arg in enumerate(argv):
        value = arg.removeprefix("--port=") if arg.startswith("--port=") else None
        if arg == "--port" and position + 1 < len(argv):
            value = argv[position + 1]
        if value is not None:
            return int(value) if value.isdigit() else None
    return DEFAULT_DEV_PORT


def port_note(argv: Sequence[str], api_url: str | None) -> str | None:
    """What to tell a user whose `langgraph dev` (command line `argv`) serves on `api_url`,
    not on the port it was asked for; None when it got that port (or is not `langgraph dev`)."""
    requested = _requested_port(argv)
    served = urlsplit(api_url).port if api_url else None
    if requested is None or served is None or served == requested:
        return None
    return (
        f"langgraph dev serves on {api_url}, not on port {requested}, which another process "
        f"holds: point Studio and clients (get_client(url=...)) at {api_url}, or free port "
        f"{requested} and restart"
    )


@functools.cache
def _note_port_once() -> None:
    if note := port_note(sys.argv, os.environ.get(API_URL_ENV)):
        logger.warning("replan: %s", note)


@asynccontextmanager
async def dev_store() -> AsyncIterator[BaseStore]:
    """The dev server's store, in the same database as its saver: the intents of tool calls
    (`replan.graphs.durable_calls`) are on disk before each call, where the server's own
    in-memory store writes its file every 10 s."""
    target = dev_db()
    if not is_postgres_url(target):
        sqlite_path(target).parent.mkdir(parents=True, exist_ok=True)
    async with open_run_store(target) as store:
        yield store


@asynccontextmanager
async def dev_checkpointer() -> AsyncIterator[BaseCheckpointSaver[str]]:
    """The dev server's saver on `dev_db()` (a SQLite file's folder is created)."""
    _note_port_once()
    target = dev_db()
    if not is_postgres_url(target):
        sqlite_path(target).parent.mkdir(parents=True, exist_ok=True)
    async with open_checkpointer(target) as saver:
        yield saver
