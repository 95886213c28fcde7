"""The chat model a run talks to: a `ChatOpenAI` built at run time from the run's `Context`
(pooled HTTP clients, the reply limit in the field each server reads), or the caller's own."""

from __future__ import annotations

import asyncio
import functools
import importlib
import os
import ssl
import weakref
from typing import Any, cast
from urllib.parse import urlsplit

import openai
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from replan.graphs.context import OPENAI_HOST, Context
from replan.graphs.errors import ModelUnavailableError
from replan.graphs.model.failures import _acheck_reply, _check_reply


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context for every HTTP client of the process, made by the HTTP library the OpenAI
    client is built on (httpx, or httpx2 in newer versions) as its clients make their own (its
    trust store, `$SSL_CERT_FILE`...): loading the CA certificates takes ~25 ms, which each new
    client (one per event loop) would otherwise pay again."""
    base = next(
        c for c in openai.DefaultHttpxClient.__mro__ if not c.__module__.startswith("openai")
    )
    library = importlib.import_module(base.__module__.partition(".")[0])
    return cast(ssl.SSLContext, library.create_ssl_context())


@functools.cache
def _sync_http_client() -> openai.DefaultHttpxClient:
    """One pooled sync HTTP client per process, checking chat completion replies."""
    return openai.DefaultHttpxClient(
        verify=_tls_context(), event_hooks={"response": [_check_reply]}
    )


_ASYNC_HTTP_CLIENTS: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, openai.DefaultAsyncHttpxClient
] = weakref.WeakKeyDictionary()


def _async_http_client() -> openai.DefaultAsyncHttpxClient:
    """A pooled async HTTP client for the running event loop; outside one (a sync run, which
    makes no async request), a client of its own.

    langchain-openai shares one async client per process by default, but pooled connections
    belong to the loop that opened them: a second `asyncio.run(graph.ainvoke(...))` in the same
    process would fail with "Event loop is closed". One client per loop keeps pooling safe.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return _new_async_http_client()
    client = _ASYNC_HTTP_CLIENTS.get(loop)
    if client is None:
        client = _ASYNC_HTTP_CLIENTS[loop] = _new_async_http_client()
    return client


def _new_async_http_client() -> openai.DefaultAsyncHttpxClient:
    return openai.DefaultAsyncHttpxClient(
        verify=_tls_context(), event_hooks={"response": [_acheck_reply]}
    )


def reply_limit(base_url: str | None, max_tokens: int) -> dict[str, Any]:
    """`ChatOpenAI` arguments bounding each reply to `max_tokens` tokens, in the request field
    the server reads.

    OpenAI's API takes `max_completion_tokens` (what `ChatOpenAI` turns its `max_tokens` into);
    llama-cpp-python's and Ollama's servers read only the older `max_tokens` and ignore the
    other, while llama.cpp's server and vLLM read both. So another server gets `max_tokens`.
    """
    if not base_url or urlsplit(base_url).hostname == OPENAI_HOST:
        return {"max_tokens": max_tokens}
    return {"extra_body": {"max_tokens": max_tokens}}


def require_api_key() -> str:
    """`$OPENAI_API_KEY`, which every `ChatOpenAI` built here needs; `ModelUnavailableError`
    when it is not set (callers may check it before starting anything)."""
    api_key = os.environ.get("OPENAI_API_KEY")
    if not api_key:
        raise ModelUnavailableError(
            "OPENAI_API_KEY is not set: export it (any non-empty value works for a local "
            "OpenAI-compatible server such as vLLM, Ollama or llama.cpp)."
        )
    return api_key


class LocalServerChatOpenAI(ChatOpenAI):
    """`ChatOpenAI` that sends an assistant message with tool calls and no text with `content`
    "" rather than null: llama-cpp-python's server refuses null (HTTP 500, a validation error),
    OpenAI and the other servers take either."""

    def _get_request_payload(
        self, input_: LanguageModelInput, *, stop: list[str] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        payload = super()._get_request_payload(input_, stop=stop, **kwargs)
        for message in payload.get("messages") or []:
            if message.get("role") == "assistant" and message.get("content") is None:
                message["content"] = ""
        return payload


def chat_model_from_context(context: Context, max_tokens: int) -> BaseChatModel:
    """A `ChatOpenAI` for `context` whose replies are at most `max_tokens` tokens; raises
    `ModelUnavailableError` when no API key is set."""
    api_key = require_api_key()
    return LocalServerChatOpenAI(
        model=context.model,
        temperature=context.temperature,
        base_url=context.base_url or None,
        api_key=SecretStr(api_key),
        max_retries=context.max_retries,
        timeout=context.timeout,
        http_client=_sync_http_client(),
        http_async_client=_async_http_client(),
        **reply_limit(context.base_url, max_tokens),
        stream_usage=True,  # streamed replies end with their usage, as plain ones carry it
    )


def resolve_model(model: BaseChatModel | None, context: Context, max_tokens: int) -> BaseChatModel:
    """The caller's `model` if given (as it is: its own settings apply), else a `ChatOpenAI`
    built from the run's context, its replies bounded to `max_tokens` tokens."""
    if model is not None:
        return model
    return chat_model_from_context(context, max_tokens)
