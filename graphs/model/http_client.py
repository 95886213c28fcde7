"""The HTTP clients under the `ChatOpenAI` replan builds: pooled (one per process for sync
runs, one per event loop for async ones, all on one TLS context), and doing at the HTTP layer,
through the clients' public `send` and response hooks, what the OpenAI client offers no hook
for:

- an assistant message with tool calls and no text goes out with `content` "" rather than null
  (langchain-openai writes null; llama-cpp-python's server refuses it with HTTP 500, OpenAI
  and the other servers take either);
- a failed chat completion request (HTTP 408, 409, 429 or 5xx, no answer in time, no
  connection) is sent again up to `Context.max_retries` times, with the OpenAI client's own
  policy (the server's `retry-after`, else backoff from 0.5 s doubling to 8 s, less up to a
  quarter), by replan rather than the client, so that each retry can be reported
  (`model_retries_reported`) before its wait; another request (the models list, which only
  tells replan about the server) is sent once;
- unusable HTTP 200 replies are refused (response hooks, `failures.UnusableReplyError`).
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import math
import random
import ssl
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import httpx2
import openai

from replan.graphs.model.failures import (
    _acheck_reply,
    _check_reply,
    _checkpoint_namespace,
    is_chat_completion_request,
)

INITIAL_RETRY_SECONDS = 0.5
"""The wait before the first retry when the server names none; it doubles each retry."""
MAX_RETRY_SECONDS = 8.0
"""The longest wait between retries when the server names none."""
MAX_RETRY_AFTER_SECONDS = 120.0
"""The longest wait a server's `retry-after` may ask for; a longer one is not retried."""
RETRIED_STATUSES = frozenset({408, 409, 429})
"""HTTP statuses retried besides 5xx (request timeout, lock timeout, rate limit)."""
RETRIED_ERRORS = (httpx2.RequestError, ssl.SSLError)
"""Failures to get any reply that are retried (`httpx2.TimeoutException` among them)."""


@dataclass(frozen=True)
class ModelRetry:
    """A model request that failed and is about to be sent again."""

    reason: str
    """Why it failed: "HTTP 500", "no answer in time", "connection failed (ConnectError)"."""
    seconds: float
    """How long replan waits before sending it again."""
    retry: int
    """Which retry this is, from 1."""
    retries: int
    """How many retries the request may have (`Context.max_retries`)."""
    namespace: str
    """The checkpoint namespace of the graph node that made the request, or ""."""


RetryListener = Callable[[ModelRetry], None]
_LISTENER: ContextVar[RetryListener | None] = ContextVar("replan_model_retries", default=None)


@contextmanager
def model_retries_reported(listener: RetryListener) -> Iterator[None]:
    """While inside, `listener` is given each retry of a model request made in this context
    (graph runs started here included), before the wait; it runs in the requesting thread."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context for every HTTP client of the process, made as httpx2 (the HTTP library
    of openai 3) makes its clients' own (its trust store, `$SSL_CERT_FILE`...): loading the CA
    certificates takes ~20 ms, which each new client (one per event loop) would pay again."""
    return httpx2.create_ssl_context()


class _Retries:
    """The retries one request has taken and may take, and the wait before each."""

    def __init__(self, retries: int) -> None:
        self.retries = retries
        self.taken = 0

    def wait_after(self, outcome: httpx2.Response | BaseException) -> float | None:
        """Seconds to wait before sending the request again after `outcome` (the retry is
        reported), or None to let `outcome` stand."""
        if self.taken >= self.retries or (
            isinstance(outcome, httpx2.Response) and outcome.is_success
        ):
            return None
        headers = outcome.headers if isinstance(outcome, httpx2.Response) else None
        server_wait = _server_wait(headers)
        reason = _retry_reason(outcome, server_wait)
        if reason is None or self.taken >= self.retries:
            return None
        if server_wait is not None and 0 < server_wait <= MAX_RETRY_AFTER_SECONDS:
            seconds = server_wait
        else:
            backoff = min(INITIAL_RETRY_SECONDS * 2.0 ** min(self.taken, 64), MAX_RETRY_SECONDS)
            seconds = backoff * (1 - 0.25 * random.random())
        self.taken += 1
        if (listener := _LISTENER.get()) is not None:
            listener(ModelRetry(reason, seconds, self.taken, self.retries, _checkpoint_namespace()))
        return seconds


def _retry_reason(
    outcome: httpx2.Response | BaseException, server_wait: float | None
) -> str | None:
    """Why `outcome` is worth a retry, or None when it is not (a success, a refusal)."""
    if isinstance(outcome, httpx2.TimeoutException):
        return "no answer in time"
    if isinstance(outcome, BaseException):
        return f"connection failed ({type(outcome).__name__})"
    if outcome.is_success:
        return None
    if server_wait is not None and server_wait > MAX_RETRY_AFTER_SECONDS:
        return None
    status = outcome.status_code
    if (said := outcome.headers.get("x-should-retry")) in ("true", "false"):
        retried = said == "true"  # the server's own say (OpenAI's API sends it)
    else:
        retried = status in RETRIED_STATUSES or status >= 500
    return f"HTTP {status}" if retried else None


def _server_wait(headers: httpx2.Headers | None) -> float | None:
    """The seconds a reply's `retry-after-ms` or `retry-after` (seconds or a date) asks for."""
    if headers is None:
        return None
    for name, divisor in (("retry-after-ms", 1000), ("retry-after", 1)):
        try:
            return float(headers[name]) / divisor
        except (KeyError, ValueError):
            continue
    try:
        date = email.utils.parsedate_to_datetime(headers.get("retry-after", ""))
    except (TypeError, ValueError):
        return None
    seconds = date.timestamp() - time.time()
    return seconds if math.isfinite(seconds) else None


def _with_empty_assistant_content(request: httpx2.Request) -> httpx2.Request:
    """`request`, or for a chat completion request holding assistant messages whose `content`
    is null, the same request with `content` "" in them."""
    if not is_chat_completion_request(request):
        return request
    try:
        if b"null" not in request.content:  # no null content to mend (the common case)
            return request
        body = json.loads(request.content)
    except (ValueError, httpx2.RequestNotRead):
        return request
    messages = body.get("messages") if isinstance(body, dict) else None
    nulls = [
        message
        for message in (messages if isinstance(messages, list) else [])
        if isinstance(message, dict)
        and message.get("role") == "assistant"
        and message.get("content") is None
    ]
    if not nulls:
        return request
    for message in nulls:
        message["content"] = ""
    headers = [(k, v) for k, v in request.headers.multi_items() if k.lower() != "content-length"]
    return httpx2.Request(
        request.method,
        request.url,
        headers=headers,
        content=json.dumps(body).encode(),
        extensions=request.extensions,
    )


class ModelHttpClient(openai.DefaultHttpxClient):
    """A sync HTTP client for model requests (see the module docstring), retrying each failed
    chat completion request up to `retries` times."""

    def __init__(self, retries: int) -> None:
        super().__init__(verify=_tls_context(), event_hooks={"response": [_check_reply]})
        self.retries = retries

    def send(self, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        """Send `request` (tool-call messages with "" content), retrying failures."""
        request = _with_empty_assistant_content(request)
        retries = _Retries(self.retries if is_chat_completion_request(request) else 0)
        while True:
            try:
                response = super().send(request, **kwargs)
            except RETRIED_ERRORS as exc:
                if (wait := retries.wait_after(exc)) is None:
                    raise
            else:
                if (wait := retries.wait_after(response)) is None:
                    return response
                response.close()
            time.sleep(wait)


class AsyncModelHttpClient(openai.DefaultAsyncHttpxClient):
    """`ModelHttpClient` for async requests."""

    def __init__(self, retries: int) -> None:
        super().__init__(verify=_tls_context(), event_hooks={"response": [_acheck_reply]})
        self.retries = retries

    async def send(self, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        """Send `request` (tool-call messages with "" content), retrying failures."""
        request = _with_empty_assistant_content(request)
        retries = _Retries(self.retries if is_chat_completion_request(request) else 0)
        while True:
            try:
                response = await super().send(request, **kwargs)
            except RETRIED_ERRORS as exc:
                if (wait := retries.wait_after(exc)) is None:
                    raise
            else:
                if (wait := retries.wait_after(response)) is None:
                    return response
                await response.aclose()
            await asyncio.sleep(wait)


@functools.cache
def sync_http_client(retries: int) -> ModelHttpClient:
    """The process's pooled sync client retrying failed requests `retries` times."""
    return ModelHttpClient(retries)


_ASYNC_HTTP_CLIENTS: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[int, AsyncModelHttpClient]
] = weakref.WeakKeyDictionary()


def async_http_client(retries: int) -> AsyncModelHttpClient:
    """A pooled async client for the running event loop retrying failed requests `retries`
    times; outside a loop (a sync run, which makes no async request), a client of its own.

    langchain-openai shares one async client per process by default, but pooled connections
    belong to the loop that opened them: a second `asyncio.run(graph.ainvoke(...))` in the same
    process would fail with "Event loop is closed". One client per loop keeps pooling safe.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return AsyncModelHttpClient(retries)
    clients = _ASYNC_HTTP_CLIENTS.setdefault(loop, {})
    if retries not in clients:
        clients[retries] = AsyncModelHttpClient(retries)
    return clients[retries]
