"""How the scripted server departs from OpenAI's API to imitate a real local server (`Quirks`),
and the presets for the servers replan was checked on: `LLAMA_CPP` (llama.cpp's
`llama-server`), `LLAMA_CPP_PYTHON`, `OLLAMA`, also by the names users know them by
(`PRESETS`)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from replan.testing.replies import Reply, http_error, text, token_pieces, tool_call

CallsAsText = Literal["fenced", "bare", "tagged"]
"""How a server writes tool calls as text (see `Quirks.calls_as_text`)."""


@dataclass(frozen=True)
class Quirks:
    """How the server departs from OpenAI's API, to imitate real local servers (llama.cpp's
    server, llama-cpp-python's, Ollama). The default departs in nothing.

    Each kind of departure is a field; `answer` applies them all to the reply chosen for a
    request (it may refuse the request instead, or reshape the reply).

    Like OpenAI, the server honours a request's constraints on the script's decisions: a reply
    that is one tool call becomes, for a request with a `response_format` (JSON schema or JSON
    object), assistant text holding the call's arguments as JSON, and, for a request forcing
    another tool by name whose parameters take those arguments, a call of that tool. So a
    script written for forced tool calls answers in every decision mode.
    """

    calls_as_text: CallsAsText | None = None
    """Write the tool calls of every reply as its text instead, in this shape, as llama.cpp's
    server does for models whose calls it does not parse: "fenced" (a ```json fence per
    call), "bare" (one JSON object per line) or "tagged" (`<tool_call>` tags, Qwen's way)."""

    run_on: bool = False
    """A small model that does not stop: after the scripted reply it writes whitespace until
    the request's `max_tokens` (or `max_completion_tokens`), which ends it with finish_reason
    "length"; without a limit it runs on to the end of its context (`RUN_ON_CONTEXT_TOKENS`)."""

    refused_modes: tuple[str, ...] = ()
    """Decision modes (`Context.decision_mode`) whose requests get HTTP 500 with an empty
    message: what a mode asks of the server is its strategy's (`ModeStrategy.sent`), so the
    scripted server refuses exactly what replan sends in that mode (llama-cpp-python refuses
    `tool_required`'s `tool_choice: "required"` and `json_schema`'s `response_format`)."""
    refuse_null_content: bool = False
    """HTTP 500 for a request holding an assistant message whose `content` is null, as OpenAI
    clients send one with tool calls (llama-cpp-python's request validation)."""
    ignore_named_choice: bool = False
    """A `tool_choice` naming a function is not enforced: the script's reply stands as the
    model's own choice (llama.cpp's llama-server)."""
    ignore_tool_choice: bool = False
    """No `tool_choice` is enforced, named or "required" (Ollama)."""
    prose_when_forced: bool = False
    """A small model the server does not hold to a forced tool: to a request whose
    `tool_choice` forces a call ("required" or a named tool), it answers in prose (`PROSE`)
    instead of the scripted reply, as the real small model did on llama.cpp's server. Requests
    with a `response_format` (which llama.cpp and Ollama do enforce) get the scripted reply."""

    usage: bool = True
    """False: the server reports no usage, neither in JSON replies nor in streams."""

    numbers_steps: bool = False
    """A small model that writes each step of a plan with its number in front ("3. Check the
    environment"), as the prompts show plans: from 1, or from the number a replanner's prompt
    says new steps are numbered from."""
    calls_offered_tool: str | None = None
    """A small model that calls a tool whenever it is offered one: to a request offering the tool
    of this name, whose conversation holds no tool result yet, it answers with a call of that
    tool (no arguments) instead of the scripted text (seen: `TaskList`, in steps that had
    nothing to do with a task list)."""

    def answer(self, body: dict[str, Any], reply: Reply) -> Reply:
        """The reply this server really sends for request `body` when the script says `reply`."""
        if self.refused_modes and _asks_in(body, self.refused_modes):
            return http_error(500)
        if self.refuse_null_content and any(
            m.get("role") == "assistant" and m.get("content") is None
            for m in body.get("messages", [])
        ):
            return http_error(500)
        if self.prose_when_forced and body.get("tool_choice") not in (None, "auto", "none"):
            reply = text(PROSE)
        if self.numbers_steps:
            reply = _steps_numbered(body, reply)
        if self.calls_offered_tool is not None:
            reply = _offered_tool_called(body, reply, self.calls_offered_tool)
        if not (self.ignore_named_choice or self.ignore_tool_choice):
            reply = _named_choice_enforced(body, reply)
        reply = _response_format_honoured(body, reply)
        if self.calls_as_text is not None:
            reply = _calls_as_text(reply, self.calls_as_text)
        if self.run_on:
            reply = _run_on(body, reply)
        return self._usage_reported(reply)

    def _usage_reported(self, reply: Reply) -> Reply:
        return reply if self.usage else replace(reply, usage=False)


def _asks_in(body: dict[str, Any], modes: Sequence[str]) -> bool:
    """Whether `body` asks what one of the decision `modes` asks of a server."""
    from replan.graphs.model.decision_modes.registry import STRATEGIES  # only when refusing

    return any(STRATEGIES[mode].sent(body) for mode in modes if mode in STRATEGIES)


def _format_type(body: dict[str, Any]) -> str | None:
    response_format = body.get("response_format")
    return response_format.get("type") if isinstance(response_format, dict) else None


def _one_call_args(reply: Reply) -> dict[str, Any] | None:
    """The arguments of `reply` when it is exactly one tool call with a JSON object of them."""
    if len(reply.calls) != 1:
        return None
    try:
        args = json.loads(reply.calls[0].arguments)
    except ValueError:
        return None
    return args if isinstance(args, dict) else None


def _named_choice_enforced(body: dict[str, Any], reply: Reply) -> Reply:
    """A call of the tool the request forces by name, when the script called another tool
    with arguments that tool takes."""
    choice = body.get("tool_choice")
    name = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    args = _one_call_args(reply)
    if name is None or args is None or reply.calls[0].name == name:
        return reply
    for tool in body.get("tools") or []:
        function = tool.get("function", {})
        if (
            function.get("name") == name
            and args.keys() <= function.get("parameters", {}).get("properties", {}).keys()
        ):
            return tool_call(name, args)
    return reply


def _response_format_honoured(body: dict[str, Any], reply: Reply) -> Reply:
    """For a request asking for a JSON reply, a scripted tool call's arguments as the text."""
    args = _one_call_args(reply)
    if _format_type(body) in ("json_schema", "json_object") and args is not None:
        return text(json.dumps(args))
    return reply


_NEW_STEPS_FROM = re.compile(r"numbered from (\d+)")
"""Where a replanner's prompt says from which number the steps of a new plan count."""


def _steps_numbered(body: dict[str, Any], reply: Reply) -> Reply:
    """A `plan` call whose text steps carry their numbers in front (`Quirks.numbers_steps`)."""
    args = _one_call_args(reply)
    if args is None or reply.calls[0].name != "plan" or not isinstance(args.get("steps"), list):
        return reply
    said = _NEW_STEPS_FROM.search(json.dumps(body.get("messages", [])))
    first = int(said[1]) if said else 1
    steps = [
        f"{number}. {step}"
        if isinstance(step, str)
        else {**step, "step": f"{number}. {step['step']}"}
        if isinstance(step, dict) and isinstance(step.get("step"), str)
        else step
        for number, step in enumerate(args["steps"], first)
    ]
    return tool_call("plan", {**args, "steps": steps})


def _offered_tool_called(body: dict[str, Any], reply: Reply, tool: str) -> Reply:
    """A call of `tool` instead of a text reply, when the request offers it and its conversation
    holds no tool result yet (`Quirks.calls_offered_tool`)."""
    offered = {spec.get("function", {}).get("name") for spec in body.get("tools") or []}
    used = any(m.get("role") == "tool" for m in body.get("messages", []))
    if reply.calls or reply.status != 200 or tool not in offered or used:
        return reply
    return tool_call(tool, {})


PROSE = "Sure! Here is what I would do next, step by step, in plain words."
"""What a model answers in prose (`Quirks.prose_when_forced`)."""

LLAMA_CPP_PYTHON = Quirks(refused_modes=("tool_required", "json_schema"), refuse_null_content=True)
"""llama-cpp-python's server (chat format `chatml-function-calling`)."""
LLAMA_CPP = Quirks(ignore_named_choice=True, calls_as_text="fenced")
"""llama.cpp's `llama-server --jinja` with a small model that writes its calls as text."""
OLLAMA = Quirks(ignore_tool_choice=True)
"""Ollama's OpenAI-compatible API."""
PRESETS: dict[str, Quirks] = {
    "llama-server": LLAMA_CPP,
    "llama-cpp-python": LLAMA_CPP_PYTHON,
    "ollama": OLLAMA,
}
"""The presets by the names of the servers they imitate (`python -m replan.testing --preset`)."""


def _calls_as_text(reply: Reply, shape: CallsAsText) -> Reply:
    """`reply` with its tool calls written as `{"name", "arguments"}` objects in its text."""
    if not reply.calls:
        return reply
    objects = []
    for call in reply.calls:
        try:
            arguments: Any = json.loads(call.arguments)
        except ValueError:
            arguments = call.arguments  # malformed on purpose: sent as the raw text
        objects.append(json.dumps({"name": call.name, "arguments": arguments}))
    if shape == "fenced":
        parts = [f"```json\n{obj}\n```" for obj in objects]
    elif shape == "tagged":
        parts = [f"<tool_call>\n{obj}\n</tool_call>" for obj in objects]
    else:
        parts = ["\n".join(objects)]
    written = "\n\n".join([*([reply.content] if reply.content else []), *parts])
    return replace(reply, content=written, calls=(), call_ids=())


RUN_ON_CONTEXT_TOKENS = 16384
"""Where a reply that runs on without a token limit ends: the context size of a local server."""


def _run_on(body: dict[str, Any], reply: Reply) -> Reply:
    """`reply` run on with one newline per token up to the request's token limit."""
    if reply.status != 200 or reply.body is not None:
        return reply
    limit = body.get("max_tokens") or body.get("max_completion_tokens") or RUN_ON_CONTEXT_TOKENS
    calls = sum(len(call.arguments) // 4 for call in reply.calls)
    written = len(token_pieces(reply.content or "")) + calls
    padding = "\n" * max(limit - written, 0)
    return replace(reply, content=(reply.content or "") + padding, finish_reason="length")
