"""The OpenAI chat-completions wire format the scripted server speaks: a `Reply` as a JSON
completion (`completion`) or as the events of a stream (`stream_events`), and error bodies."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from replan.testing.replies import MODEL_ID, Reply, token_pieces


def _call_id(reply: Reply, completion_id: str, index: int) -> dict[str, str]:
    """The `id` field of a call (none at all when the script leaves it out)."""
    if not reply.call_ids:
        return {"id": f"call_{completion_id}_{index}"}
    given = reply.call_ids[index]
    return {} if given is None else {"id": given}


def error_body(status: int, message: str) -> dict[str, Any]:
    """An OpenAI-style error body for HTTP `status` (its `type` as OpenAI gives it)."""
    if status == 429:
        kind = "rate_limit_error"
    else:
        kind = "invalid_request_error" if 400 <= status < 500 else "server_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def completion(
    reply: Reply, completion_id: str, created: int, usage: dict[str, Any] | None
) -> dict[str, Any]:
    """`reply` as a JSON chat completion (with `usage` when it reports one)."""
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


def _pieces(value: str, size: int) -> list[str]:
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


def _deltas(reply: Reply, completion_id: str) -> Iterator[tuple[dict[str, Any], str | None]]:
    """The (delta, finish_reason) sequence OpenAI streams for `reply`."""
    if not reply.calls:
        yield {"role": "assistant", "content": "", "refusal": None}, None
        for token in token_pieces(reply.content or ""):
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


def stream_events(
    reply: Reply, completion_id: str, created: int, usage: dict[str, Any] | None
) -> Iterator[str]:
    """`reply` as the data of the server-sent events of a stream, `[DONE]` last."""
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
