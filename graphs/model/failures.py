"""What can go wrong with a model request, said in one line: unusable HTTP 200 replies are
refused before the OpenAI client parses them (`UnusableReplyError`), and client errors that
survive its retries become `ModelUnavailableError` naming the server (`model_errors`).

Only model calls go through `model_errors`: a failure of the user's own tools inside the
executor is never mistaken for an unavailable model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import openai
from langgraph.config import get_config

from replan.graphs.errors import ModelUnavailableError

REPLY_PREVIEW_CHARS = 200


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


def is_chat_completion_request(request: Any) -> bool:
    """Whether the HTTP `request` asks for a chat completion."""
    return bool(
        request.method == "POST" and request.url.path.rstrip("/").endswith("/chat/completions")
    )


def _needs_check(response: Any) -> bool:
    """Whether `response` is a 200 reply to a chat completion request, other than a stream."""
    return bool(
        response.status_code == 200
        and is_chat_completion_request(response.request)
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
