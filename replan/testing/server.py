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

import argparse
import importlib
import itertools
import json
import re
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

MODEL_ID = "scripted-model"


@dataclass(frozen=True)
class ToolCallSpec:
    """One tool call of a reply; `arguments` is the raw JSON text sent to the client."""

    name: str
    arguments: str


@dataclass(frozen=True)
class Reply:
    """One scripted answer: assistant text, tool calls, an HTTP error, or a raw HTTP 200 body
    (`body` with `content_type`, sent as is whether or not a stream was asked for)."""

    content: str | None = None
    calls: tuple[ToolCallSpec, ...] = ()
    status: int = 200
    error_message: str = ""
    retry_after_ms: float | None = None
    body: str | None = None
    content_type: str = "application/json"
    call_ids: tuple[str | None, ...] = ()
    """Ids for `calls` as a broken server sends them (repeated, "" or None: left out);
    empty means distinct ids."""
    finish_reason: str | None = None
    """Why the reply ended, e.g. "length" for one cut off at its token limit; None: "stop", or
    "tool_calls" for a reply with calls."""

    usage: bool = True
    """Whether the reply reports its usage (`usage` in JSON, a last chunk in a stream when the
    request asks for it with `stream_options.include_usage`)."""


Responder = Callable[[dict[str, Any]], Reply]


CallsAsText = Literal["fenced", "bare", "tagged"]
"""How a server writes tool calls as text (see `Quirks.calls_as_text`)."""


@dataclass(frozen=True)
class Quirks:
    """How the server departs from OpenAI's API, to imitate real local servers (llama.cpp's
    server, llama-cpp-python's, Ollama). The default departs in nothing.

    Each kind of departure is a field; `answer` applies them all to the reply chosen for a
    request (it may refuse the request instead, or reshape the reply).

    Like OpenAI, the server honours a request's constraints on the script's decisions: a reply
    that is one tool call becomes, for a request with a `response_format` (JSON schema or JSON
    object), assistant text holding the call's arguments as JSON, and, for a request forcing
    another tool by name whose parameters take those arguments, a call of that tool. So a
    script written for forced tool calls answers in every decision mode.
    """

    calls_as_text: CallsAsText | None = None
    """Write the tool calls of every reply as its text instead, in this shape, as llama.cpp's
    server does for models whose calls it does not parse: "fenced" (a ```json fence per
    call), "bare" (one JSON object per line) or "tagged" (`<tool_call>` tags, Qwen's way)."""

    run_on: bool = False
    """A small model that does not stop: after the scripted reply it writes whitespace until
    the request's `max_tokens` (or `max_completion_tokens`), which ends it with finish_reason
    "length"; without a limit it runs on to the end of its context (`RUN_ON_CONTEXT_TOKENS`)."""

    refused_modes: tuple[str, ...] = ()
    """Decision modes (`Context.decision_mode`) whose requests get HTTP 500 with an empty
    message: what a mode asks of the server is its strategy's (`ModeStrategy.sent`), so the
    scripted server refuses exactly what replan sends in that mode (llama-cpp-python refuses
    `tool_required`'s `tool_choice: "required"` and `json_schema`'s `response_format`)."""
    refuse_null_content: bool = False
    """HTTP 500 for a request holding an assistant message whose `content` is null, as OpenAI
    clients send one with tool calls (llama-cpp-python's request validation)."""
    ignore_named_choice: bool = False
    """A `tool_choice` naming a function is not enforced: the script's reply stands as the
    model's own choice (llama.cpp's llama-server)."""
    ignore_tool_choice: bool = False
    """No `tool_choice` is enforced, named or "required" (Ollama)."""
    prose_when_forced: bool = False
    """A small model the server does not hold to a forced tool: to a request whose
    `tool_choice` forces a call ("required" or a named tool), it answers in prose (`PROSE`)
    instead of the scripted reply, as the real small model did on llama.cpp's server. Requests
    with a `response_format` (which llama.cpp and Ollama do enforce) get the scripted reply."""

    usage: bool = True
    """False: the server reports no usage, neither in JSON replies nor in streams."""

    def answer(self, body: dict[str, Any], reply: Reply) -> Reply:
        """The reply this server really sends for request `body` when the script says `reply`."""
        if self.refused_modes and _asks_in(body, self.refused_modes):
            return http_error(500)
        if self.refuse_null_content and any(
            m.get("role") == "assistant" and m.get("content") is None
            for m in body.get("messages", [])
        ):
            return http_error(500)
        if self.prose_when_forced and body.get("tool_choice") not in (None, "auto", "none"):
            reply = text(PROSE)
        if not (self.ignore_named_choice or self.ignore_tool_choice):
            reply = _named_choice_enforced(body, reply)
        reply = _response_format_honoured(body, reply)
        if self.calls_as_text is not None:
            reply = _calls_as_text(reply, self.calls_as_text)
        if self.run_on:
            reply = _run_on(body, reply)
        return self._usage_reported(reply)

    def _usage_reported(self, reply: Reply) -> Reply:
        return reply if self.usage else replace(reply, usage=False)


def _asks_in(body: dict[str, Any], modes: Sequence[str]) -> bool:
    """Whether `body` asks what one of the decision `modes` asks of a server."""
    from replan.graphs.model.decision_modes.registry import STRATEGIES  # only when refusing

    return any(STRATEGIES[mode].sent(body) for mode in modes if mode in STRATEGIES)


def _format_type(body: dict[str, Any]) -> str | None:
    response_format = body.get("response_format")
    return response_format.get("type") if isinstance(response_format, dict) else None


def _one_call_args(reply: Reply) -> dict[str, Any] | None:
    """The arguments of `reply` when it is exactly one tool call with a JSON object of them."""
    if len(reply.calls) != 1:
        return None
    try:
        args = json.loads(reply.calls[0].arguments)
    except ValueError:
        return None
    return args if isinstance(args, dict) else None


def _named_choice_enforced(body: dict[str, Any], reply: Reply) -> Reply:
    """A call of the tool the request forces by name, when the script called another tool
    with arguments that tool takes."""
    choice = body.get("tool_choice")
    name = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    args = _one_call_args(reply)
    if name is None or args is None or reply.calls[0].name == name:
        return reply
    for tool in body.get("tools") or []:
        function = tool.get("function", {})
        if (
            function.get("name") == name
            and args.keys() <= function.get("parameters", {}).get("properties", {}).keys()
        ):
            return tool_call(name, args)
    return reply


def _response_format_honoured(body: dict[str, Any], reply: Reply) -> Reply:
    """For a request asking for a JSON reply, a scripted tool call's arguments as the text."""
    args = _one_call_args(reply)
    if _format_type(body) in ("json_schema", "json_object") and args is not None:
        return text(json.dumps(args))
    return reply


PROSE = "Sure! Here is what I would do next, step by step, in plain words."
"""What a model answers in prose (`Quirks.prose_when_forced`)."""

LLAMA_CPP_PYTHON = Quirks(refused_modes=("tool_required", "json_schema"), refuse_null_content=True)
"""llama-cpp-python's server (chat format `chatml-function-calling`)."""
LLAMA_CPP = Quirks(ignore_named_choice=True, calls_as_text="fenced")
"""llama.cpp's `llama-server --jinja` with a small model that writes its calls as text."""
OLLAMA = Quirks(ignore_tool_choice=True)
"""Ollama's OpenAI-compatible API."""


def _calls_as_text(reply: Reply, shape: CallsAsText) -> Reply:
    """`reply` with its tool calls written as `{"name", "arguments"}` objects in its text."""
    if not reply.calls:
        return reply
    objects = []
    for call in reply.calls:
        try:
            arguments: Any = json.loads(call.arguments)
        except ValueError:
            arguments = call.arguments  # malformed on purpose: sent as the raw text
        objects.append(json.dumps({"name": call.name, "arguments": arguments}))
    if shape == "fenced":
        parts = [f"```json\n{obj}\n```" for obj in objects]
    elif shape == "tagged":
        parts = [f"<tool_call>\n{obj}\n</tool_call>" for obj in objects]
    else:
        parts = ["\n".join(objects)]
    written = "\n\n".join([*([reply.content] if reply.content else []), *parts])
    return replace(reply, content=written, calls=(), call_ids=())


RUN_ON_CONTEXT_TOKENS = 16384
"""Where a reply that runs on without a token limit ends: the context size of a local server."""


def _run_on(body: dict[str, Any], reply: Reply) -> Reply:
    """`reply` run on with one newline per token up to the request's token limit."""
    if reply.status != 200 or reply.body is not None:
        return reply
    limit = body.get("max_tokens") or body.get("max_completion_tokens") or RUN_ON_CONTEXT_TOKENS
    written = len(_tokens(reply.content or "")) + sum(len(c.arguments) // 4 for c in reply.calls)
    padding = "\n" * max(limit - written, 0)
    return replace(reply, content=(reply.content or "") + padding, finish_reason="length")


def text(content: str) -> Reply:
    """An assistant message with plain text content."""
    return Reply(content=content)


def _arguments(args: dict[str, Any] | str) -> str:
    return args if isinstance(args, str) else json.dumps(args)


def tool_call(name: str, args: dict[str, Any] | str) -> Reply:
    """An assistant message calling one tool; a `str` for `args` is sent verbatim (malformed)."""
    return Reply(calls=(ToolCallSpec(name, _arguments(args)),))


def tool_calls(
    calls: Sequence[tuple[str, dict[str, Any] | str]], *, ids: Sequence[str | None] = ()
) -> Reply:
    """An assistant message with several parallel tool calls, in order; `ids` overrides the
    call ids (None leaves a call's id out)."""
    specs = tuple(ToolCallSpec(name, _arguments(args)) for name, args in calls)
    return Reply(calls=specs, call_ids=tuple(ids))


def _call_id(reply: Reply, completion_id: str, index: int) -> dict[str, str]:
    """The `id` field of a call (none at all when the script leaves it out)."""
    if not reply.call_ids:
        return {"id": f"call_{completion_id}_{index}"}
    given = reply.call_ids[index]
    return {} if given is None else {"id": given}


def http_error(status: int, message: str = "", *, retry_after_ms: float | None = None) -> Reply:
    """An HTTP error with an OpenAI-style error body; `retry_after_ms` sets `retry-after-ms`."""
    return Reply(status=status, error_message=message, retry_after_ms=retry_after_ms)


def raw(body: str, content_type: str = "application/json") -> Reply:
    """HTTP 200 with exactly this body and content type: how broken servers answer."""
    return Reply(body=body, content_type=content_type)


_COMPLETION_HEAD = {"id": "chatcmpl-broken", "object": "chat.completion", "created": 0}
BROKEN_REPLIES: dict[str, Reply] = {
    "no choices": raw(json.dumps({**_COMPLETION_HEAD, "model": "scripted-model"})),
    "empty choices": raw(json.dumps({**_COMPLETION_HEAD, "choices": []})),
    "choice without message": raw(
        json.dumps({**_COMPLETION_HEAD, "choices": [{"index": 0, "finish_reason": "stop"}]})
    ),
    "not JSON": raw("<html><body>502 Bad Gateway</body></html>"),
    "text/plain": raw("upstream model overloaded, try later", "text/plain"),
}
"""HTTP 200 replies that are not usable chat completions, by what is wrong with them."""


def _error_body(status: int, message: str) -> dict[str, Any]:
    kind = "rate_limit_error" if status == 429 else "server_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


CHARS_PER_TOKEN = 4


def tokens(text: str) -> int:
    """The tokens this server counts for `text`: one per 4 characters, rounded up."""
    return -(-len(text) // CHARS_PER_TOKEN)


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def reported_usage(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    """The usage this server reports for `reply` to request `body`: prompt tokens from the
    messages' text, completion tokens from the reply's text and calls, and the leading system
    message's tokens as cached (as a server that caches a stable prompt head would)."""
    messages = body.get("messages") or []
    prompt = sum(tokens(_text_of(message)) for message in messages)
    head = messages[0] if messages and messages[0].get("role") == "system" else {}
    written = (reply.content or "") + "".join(c.name + c.arguments for c in reply.calls)
    completion = tokens(written)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": tokens(_text_of(head))},
    }


def _completion(
    reply: Reply, completion_id: str, created: int, usage: dict[str, Any] | None
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None}
    if reply.calls:
        message["tool_calls"] = [
            {
                **_call_id(reply, completion_id, i),
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for i, call in enumerate(reply.calls)
        ]
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": MODEL_ID,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": _finish_reason(reply),
            }
        ],
        **({"usage": usage} if usage is not None else {}),
    }


def _finish_reason(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.calls else "stop")


def _tokens(content: str) -> list[str]:
    """`content` in the pieces a stream sends it in (roughly a token each)."""
    return re.findall(r"\s*\S+|\s+", content)


def _pieces(value: str, size: int) -> list[str]:
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


def _deltas(reply: Reply, completion_id: str) -> Iterator[tuple[dict[str, Any], str | None]]:
    """The (delta, finish_reason) sequence OpenAI streams for `reply`."""
    if not reply.calls:
        yield {"role": "assistant", "content": "", "refusal": None}, None
        for token in _tokens(reply.content or ""):
            yield {"content": token}, None
        yield {}, _finish_reason(reply)
        return
    yield {"role": "assistant", "content": None, "refusal": None}, None
    for i, call in enumerate(reply.calls):
        head = {
            "index": i,
            **_call_id(reply, completion_id, i),
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        yield {"tool_calls": [head]}, None
        for piece in _pieces(call.arguments, 7):
            yield {"tool_calls": [{"index": i, "function": {"arguments": piece}}]}, None
    if reply.content:
        yield {"content": reply.content}, None
    yield {}, _finish_reason(reply)


def _stream_events(
    reply: Reply, completion_id: str, created: int, usage: dict[str, Any] | None
) -> Iterator[str]:
    base = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": MODEL_ID,
        "system_fingerprint": None,
    }
    for delta, finish in _deltas(reply, completion_id):
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        chunk = {**base, "choices": [choice]}
        if usage is not None:
            chunk["usage"] = None
        yield json.dumps(chunk)
    if usage is not None:
        yield json.dumps({**base, "choices": [], "usage": usage})
    yield "[DONE]"


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
            self._send(404, _error_body(404, f"no route {self.path}"), {})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, _error_body(404, f"no route {self.path}"), {})
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
            self._send(reply.status, _error_body(reply.status, reply.error_message), headers)
            return
        if reply.body is not None:
            self._send(200, reply.body, {}, reply.content_type)
            return
        completion_id = f"chatcmpl-{next(self.server.ids)}"
        created = int(time.time())
        asked = not body.get("stream") or (body.get("stream_options") or {}).get("include_usage")
        usage = reported_usage(body, reply) if reply.usage and asked else None
        self.server.owner.reported(body, usage)
        if not body.get("stream"):
            self._send(200, _completion(reply, completion_id, created, usage), {})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for event in _stream_events(reply, completion_id, created, usage):
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


def _load_responder(spec: str) -> Responder:
    module_name, _, attr = spec.partition(":")
    responder: Responder = getattr(importlib.import_module(module_name), attr)
    return responder


def main(argv: Sequence[str] | None = None) -> None:
    """Serve until SIGTERM/SIGINT; write the port to `--port-file` once listening."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path, required=True)
    parser.add_argument("--responder", required=True, help="module:function")
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with ScriptedOpenAIServer(_load_responder(args.responder), port=args.port) as server:
        tmp = args.port_file.with_suffix(".tmp")
        tmp.write_text(str(server.port))
        tmp.replace(args.port_file)
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
