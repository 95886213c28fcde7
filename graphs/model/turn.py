"""One model turn (`ask_model`): the request, its retries and clear errors, calls written as
text read back, and distinct tool call ids. The model itself is built in `model.client`.

Only model calls go through `model_errors`: a failure of the user's own tools inside the
executor is never mistaken for an unavailable model.

Some OpenAI-compatible servers answer HTTP 200 with something that is not a chat completion (no
`choices`, an empty list, a choice without `message`, broken JSON, a text/plain page). The HTTP
clients of the `ChatOpenAI` built here look at every such reply before the OpenAI client parses
it and raise `UnusableReplyError` naming what came back; `ask_model` retries it as often as the
client retries a failing server, then `model_errors` reports it as `ModelUnavailableError`.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from langchain_core.runnables.retry import ExponentialJitterParams

from replan.graphs.calls import Call, Steps
from replan.graphs.context import Context
from replan.graphs.model.failures import UnusableReplyError, model_errors
from replan.graphs.model.text_calls import OfferedTools, recover_text_calls
from replan.graphs.plan_stream import publish

RETRY_BACKOFF = ExponentialJitterParams(max=8.0, jitter=0.5)
"""Waits between retries of an unusable reply: about 1 s, doubling each time, at most 8 s."""


def cut_off(reply: AIMessage) -> bool:
    """Whether the server stopped `reply` at its token limit (`finish_reason: "length"`)."""
    return reply.response_metadata.get("finish_reason") == "length"


def ask_model(
    model: Runnable[LanguageModelInput, BaseMessage],
    messages: Sequence[BaseMessage],
    context: Context,
    offered: OfferedTools | None = None,
) -> Steps[AIMessage]:
    """One model turn over `messages` (its tokens stream in `stream_mode="messages"`); the
    usage its reply reports is counted for the node (`replan.graphs.nodes.driver`).

    A reply that is not a usable chat completion is asked for again, as often as the run's
    `context.max_retries` lets the client retry a failing server. With the `offered` tools
    named and `Context.recover_text_calls` on, tool calls the model wrote as text become the
    reply's `tool_calls` (`replan.graphs.model.text_calls`), announced as a custom stream event.
    """
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
    """`reply` with the calls written in its text recovered, if any; each recovery is
    published on the plan stream (`text_calls`: how many, which tools)."""
    recovered = recover_text_calls(reply, offered)
    if recovered is None:
        return reply
    tools = [call["name"] for call in recovered.tool_calls]
    publish("text_calls", count=len(tools), tools=tools)
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
