"""A scripted OpenAI-compatible chat server for offline tests.

`ScriptedOpenAIServer` answers `POST /v1/chat/completions` (plain JSON and `stream=true`
server-sent events shaped like OpenAI's) and `GET /v1/models` on 127.0.0.1. Each completion
request takes the next queued reply (`push`) or, when the queue is empty, asks the
`responder(request_json)` callable. With neither, it answers HTTP 500 saying the script ran out,
so a test that under-scripts fails loudly.

Run it as its own process when a test needs the server to outlive or restart independently::

    python -m replan.testing --port-file F --responder replan.testing.plan_script:respond
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from replan.testing.quirks import Quirks
from replan.testing.replies import (
    MODEL_ID,
    PromptCache,
    Reply,
    Responder,
    http_error,
    reported_usage,
)
from replan.testing.wire import completion, error_body, stream_events


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    disable_nagle_algorithm = True
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base signature
        """Keep test output quiet."""

    def _send(
        self,
        status: int,
        body: dict[str, Any] | str,
        headers: dict[str, str],
        content_type: str = "application/json",
    ) -> None:
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            model = {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "tests"}
            self._send(200, {"object": "list", "data": [model]}, {})
        else:
            self._send(404, error_body(404, f"no route {self.path}"), {})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, error_body(404, f"no route {self.path}"), {})
            return
        reply = self.server.owner.next_reply(body)
        try:
            self._answer(body, reply)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _answer(self, body: dict[str, Any], reply: Reply) -> None:
        if reply.status != 200:
            headers = {}
            if reply.retry_after_ms is not None:
                headers["retry-after-ms"] = str(reply.retry_after_ms)
            self._send(reply.status, error_body(reply.status, reply.error_message), headers)
            return
        if reply.body is not None:
            self._send(200, reply.body, {}, reply.content_type)
            return
        completion_id = f"chatcmpl-{next(self.server.ids)}"
        created = int(time.time())
        asked = not body.get("stream") or (body.get("stream_options") or {}).get("include_usage")
        cache = self.server.owner.prompt_cache
        usage = reported_usage(body, reply, cache) if reply.usage and asked else None
        self.server.owner.reported(body, usage)
        if not body.get("stream"):
            self._send(200, completion(reply, completion_id, created, usage), {})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for event in stream_events(reply, completion_id, created, usage):
            self.wfile.write(f"data: {event}\n\n".encode())
            self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    """Listen backlog: a wave of parallel steps opens many connections at once, and with the
    default of 5 a busy machine drops some, whose clients then wait a second to try again."""

    def __init__(self, port: int, owner: ScriptedOpenAIServer) -> None:
        self.owner = owner
        self.ids = itertools.count(1)
        super().__init__(("127.0.0.1", port), _Handler)


@dataclass
class ScriptedOpenAIServer:
    """An OpenAI-compatible server answering from a reply queue, then from `responder`.

    Use as a context manager; `port=0` picks a free port, a fixed port lets a test restart a
    server where a stopped one was.
    """

    responder: Responder | None = None
    port: int = 0
    quirks: Quirks = field(default_factory=Quirks)
    _queue: deque[Reply] = field(default_factory=deque, init=False, repr=False)
    _requests: list[dict[str, Any]] = field(default_factory=list, init=False, repr=False)
    _usages: list[tuple[dict[str, Any], dict[str, Any] | None]] = field(
        default_factory=list, init=False, repr=False
    )
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _server: _Server | None = field(default=None, init=False, repr=False)
    prompt_cache: PromptCache = field(default_factory=PromptCache, init=False, repr=False)
    """The prompt it read last, which a request starting the same way reuses (`cached_tokens`)."""

    def __enter__(self) -> ScriptedOpenAIServer:
        self._server = _Server(self.port, self)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop serving and free the port (requests in flight are abandoned)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def base_url(self) -> str:
        """The `base_url` for ChatOpenAI / OPENAI_BASE_URL."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """A copy of the JSON bodies of the completion requests received so far."""
        with self._lock:
            return list(self._requests)

    @property
    def usages(self) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
        """Each chat completion sent so far: its request and the usage reported (None: none)."""
        with self._lock:
            return list(self._usages)

    def reported(self, body: dict[str, Any], usage: dict[str, Any] | None) -> None:
        """Record that the reply to `body` reported `usage` (called from handler threads)."""
        with self._lock:
            self._usages.append((body, usage))

    def push(self, *replies: Reply) -> None:
        """Queue replies; they are used, in order, before the responder."""
        with self._lock:
            self._queue.extend(replies)

    def next_reply(self, body: dict[str, Any]) -> Reply:
        """Record `body` and choose its reply (called from handler threads)."""
        with self._lock:
            self._requests.append(body)
            queued = self._queue.popleft() if self._queue else None
        if queued is not None:
            return self.quirks.answer(body, queued)
        if self.responder is not None:
            return self.quirks.answer(body, self.responder(body))
        return http_error(500, "scripted server: script ran out (no queued reply, no responder)")
