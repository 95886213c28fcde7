"""Start the real `langgraph dev` server on a copy of the repository, offline, for tests.

`dev_server(tmp, env)` copies the working tree (as a fresh clone would have it) into `tmp`,
starts `langgraph dev --no-browser --no-reload` there on a free 127.0.0.1 port in its own
process group, waits for `/ok`, yields the base URL, and kills the whole group on exit, also
when the test failed. Everything that would phone home is switched off.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from replan.testing.aegra import free_port, wait_until_ready

REPO = Path(__file__).resolve().parents[2]
LANGGRAPH = str(Path(sys.executable).with_name("langgraph"))
STARTUP_TIMEOUT = 60.0
OFFLINE_ENV = {
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
}
"""No LangSmith tracing, no CLI analytics beacon, no PyPI version check."""


def _gitignored_names() -> list[str]:
    """The name patterns of the repository's .gitignore (a fresh clone has none of those)."""
    lines = (REPO / ".gitignore").read_text().splitlines()
    return [line.strip().rstrip("/") for line in lines if line.strip()[:1] not in ("", "#", "!")]


def copy_repo(target: Path) -> Path:
    """Copy the working tree without .git and what .gitignore names (venvs, caches, databases)."""
    ignore = shutil.ignore_patterns(".git", *_gitignored_names())
    return Path(shutil.copytree(REPO, target, ignore=ignore))


def server_env(extra: Mapping[str, str]) -> dict[str, str]:
    """This environment without API keys or LangSmith settings, offline, plus `extra`."""
    kept = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "LANGSMITH_", "REPLAN_"))
    }
    return {**kept, **OFFLINE_ENV, **extra}


def start_dev_server(
    cwd: Path, port: int, env: Mapping[str, str], log: Path
) -> subprocess.Popen[bytes]:
    """`langgraph dev` serving `cwd`, asked for `port`, offline, in its own process group, its
    output in `log`; stop it with `stop_dev_server`."""
    command = [LANGGRAPH, "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1"]
    with log.open("wb") as out:
        return subprocess.Popen(
            [*command, "--port", str(port)],
            cwd=cwd,
            env=server_env(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def stop_dev_server(process: subprocess.Popen[bytes]) -> None:
    """Kill the server's process group (uvicorn and any worker it started)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=10)


@contextmanager
def dev_server(tmp: Path, env: Mapping[str, str]) -> Iterator[str]:
    """Serve a copy of the repo made in `tmp` with `langgraph dev`; yields its base URL.

    The server's output goes to `tmp/server.log` (shown when it fails to start).
    """
    port = free_port()
    log = tmp / "server.log"
    process = start_dev_server(copy_repo(tmp / "repo"), port, env, log)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_ready("langgraph dev", f"{url}/ok", process, log.read_text, STARTUP_TIMEOUT)
        yield url
    finally:
        stop_dev_server(process)
