"""`replan ui`: a local page that lists a database's runs and draws one as it unfolds.

The server listens on 127.0.0.1 only and answers nobody without the token it made at launch:
the page's address carries it (as Jupyter's does), the page sends it back with every request
(`X-Replan-Token`). Requests naming another host (a DNS-rebinding page) or sent from another
origin are refused, and a database URL's password is never shown. The page ships in the
package (`page.html`: no CDN, no build, nothing fetched) and polls the JSON API
(`replan.ui.reader`) while it is visible.

A plan waiting for approval is answered from the page by `replan resume` in a process of its
own (`Reviews`), which takes the thread's lease like any runner: a thread another process runs
is refused there, with the reason shown on the page. Threads the CLI did not start (a server's)
are answered through that server.
"""

from __future__ import annotations

import hmac
import json
import re
import secrets
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from replan.graphs.persistence import display_target
from replan.ui.reader import RunReader

HOST = "127.0.0.1"
TOKEN_HEADER = "X-Replan-Token"
DECISIONS = ("approve", "reject", "edit")
_THREAD_PATH = re.compile(r"/api/threads/([^/]+)(/review)?")
_RESUME = "import sys; from replan.cli import main; sys.exit(main())"


@dataclass
class Review:
    """A `replan resume` the page started: its process and where its output goes."""

    process: subprocess.Popen[bytes]
    log: Path

    def state(self) -> dict[str, Any]:
        """Running, or how it ended (its last line of output, e.g. why it was refused)."""
        code = self.process.poll()
        lines = (
            self.log.read_text(errors="replace").strip().splitlines() if code is not None else []
        )
        return {"running": code is None, "exit_code": code, "last_line": lines[-1] if lines else ""}


class Reviews:
    """The plan reviews answered from the page, one `replan resume` each."""

    def __init__(self, db: str) -> None:
        self.db = db
        self.folder = Path(tempfile.mkdtemp(prefix="replan-ui-"))
        self.by_thread: dict[str, Review] = {}
        self.lock = threading.Lock()

    def start(self, thread_id: str, answer: Mapping[str, Any]) -> Review:
        """Answer the plan `thread_id` waits with: `{"decision": "approve"}`, `{"decision":
        "reject", "reason": ...}` or `{"decision": "edit", "steps": [...]}`."""
        flags = review_flags(answer)
        with self.lock:
            last = self.by_thread.get(thread_id)
            if last is not None and last.process.poll() is None:
                raise ValueError("an answer to this plan is already being carried out")
            log = self.folder / f"{len(self.by_thread)}-{secrets.token_hex(4)}.log"
            with log.open("wb") as out:
                process = subprocess.Popen(
                    [
                        sys.executable,
                        "-c",
                        _RESUME,
                        "resume",
                        "--thread-id",
                        thread_id,
                        "--db",
                        self.db,
                        "--quiet",
                        *flags,
                    ],  # fmt: skip
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            self.by_thread[thread_id] = Review(process, log)
            return self.by_thread[thread_id]

    def stop(self) -> None:
        for review in self.by_thread.values():
            if review.process.poll() is None:
                review.process.terminate()


def review_flags(answer: Mapping[str, Any]) -> list[str]:
    """The `replan resume` flags of a review answer from the page; ValueError if malformed."""
    decision = answer.get("decision")
    if decision == "approve":
        return ["--approve"]
    if decision == "reject":
        return ["--reject", str(answer.get("reason") or "")]
    steps = answer.get("steps")
    if decision == "edit" and isinstance(steps, list) and steps:
        texts = [str(step).strip() for step in steps]
        if all(texts):
            return ["--edit-plan", *texts]
        raise ValueError("an edited plan's steps must not be empty")
    raise ValueError(f"a review answer is one of {list(DECISIONS)}; an edit gives its steps")


def page_html() -> str:
    """The page, as the package ships it."""
    return resources.files("replan.ui").joinpath("page.html").read_text(encoding="utf-8")


class UiServer(ThreadingHTTPServer):
    """The page's HTTP server over one database (see the module docstring)."""

    daemon_threads = True

    def __init__(self, db: str, port: int = 0, token: str | None = None) -> None:
        super().__init__((HOST, port), _Handler)
        self.db = db
        self.token = token or secrets.token_urlsafe(24)
        self.reader = RunReader(db)
        self.reviews = Reviews(db)
        self.page = page_html()

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        """The page's address, with the token."""
        return f"http://{HOST}:{self.port}/?token={self.token}"

    def origins(self) -> set[str]:
        return {f"http://{HOST}:{self.port}", f"http://localhost:{self.port}"}

    def close(self) -> None:
        self.shutdown()
        self.server_close()
        self.reviews.stop()
        self.reader.close()


class _Handler(BaseHTTPRequestHandler):
    server: UiServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Quiet: the terminal shows only the address."""

    def do_GET(self) -> None:  # noqa: N802
        self._answer(self._get)

    def do_POST(self) -> None:  # noqa: N802
        self._answer(self._post)

    def _answer(self, handle: Callable[[str], None]) -> None:
        path = urlsplit(self.path).path
        refusal = self._refusal(path)
        if refusal:
            self._send(HTTPStatus.FORBIDDEN, {"error": refusal})
            return
        try:
            handle(path)
        except Exception as exc:  # the page shows it in one line; the server goes on
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"{type(exc).__name__}: {exc}"})

    def _refusal(self, path: str) -> str:
        """Why the request is refused ("" when it is not): another host or origin, no token."""
        server = self.server
        host = self.headers.get("Host", "")
        if f"http://{host}" not in server.origins():
            return "this page answers requests for 127.0.0.1 only"
        origin = self.headers.get("Origin")
        if (origin or self.command == "POST") and origin not in server.origins():
            return "requests from other sites are refused"
        query = parse_qs(urlsplit(self.path).query)
        given = self.headers.get(TOKEN_HEADER) or (query.get("token") or [""])[0]
        if not hmac.compare_digest(given.encode(), server.token.encode()):
            return "open the address `replan ui` printed: it carries the page's token"
        return ""

    def _get(self, path: str) -> None:
        server = self.server
        if path == "/":
            self._page()
        elif path == "/api/threads":
            threads = server.reader.run(server.reader.threads())
            self._send(HTTPStatus.OK, {"db": display_target(server.db), "threads": threads})
        elif (found := _THREAD_PATH.fullmatch(path)) and not found.group(2):
            thread_id = unquote(found.group(1))
            thread = server.reader.run(server.reader.thread(thread_id))
            if thread is None:
                self._send(HTTPStatus.NOT_FOUND, {"error": f"no thread {thread_id}"})
                return
            review = server.reviews.by_thread.get(thread_id)
            self._send(HTTPStatus.OK, {**thread, "answer": review.state() if review else None})
        else:
            self._send(HTTPStatus.NOT_FOUND, {"error": f"nothing at {path}"})

    def _post(self, path: str) -> None:
        found = _THREAD_PATH.fullmatch(path)
        if not found or not found.group(2):
            self._send(HTTPStatus.NOT_FOUND, {"error": f"nothing at {path}"})
            return
        thread_id = unquote(found.group(1))
        length = int(self.headers.get("Content-Length") or 0)
        try:
            answer = json.loads(self.rfile.read(length) or b"{}")
            thread = self.server.reader.run(self.server.reader.thread(thread_id))
            if thread is None:
                raise LookupError(f"no thread {thread_id}")
            if thread["status"] != "waiting_for_approval" or not thread.get("review"):
                raise ValueError(f"thread {thread_id} has no plan waiting for approval")
            if not thread["started_at"] or thread.get("settings") is None:
                raise ValueError("this run was not started by replan's CLI: answer it through "
                                 "the server or program that runs it")  # fmt: skip
            review = self.server.reviews.start(thread_id, answer)
        except LookupError as exc:
            self._send(HTTPStatus.NOT_FOUND, {"error": str(exc)})
            return
        except (ValueError, AttributeError) as exc:
            self._send(HTTPStatus.CONFLICT, {"error": str(exc)})
            return
        self._send(HTTPStatus.ACCEPTED, {"answer": review.state()})

    def _page(self) -> None:
        nonce = secrets.token_urlsafe(16)
        body = self.server.page.replace("{{nonce}}", nonce).encode()
        policy = (
            f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
            "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
            "frame-ancestors 'none'"
        )
        self._raw(
            HTTPStatus.OK, body, "text/html; charset=utf-8", {"Content-Security-Policy": policy}
        )

    def _send(self, status: HTTPStatus, payload: Any) -> None:
        body = json.dumps(payload, ensure_ascii=False, default=str).encode()
        self._raw(status, body, "application/json")

    def _raw(
        self,
        status: HTTPStatus,
        body: bytes,
        kind: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Content-Type-Options", "nosniff")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
