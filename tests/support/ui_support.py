"""`replan ui` in tests: the command as a real process, the page's API with its token, and
runs for it to show (made by the CLI against the scripted server)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replan.cli.output import ExitCode
from replan.testing import Reply, ScriptedOpenAIServer
from replan.testing import plan_script as script
from tests.support.cli_harness import REPLAN, cli_env, looks_up_a_price, run_cli

REQUIRE_BROWSER_ENV = "REPLAN_REQUIRE_BROWSER"
"""Set to 1 (as .ci/run does) to fail the browser tests, instead of skipping them, when
Chromium or Playwright is missing."""
CHROMIUM = "/usr/bin/chromium"


@dataclass
class Ui:
    """A running `replan ui`: its address (with the token) and its process."""

    url: str
    process: subprocess.Popen[bytes]

    @property
    def base(self) -> str:
        return self.url.split("/?", 1)[0]

    @property
    def token(self) -> str:
        return self.url.rsplit("token=", 1)[1]

    def get(self, path: str, **headers: str) -> tuple[int, Any]:
        """GET `path` of the API with the token (unless headers say otherwise)."""
        return self.request("GET", path, None, {"X-Replan-Token": self.token, **headers})

    def post(self, path: str, body: Any, **headers: str) -> tuple[int, Any]:
        sent = {"X-Replan-Token": self.token, "Origin": self.base, **headers}
        return self.request("POST", path, json.dumps(body).encode(), sent)

    def request(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[int, Any]:
        asked = urllib.request.Request(self.base + path, body, headers, method=method)
        try:
            with urllib.request.urlopen(asked, timeout=30) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as refused:
            return refused.code, json.loads(refused.read() or b"{}")


@contextmanager
def serving_ui(db: Path | str, cwd: Path, env: dict[str, str] | None = None) -> Iterator[Ui]:
    """`replan ui --db DB` as a process until the block ends (then Ctrl-C, as a person stops
    it); `env`: its environment (the model server a review answered from the page uses)."""
    process = subprocess.Popen(
        [REPLAN, "ui", "--db", str(db)],
        cwd=cwd,
        env=env or cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    url = process.stdout.readline().decode().strip()
    try:
        assert url.startswith("http://127.0.0.1:"), process.communicate(timeout=10)
        yield Ui(url, process)
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)


class HeldAfterCall:
    """The scripted model whose executor calls `price` in step 1, held (once) on the request
    after that call's result until released: step 1 is then running with one call saved."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.release = threading.Event()

    def __call__(self, request: dict[str, Any]) -> Reply:
        call = script.classify(request)
        called = any(m.get("role") == "tool" for m in request.get("messages", []))
        if call.role == "executor" and call.step == 1 and called and not self.reached.is_set():
            self.reached.set()
            self.release.wait(timeout=60)
        return looks_up_a_price(request)


def stored_run(server: ScriptedOpenAIServer, work: Path, thread: str, *args: str) -> None:
    """`replan run ARGS` in `work`, saved in its runs.sqlite as `thread` (ended or waiting)."""
    done = run_cli(server, work, "run", "--db", "runs.sqlite", "--thread-id", thread, *args)
    assert done.code in (ExitCode.OK, ExitCode.AWAITING_APPROVAL), done.err


def browser_missing() -> str:
    """Why the browser tests cannot run here ("" when they can)."""
    if not os.path.exists(CHROMIUM):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright's Python client is not installed (the dev extra has it)"
    return ""
