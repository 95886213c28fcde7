"""Where plan–execute runs are saved: a SQLite file (the default) or a PostgreSQL server.

`open_checkpointer(target)` chooses the saver by the form of `target`:

- `postgresql://...` or `postgres://...`: an `AsyncPostgresSaver` (install it with
  `pip install 'replan[postgres]'`). Processes on any number of machines can share the
  database; the tables are created on first use, by one process at a time.
- a path, `sqlite:PATH` or `sqlite:///PATH`: an `AsyncSqliteSaver` over a connection with a busy
  timeout and WAL journaling, so concurrent runs in different processes wait for each other's
  writes instead of failing with "database is locked".

`open_checkpointer(target, read_only=True)` only reads a SQLite file: it works on a read-only
file or filesystem and never creates or changes the file (`replan show` and `replan threads`).

A database that cannot be opened or reached (a folder, a missing folder, a file that is not
SQLite, a read-only file for a writer, no server, unknown database, refused login, the
connection lost during a run, PostgreSQL support not installed) raises
`DatabaseUnavailableError`, whose message is one line. A task cancelled because its run was
stopped is not saved as failed (`replan.graphs.stopped_tasks`). The CLI and the dev-server
configuration share all of this. A run's settings are its `settings` state channel
(`saved_settings`); a CLI run also stores its `--tools` reference and start time in its
checkpoints' metadata (`run_metadata`).
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import re
import sqlite3
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

if TYPE_CHECKING:  # loaded when used: `replan --help` reads DEFAULT_DB from here
    import aiosqlite
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.store.postgres.aio import AsyncPostgresStore
    from psycopg import AsyncConnection
    from psycopg.rows import DictRow

DEFAULT_DB = "replan.sqlite"
"""The runs database when neither `--db` nor `$REPLAN_DB` names one."""
BUSY_TIMEOUT_SECONDS = 30.0
POSTGRES_SCHEMES = ("postgresql", "postgres")
SQLITE_PREFIX = "sqlite:"
SETUP_LOCK_KEY = 0x7265706C616E  # "replan" in ASCII
"""The PostgreSQL advisory lock that lets one process at a time create or migrate the tables
(`AsyncPostgresSaver.setup()` run by two processes at once on a fresh database can fail)."""
SETUP_WAIT_SECONDS = 60.0
INSTALL_POSTGRES = "pip install 'replan[postgres]'"
SETTINGS_KEY = "replan_settings"
"""Checkpoint metadata key where CLI runs of earlier versions kept a copy of their settings as
JSON (with their `--tools` reference as `tools`): read, never written. A run's settings live in
its `settings` state channel (`saved_settings`)."""
TOOLS_KEY = "replan_tools"
"""Checkpoint metadata key holding a CLI run's `--tools` reference (not a `Context` field: a
run started from the library has its tools in its graph)."""
STARTED_KEY = "replan_started_at"
"""Checkpoint metadata key holding when a CLI run started (ISO-8601, UTC)."""
LEGACY_TOOLS = "tools"
"""Where the `--tools` reference sat in the settings copy of `SETTINGS_KEY`."""
_THREADS_SQL = (
    "SELECT thread_id FROM checkpoints WHERE checkpoint_ns = '' "
    "GROUP BY thread_id ORDER BY MAX(checkpoint_id) DESC"
)
_URL_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


class DatabaseUnavailableError(Exception):
    """The runs database cannot be opened or reached; the message is one line that names it."""


def run_metadata(tools_reference: str | None, started_at: str | None) -> dict[str, str]:
    """The config metadata a CLI run gives every checkpoint it writes: its `--tools` reference
    and when it started (LangGraph copies plain strings of it into each checkpoint)."""
    given = {TOOLS_KEY: tools_reference, STARTED_KEY: started_at}
    return {key: value for key, value in given.items() if value is not None}


def _legacy_copy(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """The settings copy an earlier version's CLI run kept in its checkpoint metadata."""
    try:
        settings = json.loads((metadata or {}).get(SETTINGS_KEY) or "null")
    except (TypeError, ValueError):
        return {}
    return settings if isinstance(settings, dict) else {}


def saved_settings(
    values: Mapping[str, Any], metadata: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """A stored run's settings: its `settings` state channel (the one copy, saved by the graph
    when the run starts and whenever a caller changes them), else the copy an earlier version's
    CLI kept in the checkpoint metadata; None for a run that saved none."""
    if isinstance(saved := values.get("settings"), Mapping) and saved:
        return dict(saved)
    legacy = _legacy_copy(metadata)
    legacy.pop(LEGACY_TOOLS, None)
    return legacy or None


def stored_tools(metadata: Mapping[str, Any] | None) -> str | None:
    """The `--tools` reference a CLI run stored in its checkpoint metadata, if any."""
    reference = (metadata or {}).get(TOOLS_KEY) or _legacy_copy(metadata).get(LEGACY_TOOLS)
    return None if reference is None else str(reference)


def checkpoint_serializer() -> JsonPlusSerializer:
    """A serializer for any saver of replan checkpoints (`InMemorySaver(serde=...)`): it lets
    the non-LangChain types stored in checkpoints (task lists, and task-call changes in the
    writes of an unfinished step) back out without LangGraph's unregistered-type warning."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from replan.state.tasks import TaskContext
    from replan.tools.task_tools import TaskCallChange

    allowed = [(cls.__module__, cls.__name__) for cls in (TaskContext, TaskCallChange)]
    return JsonPlusSerializer(allowed_msgpack_modules=allowed)


def with_checkpoint_serializer(saver: BaseCheckpointSaver[Any]) -> BaseCheckpointSaver[Any]:
    """A shallow copy of `saver` (same connection or pool) that uses `checkpoint_serializer()`,
    for a saver made by someone else, such as a server that attaches its own."""
    clone = copy.copy(saver)
    clone.serde = checkpoint_serializer()
    return clone


def is_postgres_url(target: str | Path) -> bool:
    """Whether `target` names a PostgreSQL database (`postgresql://` or `postgres://`)."""
    match = _URL_SCHEME.match(str(target))
    return match is not None and match[1].lower() in POSTGRES_SCHEMES


def sqlite_path(target: str | Path) -> Path:
    """The file a SQLite target names: a path, `sqlite:PATH` or `sqlite:///PATH`.

    Raises DatabaseUnavailableError for a URL of any other kind (`mysql://...`).
    """
    text = str(target)
    if text.startswith(SQLITE_PREFIX):
        rest = text.removeprefix(SQLITE_PREFIX)
        return Path(rest.removeprefix("///") if rest.startswith("///") else rest)
    if match := _URL_SCHEME.match(text):
        raise DatabaseUnavailableError(
            f"unsupported database URL scheme {match[1]!r}: use a file path, "
            "sqlite:PATH or postgresql://USER@HOST:PORT/DATABASE"
        )
    return Path(text)


def database_exists(target: str | Path) -> bool:
    """Whether there may be runs to read: the SQLite file exists, or `target` is a server URL
    (a server is asked when connecting; a missing database is reported then)."""
    return is_postgres_url(target) or sqlite_path(target).exists()


def display_target(target: str | Path) -> str:
    """`target` as it may be shown in messages and logs: a URL's password is masked."""
    text = str(target)
    if not is_postgres_url(text):
        return text
    parts = urlsplit(text)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = f"{parts.username or ''}:***@{netloc.rpartition('@')[2]}"
    query = [(key, "***" if key == "password" else value) for key, value in parse_qsl(parts.query)]
    return urlunsplit(parts._replace(netloc=netloc, query=urlencode(query, safe="*")))


def unavailable(doing: str, shown: str, exc: BaseException) -> DatabaseUnavailableError:
    return DatabaseUnavailableError(
        f"{doing} the runs database {shown}: {' '.join(str(exc).split())}"
    )


@asynccontextmanager
async def open_checkpointer(
    target: str | Path = DEFAULT_DB,
    *,
    busy_timeout: float = BUSY_TIMEOUT_SECONDS,
    read_only: bool = False,
) -> AsyncIterator[BaseCheckpointSaver[str]]:
    """A ready saver for `target` (see the module docstring); closes its connection on exit.

    Raises DatabaseUnavailableError when the database cannot be opened, or when it fails
    (SQLite) or the PostgreSQL connection breaks while the caller uses the saver. `read_only`
    matters for SQLite files only.
    """
    if is_postgres_url(target):
        async with _postgres_saver(str(target)) as postgres:
            yield postgres
    else:
        async with _sqlite_saver(sqlite_path(target), busy_timeout, read_only) as sqlite:
            yield sqlite


def _unusable(path: Path, read_only: bool) -> str | None:
    """Why `path` cannot hold a database, when that is plain before SQLite tries."""
    if path.is_dir():
        return "it is a folder"
    if not path.parent.is_dir():
        return f"the folder {path.parent} does not exist"
    if not read_only and not path.exists() and not os.access(path.parent, os.W_OK):
        folder = path.absolute().parent
        return f"the folder {folder} is not writable, so the file cannot be created there"
    return None


async def _connect(path: Path, busy_timeout: float, read_only: bool) -> aiosqlite.Connection:
    """A connection to `path`: WAL and a busy timeout for writers; for readers, one that never
    writes next to the file.

    A WAL database needs its `-shm` file to be read; in a folder nobody may write to (a
    read-only filesystem) that file cannot be created, and then the database is opened as
    immutable: no process can be changing it there.
    """
    import aiosqlite

    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    # Opened once without aiosqlite first: when its connect fails, its worker thread outlives
    # the failure and reports "Event loop is closed" at exit.
    sqlite3.connect(uri if read_only else path, timeout=busy_timeout, uri=read_only).close()
    if read_only:
        conn = await aiosqlite.connect(uri, uri=True, timeout=busy_timeout)
    else:
        conn = await aiosqlite.connect(str(path), timeout=busy_timeout)
    try:
        await conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        if read_only:
            await conn.execute("SELECT 1 FROM sqlite_master LIMIT 1")
        else:
            await conn.execute("PRAGMA journal_mode = WAL")
        return conn
    except sqlite3.OperationalError:
        await conn.close()  # an open connection keeps the process alive at exit
        if not read_only or os.access(path.parent, os.W_OK):
            raise
        return await aiosqlite.connect(f"{uri}&immutable=1", uri=True, timeout=busy_timeout)
    except BaseException:
        await conn.close()
        raise


async def _ready_saver(conn: aiosqlite.Connection, path: Path, read_only: bool) -> AsyncSqliteSaver:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from replan.graphs.stopped_tasks import leaving_stopped_tasks_out

    saver = leaving_stopped_tasks_out(AsyncSqliteSaver)(conn, serde=checkpoint_serializer())
    if not read_only:
        await saver.setup()
        return saver
    query = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'checkpoints'"
    async with conn.execute(query) as cursor:
        if await cursor.fetchone() is None:
            raise DatabaseUnavailableError(f"{path} holds no replan runs")
    saver.is_setup = True  # the tables exist; setting them up again would write
    return saver


@asynccontextmanager
async def _sqlite_saver(
    path: Path, busy_timeout: float, read_only: bool
) -> AsyncIterator[AsyncSqliteSaver]:
    if reason := _unusable(path, read_only):
        raise DatabaseUnavailableError(f"cannot open the runs database {path}: {reason}")
    try:
        conn = await _connect(path, busy_timeout, read_only)
    except (sqlite3.Error, OSError) as exc:
        raise unavailable("cannot open", str(path), exc) from exc
    try:
        try:
            saver = await _ready_saver(conn, path, read_only)
        except sqlite3.Error as exc:
            raise unavailable("cannot open", str(path), exc) from exc
        try:
            yield saver
        except sqlite3.Error as exc:
            raise unavailable("failed to use", str(path), exc) from exc
    finally:
        await conn.close()


def postgres_missing(shown: str) -> DatabaseUnavailableError:
    """The error of opening the PostgreSQL database `shown` without PostgreSQL support."""
    return DatabaseUnavailableError(
        f"cannot open the runs database {shown}: PostgreSQL support is not installed "
        f"({INSTALL_POSTGRES})"
    )


@asynccontextmanager
async def _postgres_saver(url: str) -> AsyncIterator[BaseCheckpointSaver[str]]:
    """An `AsyncPostgresSaver` on its own connection (autocommit, dict rows, as it requires)."""
    shown = display_target(url)
    try:
        import psycopg
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg.conninfo import conninfo_to_dict
        from psycopg.rows import dict_row

        from replan.graphs.stopped_tasks import leaving_stopped_tasks_out
        from replan.state.plans.postgres import CONNECT_TIMEOUT_SECONDS
    except ImportError as exc:
        raise postgres_missing(shown) from exc
    try:
        timeout = conninfo_to_dict(url).get("connect_timeout", CONNECT_TIMEOUT_SECONDS)
        conn = await psycopg.AsyncConnection.connect(
            url, autocommit=True, prepare_threshold=0, row_factory=dict_row, connect_timeout=timeout
        )
    except psycopg.Error as exc:
        raise unavailable("cannot open", shown, exc) from exc
    try:
        saver_class = leaving_stopped_tasks_out(AsyncPostgresSaver)
        saver = saver_class(conn, serde=checkpoint_serializer())
        try:
            await setup_postgres(saver, conn)
        except (psycopg.Error, TimeoutError) as exc:
            raise unavailable("cannot set up", shown, exc) from exc
        try:
            yield saver
        except psycopg.Error as exc:
            if not conn.broken:
                raise
            raise unavailable("lost the connection to", shown, exc) from exc
    finally:
        await conn.close()


async def setup_postgres(
    saver: AsyncPostgresSaver | AsyncPostgresStore, conn: AsyncConnection[DictRow]
) -> None:
    """`saver.setup()` (a saver's or a store's) under `SETUP_LOCK_KEY`, taken by polling on
    `conn` so that a waiting process holds no snapshot (the migrations build indexes
    concurrently, which waits for open snapshots: two processes setting up at once hang)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SETUP_WAIT_SECONDS
    while not await _try_lock(conn, SETUP_LOCK_KEY):
        if loop.time() > deadline:
            raise TimeoutError(
                f"another process held the setup lock for {SETUP_WAIT_SECONDS:.0f} s"
            )
        await asyncio.sleep(0.05)
    try:
        await saver.setup()
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK_KEY,))


async def _try_lock(conn: AsyncConnection[DictRow], key: int) -> bool:
    row = await (await conn.execute("SELECT pg_try_advisory_lock(%s) AS locked", (key,))).fetchone()
    return bool(row and row["locked"])


async def stored_thread_ids(saver: BaseCheckpointSaver[str]) -> list[str]:
    """The ids of the threads with a checkpoint in a saver from `open_checkpointer`, most
    recent first."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    if isinstance(saver, AsyncSqliteSaver):
        async with saver.conn.execute(_THREADS_SQL) as cursor:
            return [str(row[0]) async for row in cursor]
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    if not isinstance(saver, AsyncPostgresSaver):
        raise TypeError(f"not a saver from open_checkpointer: {saver!r}")
    conn = cast("AsyncConnection[DictRow]", saver.conn)  # open_checkpointer's own connection
    async with saver.lock:
        rows = await (await conn.execute(_THREADS_SQL)).fetchall()
    return [str(row["thread_id"]) for row in rows]
