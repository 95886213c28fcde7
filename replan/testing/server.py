"""A scripted OpenAI-compatible chat server for offline tests.

`ScriptedOpenAIServer` answers `POST /v1/chat/completions` (plain JSON and `stream=true`
server-sent events shaped like OpenAI's) and `GET /v1/models` on 127.0.0.1, and any other
request with HTTP 404 and OpenAI's error body (`Invalid URL (POST /chat/completions)`), as a
real server does: a base URL without `/v1` fails here too. Each completion request takes the
next queued reply (`push`) or, when the queue is empty, asks the `responder(request_json)`
callable. With neither, it answers HTTP 500 saying the script ran out, so a test that
under-scripts fails loudly.

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
from typing import Any

from replan.testing.background import BackgroundServer
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

COMPLETIONS_PATH = "/v1/chat/completions"
"""Where chat completions are asked for (POST), as on OpenAI's API and the servers like it."""
MODELS_PATH = "/v1/models"
"""Where the models are listed (GET); `replan check` reads it."""


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

    def _serves(self, path: str) -> bool:
        """Whether the request asks for `path` (its query left out)."""
        return self.path.partition("?")[0] == path

    def _not_found(self) -> None:
        """The 404 OpenAI's API answers a path it does not serve (or not for that method)."""
        self._send(404, error_body(404, f"Invalid URL ({self.command} {self.path})"), {})

    def do_GET(self) -> None:
        if not self._serves(MODELS_PATH):
            self._not_found()
            return
        self.server.owner.models_listed += 1
        model = {
            "id": MODEL_ID,
            "object": "model",
            "created": 0,
            "owned_by": self.server.owner.owned_by,
        }
        self._send(200, {"object": "list", "data": [model]}, {})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(length)
        if not self._serves(COMPLETIONS_PATH):
            self._not_found()
            return
        body = json.loads(data or b"{}")
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
class ScriptedOpenAIServer(BackgroundServer):
    """An OpenAI-compatible server answering from a reply queue, then from `responder`.

    Use as a context manager; `port=0` picks a free port, a fixed port lets a test restart a
    server where a stopped one was.
    """

    responder: Responder | None = None
    port: int = 0
    quirks: Quirks = field(default_factory=Quirks)
    owned_by: str = "tests"
    """Who GET /v1/models says owns its models (llama.cpp's server says `llamacpp`)."""
    models_listed: int = field(default=0, init=False)
    """How many times GET /v1/models was asked."""
    _queue: deque[Reply] = field(default_factory=deque, init=False, repr=False)
    _requests: list[dict[str, Any]] = field(default_factory=list, init=False, repr=False)
    _usages: list[tuple[dict[str, Any], dict[str, Any] | None]] = field(
        default_factory=list, init=False, repr=False
    )
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    prompt_cache: PromptCache = field(default_factory=PromptCache, init=False, repr=False)
    """The prompt it read last, which a request starting the same way reuses (`cached_tokens`)."""

    def make_server(self) -> _Server:
        """The server on `port` (a free one for 0, which `port` then holds)."""
        server = _Server(self.port, self)
        self.port = server.server_address[1]
        return server

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
