"""Asking for one decision (`decide`): the request in the run's mode, a fallback when the
server refuses it, and corrections of replies without a usable decision.

Every mode reads a reply the same way in the end: a reply that carries no usable decision is a
`ModelMistake`, which `decide` corrects and asks again. A server may also accept a mode and not
enforce it: llama.cpp's server ignores a named `tool_choice`, Ollama every `tool_choice`, and a
small model then answers in prose, often run on to the token limit. So when
`MISTAKES_BEFORE_FALLBACK` replies in a row within one decision carry no decision in the form
asked for (no tool call, no JSON object), or one such reply ran on to the token limit outside
the form (`ran_on_outside_the_form`: it cost the whole reply budget, a minute or more on a small
local model), the run goes on in the mode's `after_mistakes` mode for the rest of the run. The
new mode starts the decision afresh, with its own `retries`. When every mode is refused, the
server's first error goes up as `ModelUnavailableError`, as any other HTTP error.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel

from replan.graphs.calls import Steps
from replan.graphs.context import Context
from replan.graphs.errors import ModelUnavailableError, PlanExecuteError
from replan.graphs.model.decision_modes.fallbacks import DecisionModes, refusal_status
from replan.graphs.model.decision_modes.registry import strategy
from replan.graphs.model.decision_modes.strategy import DecisionTool, ModelMistake, Request
from replan.graphs.model.text_calls import recovered_calls
from replan.graphs.model.turn import ask_model, cut_off
from replan.graphs.prompts import Prompts

MISTAKES_BEFORE_FALLBACK = 2
"""Replies in a row, within one decision, without a decision in the form asked for, after which
a run asks in its mode's `after_mistakes` mode (one such reply cut off at the token limit is
enough)."""
_JSON_STARTS = ("{", "[", "```", "<tool_call>")
"""How a reply's text starts when it holds JSON or a call written as text, not prose."""


def ran_on_outside_the_form(reply: AIMessage, request: Request) -> bool:
    """Whether `reply` ran on to its token limit outside the form asked for: with no tool call
    when one was forced (prose, or a call written as text: the server did not enforce it), or
    in prose when JSON was asked for. A JSON reply cut off in a JSON mode is the model looping
    inside a form the server did enforce."""
    if not cut_off(reply) or reply.tool_calls or reply.invalid_tool_calls:
        return False
    return not request.json or not reply.text.lstrip().startswith(_JSON_STARTS)


def _ask(
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    tools: Sequence[DecisionTool],
    prompts: Prompts,
    modes: DecisionModes,
    context: Context,
) -> Steps[tuple[Request, AIMessage]]:
    """One model turn asking for a decision, in the run's mode or, if the server refuses
    that, the first later mode it accepts."""
    refusals: list[tuple[Request, int]] = []
    first_error: ModelUnavailableError | None = None
    for mode in modes.candidates():
        request = strategy(mode).request(model, messages, tools, prompts)
        if any(request.asked == refused.asked for refused, _ in refusals):
            continue  # this mode asks the same of the server (one decision: a named choice)
        try:
            reply = yield from ask_model(request.model, request.messages, context, request.offered)
        except ModelUnavailableError as exc:
            status = refusal_status(exc)
            if status is None:
                raise
            first_error = first_error or exc
            refusals.append((request, status))
            continue
        if refusals:
            modes.fell_back(refusals, mode)
        return request, reply
    assert first_error is not None
    raise first_error


@dataclass(frozen=True)
class Decision:
    """A decision's validated arguments (their type, `PlanArgs` or `RespondArgs`, says which
    tool), how many tool calls written as text were recovered while asking for it, and how
    many replies before it were mistakes that were corrected."""

    args: BaseModel
    recovered_calls: int = 0
    mistakes: int = 0

    def update(self) -> dict[str, int]:
        """The state update adding these counts to the run's (the ones that are not 0)."""
        counts = {"recovered_calls": self.recovered_calls, "corrected_mistakes": self.mistakes}
        return {key: count for key, count in counts.items() if count}


def _reply_preview(reply: AIMessage) -> str:
    """What a reply held, its whitespace folded: its tool calls, else its text."""
    calls = ", ".join(
        f"{call['name']}({json.dumps(call['args'], ensure_ascii=False)})"
        for call in reply.tool_calls
    )
    return calls or " ".join(reply.text.split()) or "(an empty reply)"


def decide(
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    tools: Sequence[DecisionTool],
    *,
    node: str,
    prompts: Prompts,
    retries: int,
    context: Context,
    modes: DecisionModes | None = None,
) -> Steps[Decision]:
    """Ask `model` for exactly one of `tools`; correct and retry up to `retries` times (in each
    mode: after `MISTAKES_BEFORE_FALLBACK` replies in a row without a decision in the form
    asked for, the run falls back to another mode, see the module docstring).

    `modes` says how to ask (default: `tool_required`) and records a fallback. A reply cut off
    at the run's `decision_max_tokens` limit is a mistake (the model is told so), unless its
    decision was written as text that still parses whole: a small model may run on after a
    JSON object. A tool call cut off is never taken: the client reads streamed arguments
    leniently, so a truncated call could pass for a whole one.
    """
    modes = modes or DecisionModes()
    yield from modes.talking_to(model)
    conversation = list(messages)
    recovered = mistakes = attempts = in_a_row = 0
    while True:
        request, reply = yield from _ask(model, conversation, tools, prompts, modes, context)
        recovered += recovered_calls(reply)
        try:
            decision = Decision(request.read(reply), recovered, mistakes)
        except ModelMistake as exc:
            mistake = exc
            if cut_off(reply):
                problem = prompts.reply_cut_off.format(max_tokens=context.decision_max_tokens)
                mistake = ModelMistake(problem, _reply_preview(reply), form=True)
        else:
            if recovered_calls(reply) and not request.json:
                modes.give_up(request, "unenforced")  # the next decisions ask for JSON
            return decision
        mistakes += 1
        attempts += 1
        if not mistake.form:
            in_a_row = 0
        elif ran_on_outside_the_form(reply, request):
            in_a_row = MISTAKES_BEFORE_FALLBACK
        else:
            in_a_row += 1
        unenforced = bool(recovered_calls(reply)) and not request.json
        if (unenforced and modes.give_up(request, "unenforced")) or (
            in_a_row >= MISTAKES_BEFORE_FALLBACK and modes.give_up(request)
        ):  # afresh in the new mode (after a text call: JSON a server enforces)
            conversation, attempts, in_a_row = list(messages), 0, 0
            continue
        if attempts > retries:
            raise PlanExecuteError(
                node, f"{mistake.problem}, still after {attempts} attempts", mistake.sent
            )
        conversation.append(HumanMessage(request.correction(mistake)))
