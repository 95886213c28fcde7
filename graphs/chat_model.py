"""The chat model the graph uses: built at run time from the `Context`, called with clear errors.

Only model calls go through `model_errors`: a failure of the user's own tools inside the
executor is never mistaken for an unavailable model.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import openai
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from replan.graphs.context import Context
from replan.graphs.errors import ModelUnavailableError
from replan.graphs.steps import Call, Steps

_ASYNC_HTTP_CLIENTS: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, openai.DefaultAsyncHttpxClient
] = weakref.WeakKeyDictionary()


def _async_http_client() -> openai.DefaultAsyncHttpxClient | None:
    """A pooled async HTTP client for the running event loop, or None outside one.

    langchain-openai shares one async client per process by default, but pooled connections
    belong to the loop that opened them: a second `asyncio.run(graph.ainvoke(...))` in the same
    process would fail with "Event loop is closed". One client per loop keeps pooling safe.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    client = _ASYNC_HTTP_CLIENTS.get(loop)
    if client is None:
        client = _ASYNC_HTTP_CLIENTS[loop] = openai.DefaultAsyncHttpxClient()
    return client


def chat_model_from_context(context: Context) -> BaseChatModel:
    """A `ChatOpenAI` for `context`; raises `ModelUnavailableError` when no API key is set."""
    api_key = os.environ.get("OPENAI_API_KEY")
    if not api_key:
        raise ModelUnavailableError(
            "OPENAI_API_KEY is not set: export it (any non-empty value works for a local "
            "OpenAI-compatible server such as vLLM, Ollama or llama.cpp)."
        )
    return ChatOpenAI(
        model=context.model,
        temperature=context.temperature,
        base_url=context.base_url or None,
        api_key=SecretStr(api_key),
        max_retries=context.max_retries,
        timeout=context.timeout,
        http_async_client=_async_http_client(),
    )


def resolve_model(model: BaseChatModel | None, context: Context | None) -> BaseChatModel:
    """The caller's `model` if given, else a `ChatOpenAI` built from the run's context."""
    return model if model is not None else chat_model_from_context(context or Context())


def ask_model(
    model: Runnable[LanguageModelInput, BaseMessage], messages: Sequence[BaseMessage]
) -> Steps[AIMessage]:
    """One model turn over `messages` (its tokens stream in `stream_mode="messages"`)."""
    reply = yield Call(model, list(messages), guard=model_errors)
    if not isinstance(reply, AIMessage):
        raise TypeError(f"expected an AIMessage from the model, got {type(reply).__name__}")
    return reply


@contextmanager
def model_errors() -> Iterator[None]:
    """Turn failures that survive the client's own retries (unreachable server, refused key,
    HTTP errors such as a lasting 429 or 5xx) into a `ModelUnavailableError` with a one-line
    reason."""
    try:
        yield
    except openai.APIConnectionError as exc:
        raise ModelUnavailableError(f"cannot reach the model server: {exc}") from exc
    except openai.AuthenticationError as exc:
        raise ModelUnavailableError(f"the model server refused the API key: {exc}") from exc
    except openai.APIStatusError as exc:
        body = exc.body if isinstance(exc.body, dict) else {}
        detail = body.get("message") or exc.message
        raise ModelUnavailableError(
            f"the model server answered HTTP {exc.status_code}: {detail}"
        ) from exc
