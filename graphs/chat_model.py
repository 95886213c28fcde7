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
import importlib
import json
import os
import ssl
import uuid
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast
from urllib.parse import urlsplit

import openai
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from langchain_core.runnables.retry import ExponentialJitterParams
from langchain_openai import ChatOpenAI
from langgraph.config import get_config, get_stream_writer
from langgraph.runtime import get_runtime
from pydantic import SecretStr

from replan.graphs.context import Context
from replan.graphs.errors import ModelUnavailableError
from replan.graphs.node_driver import Call, Steps
from replan.graphs.text_calls import TEXT_CALLS_EVENT, OfferedTools, recover_text_calls
from replan.state.usage import OPENAI_HOST

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


def cut_off(reply: AIMessage) -> bool:
    """Whether the server stopped `reply` at its token limit (`finish_reason: "length"`)."""
    return reply.response_metadata.get("finish_reason") == "length"


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


def resolve_model(
    model: BaseChatModel | None, context: Context | None, max_tokens: int
) -> BaseChatModel:
    """The caller's `model` if given (as it is: its own settings apply), else a `ChatOpenAI`
    built from the run's context, its replies bounded to `max_tokens` tokens."""
    if model is not None:
        return model
    return chat_model_from_context(context or Context(), max_tokens)


def ask_model(
    model: Runnable[LanguageModelInput, BaseMessage],
    messages: Sequence[BaseMessage],
    offered: OfferedTools | None = None,
) -> Steps[AIMessage]:
    """One model turn over `messages` (its tokens stream in `stream_mode="messages"`); the
    usage its reply reports is counted for the node (`replan.graphs.node_driver`).

    A reply that is not a usable chat completion is asked for again, as often as the run's
    `Context.max_retries` lets the client retry a failing server. With the `offered` tools
    named and `Context.recover_text_calls` on, tool calls the model wrote as text become the
    reply's `tool_calls` (`replan.graphs.text_calls`), announced as a custom stream event.
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
    if offered is not None and context.recover_text_calls:
        reply = _with_text_calls(reply, offered)
    return with_distinct_call_ids(reply)


def _with_text_calls(reply: AIMessage, offered: OfferedTools) -> AIMessage:
    """`reply` with the calls written in its text recovered, if any; each recovery is sent
    as a custom stream event naming the node (its checkpoint namespace) and the tools."""
    recovered = recover_text_calls(reply, offered)
    if recovered is None:
        return reply
    get_stream_writer()(
        {
            "kind": TEXT_CALLS_EVENT,
            "count": len(recovered.tool_calls),
            "tools": [call["name"] for call in recovered.tool_calls],
            "namespace": _checkpoint_namespace(),
        }
    )
    return recovered


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
    except openai.APITimeoutError as exc:  # a subclass of APIConnectionError: handled first
        raise ModelUnavailableError(_no_reply_in_time(exc.request)) from exc
    except openai.APIConnectionError as exc:
        raise ModelUnavailableError(
            f"cannot reach the model server at {server_url(exc.request)}: {exc}"
        ) from exc
    except openai.AuthenticationError as exc:
        raise ModelUnavailableError(f"the model server refused the API key: {exc}") from exc
    except openai.APIStatusError as exc:
        body = exc.body if isinstance(exc.body, dict) else {}
        detail = body.get("message") or exc.message
        raise ModelUnavailableError(
            f"the model server answered HTTP {exc.status_code}: {detail}"
        ) from exc


def server_url(request: Any) -> str:
    """The base URL of the server a request went to (its API path left out)."""
    return str(request.url).removesuffix("/chat/completions").removesuffix("/models")


def _no_reply_in_time(request: Any) -> str:
    """What a timed-out request says: how long the client waited for which server."""
    url = server_url(request)
    waited = (request.extensions.get("timeout") or {}).get("read")
    within = f"within {waited:g} s " if isinstance(waited, int | float) else ""
    return f"{_node_name()}: no reply {within}from {url}"


def _checkpoint_namespace() -> str:
    """Where in the graph the node being run is ("executor:<task id>|act:<task id>"), or ""."""
    try:
        metadata = get_config().get("metadata") or {}
    except RuntimeError:  # called outside a graph run
        return ""
    return str(metadata.get("langgraph_checkpoint_ns") or metadata.get("langgraph_node", ""))


def _node_name() -> str:
    """The graph node being run, with the nodes around it ("executor/act"), for messages."""
    namespace = _checkpoint_namespace()
    names = [part.split(":")[0] for part in namespace.split("|") if part]
    return "/".join(names) or "model"
