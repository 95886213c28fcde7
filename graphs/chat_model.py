"""The chat model the graph uses: built at run time from the `Context`, called with clear errors.

Only model calls go through `model_errors`: a failure of the user's own tools inside the
executor is never mistaken for an unavailable model.

Some OpenAI-compatible servers answer HTTP 200 with something that is not a chat completion (no
`choices`, an empty list, a choice without `message`, broken JSON, a text/plain page). The HTTP
clients of the `ChatOpenAI` built here look at every such reply before the OpenAI client parses
it and raise `UnusableReplyError` naming what came back; `ask_model` retries it as often as the
client retries a failing server, then `model_errors` reports it as `ModelUnavailableError`.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import uuid
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import openai
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from langchain_core.runnables.retry import ExponentialJitterParams
from langchain_openai import ChatOpenAI
from langgraph.config import get_config
from langgraph.runtime import get_runtime
from pydantic import SecretStr

from replan.graphs.context import Context
from replan.graphs.errors import ModelUnavailableError
from replan.graphs.steps import Call, Steps

REPLY_PREVIEW_CHARS = 200
RETRY_BACKOFF = ExponentialJitterParams(max=8.0, jitter=0.5)
"""Waits between retries of an unusable reply: about 1 s, doubling each time, at most 8 s."""


class UnusableReplyError(Exception):
    """The model server answered a chat completion request with something else."""

    def __init__(self, problem: str, body: bytes) -> None:
        text = " ".join(body.decode("utf-8", "replace").split()) or "(an empty body)"
        if len(text) > REPLY_PREVIEW_CHARS:
            text = text[:REPLY_PREVIEW_CHARS] + "…"
        self.problem = problem
        self.preview = text
        super().__init__(f"{problem}: {text}")


def unusable_reply_problem(content_type: str, body: bytes, stream: bool) -> str | None:
    """Why a 200 reply to a chat completion request cannot be used, or None if it can.

    A streamed reply (an event stream) is left to the client; anything else must be a JSON
    object with a non-empty `choices` list whose first item holds a `message` object.
    """
    media_type = _media_type(content_type)
    if media_type == "text/event-stream":
        return None
    if media_type != "application/json" and not media_type.endswith("+json"):
        return f"a {media_type or 'untyped'} reply instead of a JSON chat completion"
    if stream:
        return "a JSON document instead of the event stream that was asked for"
    try:
        document = json.loads(body)
    except ValueError:
        return "a reply labelled JSON that is not valid JSON"
    if not isinstance(document, dict):
        return f"JSON {type(document).__name__} instead of a chat completion object"
    choices = document.get("choices")
    if not isinstance(choices, list):
        return "a JSON object without `choices`"
    if not choices:
        return "a chat completion whose `choices` list is empty"
    if not isinstance(choices[0], dict) or not isinstance(choices[0].get("message"), dict):
        return "a chat completion whose choice has no `message`"
    return None


def _media_type(content_type: str) -> str:
    return content_type.split(";")[0].strip().lower()


def _needs_check(response: Any) -> bool:
    """Whether `response` is a 200 reply to a chat completion request, other than a stream."""
    request = response.request
    return bool(
        response.status_code == 200
        and request.method == "POST"
        and request.url.path.rstrip("/").endswith("/chat/completions")
        and _media_type(response.headers.get("content-type", "")) != "text/event-stream"
    )


def _refuse_unusable(response: Any, body: bytes) -> None:
    try:
        stream = bool(json.loads(response.request.content).get("stream"))
    except (ValueError, AttributeError, RuntimeError):  # RuntimeError: a body not read yet
        stream = False
    problem = unusable_reply_problem(response.headers.get("content-type", ""), body, stream)
    if problem:
        raise UnusableReplyError(problem, body)


def _check_reply(response: Any) -> None:
    """Response hook of the sync HTTP client: refuse an unusable chat completion reply."""
    if _needs_check(response):
        _refuse_unusable(response, response.read())


async def _acheck_reply(response: Any) -> None:
    """Response hook of the async HTTP clients: refuse an unusable chat completion reply."""
    if _needs_check(response):
        _refuse_unusable(response, await response.aread())


@functools.cache
def _sync_http_client() -> openai.DefaultHttpxClient:
    """One pooled sync HTTP client per process, checking chat completion replies."""
    return openai.DefaultHttpxClient(event_hooks={"response": [_check_reply]})


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
        client = _ASYNC_HTTP_CLIENTS[loop] = openai.DefaultAsyncHttpxClient(
            event_hooks={"response": [_acheck_reply]}
        )
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
        http_client=_sync_http_client(),
        http_async_client=_async_http_client(),
        stream_usage=True,  # streamed replies end with their usage, as plain ones carry it
    )


def resolve_model(model: BaseChatModel | None, context: Context | None) -> BaseChatModel:
    """The caller's `model` if given, else a `ChatOpenAI` built from the run's context."""
    return model if model is not None else chat_model_from_context(context or Context())


def ask_model(
    model: Runnable[LanguageModelInput, BaseMessage], messages: Sequence[BaseMessage]
) -> Steps[AIMessage]:
    """One model turn over `messages` (its tokens stream in `stream_mode="messages"`); the
    usage its reply reports is counted for the node (`replan.graphs.steps`).

    A reply that is not a usable chat completion is asked for again, as often as the run's
    `Context.max_retries` lets the client retry a failing server.
    """
    context = get_runtime(Context).context or Context()
    retrying = model.with_retry(
        retry_if_exception_type=(UnusableReplyError,),
        exponential_jitter_params=RETRY_BACKOFF,
        stop_after_attempt=context.max_retries + 1,
    )
    reply = yield Call(retrying, list(messages), guard=model_errors, metered=True)
    if not isinstance(reply, AIMessage):
        raise TypeError(f"expected an AIMessage from the model, got {type(reply).__name__}")
    return with_distinct_call_ids(reply)


def with_distinct_call_ids(reply: AIMessage) -> AIMessage:
    """`reply` with a distinct, non-empty id on every tool call.

    Tool results are matched to calls by id, in the graph and by the server on the next turn;
    some servers repeat one id for every call, send "" or leave the id out.
    """
    seen: set[str] = set()
    replaced = 0

    def distinct(call_id: str | None) -> str:
        nonlocal replaced
        if not call_id or call_id in seen:
            replaced += 1
            call_id = f"call_{uuid.uuid4().hex[:24]}"
        seen.add(call_id)
        return call_id

    tool_calls = [{**call, "id": distinct(call["id"])} for call in reply.tool_calls]
    invalid = [{**call, "id": distinct(call["id"])} for call in reply.invalid_tool_calls]
    if not replaced:
        return reply
    return reply.model_copy(update={"tool_calls": tool_calls, "invalid_tool_calls": invalid})


@contextmanager
def model_errors() -> Iterator[None]:
    """Turn failures that survive the client's own retries (unreachable server, refused key,
    HTTP errors such as a lasting 429 or 5xx) into a `ModelUnavailableError` with a one-line
    reason."""
    try:
        yield
    except UnusableReplyError as exc:
        raise ModelUnavailableError(
            f"{_node_name()}: the model server sent {exc.problem} (it sent: {exc.preview})"
        ) from exc
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


def _node_name() -> str:
    """The graph node being run, with the nodes around it ("executor/act"), for messages."""
    try:
        metadata = get_config().get("metadata") or {}
    except RuntimeError:  # called outside a graph run
        return "model"
    namespace = str(metadata.get("langgraph_checkpoint_ns") or metadata.get("langgraph_node", ""))
    names = [part.split(":")[0] for part in namespace.split("|") if part]
    return "/".join(names) or "model"
