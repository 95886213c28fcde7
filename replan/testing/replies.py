"""What the scripted server answers with: `Reply` and its constructors (`text`, `tool_call`,
`tool_calls`, `http_error`, `raw`, `BROKEN_REPLIES`), and the token usage it reports for a
reply (`tokens`, `reported_usage`)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

MODEL_ID = "scripted-model"
"""The one model the scripted server lists and names in its replies."""


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


def http_error(status: int, message: str = "", *, retry_after_ms: float | None = None) -> Reply:
    """An HTTP error with an OpenAI-style error body; `retry_after_ms` sets `retry-after-ms`."""
    return Reply(status=status, error_message=message, retry_after_ms=retry_after_ms)


def raw(body: str, content_type: str = "application/json") -> Reply:
    """HTTP 200 with exactly this body and content type: how broken servers answer."""
    return Reply(body=body, content_type=content_type)


_COMPLETION_HEAD = {"id": "chatcmpl-broken", "object": "chat.completion", "created": 0}
BROKEN_REPLIES: dict[str, Reply] = {
    "no choices": raw(json.dumps({**_COMPLETION_HEAD, "model": MODEL_ID})),
    "empty choices": raw(json.dumps({**_COMPLETION_HEAD, "choices": []})),
    "choice without message": raw(
        json.dumps({**_COMPLETION_HEAD, "choices": [{"index": 0, "finish_reason": "stop"}]})
    ),
    "not JSON": raw("<html><body>502 Bad Gateway</body></html>"),
    "text/plain": raw("upstream model overloaded, try later", "text/plain"),
}
"""HTTP 200 replies that are not usable chat completions, by what is wrong with them."""


CHARS_PER_TOKEN = 4


def tokens(text: str) -> int:
    """The tokens this server counts for `text`: one per 4 characters, rounded up."""
    return -(-len(text) // CHARS_PER_TOKEN)


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def prompt_tokens(body: dict[str, Any]) -> list[str]:
    """The prompt of request `body` as a chat template lays it out (the system message, then
    the tools offered, as their JSON, then the other messages with their tool calls), cut in
    tokens of `CHARS_PER_TOKEN` characters, each piece starting a new token."""
    messages = body.get("messages") or []
    pieces, rest = [], messages
    if messages and messages[0].get("role") == "system":
        pieces.append(f"system:{_text_of(messages[0])}")
        rest = messages[1:]
    if body.get("tools"):
        pieces.append(f"tools:{json.dumps(body['tools'], sort_keys=True)}")
    for message in rest:
        calls = json.dumps(message.get("tool_calls") or [], sort_keys=True)
        pieces.append(f"{message.get('role')}:{_text_of(message)}{calls}")
    return [
        piece[start : start + CHARS_PER_TOKEN]
        for piece in pieces
        for start in range(0, len(piece), CHARS_PER_TOKEN)
    ]


class PromptCache:
    """A server's cache of the last prompt it read (one slot, as llama-server's default): a
    request whose prompt starts as the last one did is read from where they part."""

    def __init__(self) -> None:
        self._last: list[str] = []
        self._lock = threading.Lock()

    def reuse(self, prompt: list[str]) -> int:
        """How many tokens of `prompt` the cache holds; `prompt` is cached next."""
        with self._lock:
            same = next(
                (i for i, (a, b) in enumerate(zip(prompt, self._last, strict=False)) if a != b),
                min(len(prompt), len(self._last)),
            )
            self._last = prompt
        return same


def reported_usage(body: dict[str, Any], reply: Reply, cache: PromptCache) -> dict[str, Any]:
    """The usage this server reports for `reply` to request `body`: the prompt's tokens (tools
    included, `prompt_tokens`), of which those the server's prompt `cache` held are cached,
    and completion tokens from the reply's text and calls."""
    prompt = prompt_tokens(body)
    written = (reply.content or "") + "".join(c.name + c.arguments for c in reply.calls)
    completion = tokens(written)
    return {
        "prompt_tokens": len(prompt),
        "completion_tokens": completion,
        "total_tokens": len(prompt) + completion,
        "prompt_tokens_details": {"cached_tokens": cache.reuse(prompt)},
    }


def token_pieces(content: str) -> list[str]:
    """`content` in the pieces a stream sends it in (roughly a token each)."""
    return re.findall(r"\s*\S+|\s+", content)
