"""The HTTP clients under the `ChatOpenAI` replan builds: pooled (one per process for sync
runs, one per event loop for async ones, all on one TLS context), and doing at the HTTP layer,
through the clients' public `send` and response hooks, what the OpenAI client offers no hook
for:

- an assistant message with tool calls and no text goes out with `content` "" rather than null
  (langchain-openai writes null; llama-cpp-python's server refuses it with HTTP 500, OpenAI
  and the other servers take either);
- unusable HTTP 200 replies are refused (response hooks, `failures.UnusableReplyError`).
"""

from __future__ import annotations

import asyncio
import functools
import json
import ssl
import weakref
from typing import Any

import httpx2
import openai

from replan.graphs.model.failures import _acheck_reply, _check_reply, is_chat_completion_request


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context for every HTTP client of the process, made as httpx2 (the HTTP library
    of openai 3) makes its clients' own (its trust store, `$SSL_CERT_FILE`...): loading the CA
    certificates takes ~20 ms, which each new client (one per event loop) would pay again."""
    return httpx2.create_ssl_context()


def _with_empty_assistant_content(request: httpx2.Request) -> httpx2.Request:
    """`request`, or for a chat completion request holding assistant messages whose `content`
    is null, the same request with `content` "" in them."""
    if not is_chat_completion_request(request):
        return request
    try:
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
    """A sync HTTP client for model requests (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__(verify=_tls_context(), event_hooks={"response": [_check_reply]})

    def send(self, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        """Send `request`, its tool-call messages with "" content."""
        return super().send(_with_empty_assistant_content(request), **kwargs)


class AsyncModelHttpClient(openai.DefaultAsyncHttpxClient):
    """`ModelHttpClient` for async requests."""

    def __init__(self) -> None:
        super().__init__(verify=_tls_context(), event_hooks={"response": [_acheck_reply]})

    async def send(self, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        """Send `request`, its tool-call messages with "" content."""
        return await super().send(_with_empty_assistant_content(request), **kwargs)


@functools.cache
def sync_http_client() -> ModelHttpClient:
    """The process's pooled sync client."""
    return ModelHttpClient()


_ASYNC_HTTP_CLIENTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncModelHttpClient] = (
    weakref.WeakKeyDictionary()
)


def async_http_client() -> AsyncModelHttpClient:
    """A pooled async client for the running event loop; outside one (a sync run, which makes
    no async request), a client of its own.

    langchain-openai shares one async client per process by default, but pooled connections
    belong to the loop that opened them: a second `asyncio.run(graph.ainvoke(...))` in the same
    process would fail with "Event loop is closed". One client per loop keeps pooling safe.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return AsyncModelHttpClient()
    client = _ASYNC_HTTP_CLIENTS.get(loop)
    if client is None:
        client = _ASYNC_HTTP_CLIENTS[loop] = AsyncModelHttpClient()
    return client
