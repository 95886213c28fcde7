"""How the planner and replanner ask the model server for a decision, whatever it supports.

A decision is one of the `DecisionTool`s offered (`plan` with `steps`, `respond` with
`response`), read as that tool's validated arguments. `Context.decision_mode` says how it is
asked for:

- `tool_required`: the tools, with `tool_choice` forcing a call: the tool's name when only one
  is offered, else "required" (OpenAI, vLLM, llama.cpp's llama-server).
- `tool_named`: one tool forced by name. With several decisions they come as one tool,
  `decide`, whose arguments hold the fields of exactly one of them (llama-cpp-python, which
  refuses "required").
- `json_schema`: no tools; `response_format` with the JSON schema of the decision's fields
  (llama-server, Ollama, which ignores `tool_choice`).
- `json_object`: llama-cpp-python's form of it, `{"type": "json_object", "schema": ...}`.

Every mode reads a reply the same way in the end: a reply that carries no usable decision is a
`ModelMistake`, which `decide` corrects and asks again. A request the server refuses (HTTP
400, 422, 500, 501) is asked again in the next modes of `DECISION_MODES`; once one is
accepted, the refused modes are never asked for again in this run (`DecisionModes`: the run's
`decision_mode` state channel remembers it, and a stream event says it). When every mode is
refused the server's first error goes up as `ModelUnavailableError`, as any other HTTP error.

A server may also accept a mode and not enforce it: llama.cpp's server ignores a named
`tool_choice`, Ollama every `tool_choice`, and a small model then answers in prose, often run
on to the token limit. So when `MISTAKES_BEFORE_FALLBACK` replies in a row within one decision
carry no decision in the form asked for (no tool call, no JSON object), or one such reply ran on
to the token limit outside the form (`ran_on_outside_the_form`; it cost the whole reply
budget, a minute or more on a small local model), the run falls back for the rest of the run,
in the same way and with the same record (its `reason` is "mistakes", its `status` None):
from a tool mode to `json_schema` (a server that lets a forced call come back as prose
enforces no `tool_choice`, named or not), from `json_schema` to `json_object`. The new mode
starts the decision afresh, with its own `retries`.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import openai
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable
from langchain_openai import ChatOpenAI
from langgraph.config import get_stream_writer
from pydantic import BaseModel, ValidationError

from replan.graphs.context import DECISION_MODES, JSON_MODES, Context, DecisionMode
from replan.graphs.errors import ModelUnavailableError, PlanExecuteError
from replan.graphs.graph_state import (
    DecisionFallback,
    DecisionModeRecord,
    FallbackReason,
    PlanExecuteState,
    effective_mode,
    fallbacks_of,
)
from replan.graphs.model.text_calls import OfferedTools, recovered_calls
from replan.graphs.model.turn import ask_model, cut_off
from replan.graphs.nodes.driver import Steps
from replan.graphs.prompts import Prompts
from replan.tools.arguments import validation_problems

SENT_PREVIEW_CHARS = 300
DECIDE_TOOL_NAME = "decide"
"""The one tool of `tool_named` mode when several decisions are offered."""
REFUSAL_STATUSES = frozenset({400, 422, 500, 501})
"""HTTP statuses with which servers refuse a `tool_choice` or `response_format` they do not
support (llama-cpp-python: 500 with an empty message)."""
MISTAKES_BEFORE_FALLBACK = 2
"""Replies in a row, within one decision, without a decision in the form asked for, after which
a run asks in the next mode of `MISTAKE_FALLBACKS` (one such reply cut off at the token limit is
enough)."""
MISTAKE_FALLBACKS: dict[DecisionMode, DecisionMode] = {
    "tool_required": "json_schema",
    "tool_named": "json_schema",
    "json_schema": "json_object",
}
"""Where a run goes when its model keeps answering a mode's requests without a decision."""
STREAM_KEY = "decision_mode"
"""Key of the custom stream event (`stream_mode="custom"`) sent when a run falls back."""
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)
_JSON_STARTS = ("{", "[", "```", "<tool_call>")
"""How a reply's text starts when it holds JSON or a call written as text, not prose."""


@dataclass(frozen=True)
class DecisionTool:
    """A tool the model calls to give a structured answer; `args` validates its arguments
    (with `context` as pydantic's validation context). `schema`, when given, is the JSON
    schema sent instead of the one `args` gives (e.g. shaped by the run's tools).
    `beside_another`, when given, settles a reply that gives this decision's fields beside
    another's (which a merged schema allows): called with this decision's validated
    arguments, True takes this one, False the other."""

    name: str
    description: str
    args: type[BaseModel]
    field_descriptions: dict[str, str]
    schema: Mapping[str, Any] | None = field(default=None, compare=False)
    context: Any = field(default=None, compare=False)
    beside_another: Callable[[BaseModel], bool] | None = field(default=None, compare=False)

    def spec(self) -> dict[str, Any]:
        """The OpenAI function schema of this tool (self-contained: no `$ref`s, which some
        local servers cannot follow). Built once: every planner and replanner call sends it."""
        return self._spec

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments."""
        parameters: dict[str, Any] = self._spec["function"]["parameters"]
        return parameters

    @functools.cached_property
    def _spec(self) -> dict[str, Any]:
        source = self.schema if self.schema is not None else self.args.model_json_schema()
        parameters = inline_refs(copy.deepcopy(dict(source)))
        parameters.pop("title", None)
        parameters.pop("description", None)
        for name, description in self.field_descriptions.items():
            parameters["properties"][name]["description"] = description
        function = {"name": self.name, "description": self.description, "parameters": parameters}
        return {"type": "function", "function": function}


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with each `{"$ref": "#/$defs/X"}` replaced by the definition of X."""
    definitions = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return resolve(definitions[node["$ref"].rsplit("/", 1)[-1]])
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(value) for value in node]
        return node

    resolved: dict[str, Any] = resolve(schema)
    return resolved


def decision_schema(tools: Sequence[DecisionTool]) -> dict[str, Any]:
    """The JSON schema of a decision among `tools`: one tool's arguments, or for several an
    object with every tool's fields, none required (exactly one tool's must be given)."""
    if len(tools) == 1:
        return tools[0].parameters
    properties: dict[str, Any] = {}
    for tool in tools:
        properties.update(tool.parameters["properties"])
    return {"type": "object", "properties": properties}


class ModelMistake(Exception):
    """A reply that does not carry a usable decision; `form` when it carries none in the form
    asked for at all (no tool call, no JSON object, cut off), rather than a wrong one."""

    def __init__(self, problem: str, sent: str, *, form: bool = False) -> None:
        self.problem = problem
        self.form = form
        self.sent = sent if len(sent) <= SENT_PREVIEW_CHARS else sent[:SENT_PREVIEW_CHARS] + "…"
        super().__init__(f"{problem}: {self.sent}")


def _one_call(reply: AIMessage, offered: Sequence[str]) -> tuple[str, dict[str, Any], str]:
    """The name, arguments and shown text of the reply's only tool call, one of `offered`;
    ModelMistake otherwise."""
    if reply.invalid_tool_calls:
        bad = reply.invalid_tool_calls[0]
        raise ModelMistake(
            f"the arguments of `{bad.get('name')}` are not valid JSON", str(bad.get("args"))
        )
    if not reply.tool_calls:
        text = reply.text
        raise ModelMistake("no tool call", repr(text) if text else "(an empty reply)", form=True)
    if len(reply.tool_calls) > 1:
        names = ", ".join(call["name"] for call in reply.tool_calls)
        raise ModelMistake("more than one tool call; exactly one is needed", names)
    call = reply.tool_calls[0]
    sent = f"{call['name']}({json.dumps(call['args'], ensure_ascii=False)})"
    if call["name"] not in offered:
        raise ModelMistake(f"unexpected tool call `{call['name']}`", sent)
    return call["name"], call["args"], sent


def _validated(tool: DecisionTool, args: Any, what: str, sent: str) -> BaseModel:
    try:
        return tool.args.model_validate(args, context=tool.context)
    except ValidationError as exc:
        raise ModelMistake(f"{what} do not parse ({validation_problems(exc)})", sent) from exc


def read_decision(reply: AIMessage, tools: Sequence[DecisionTool]) -> BaseModel:
    """The validated arguments of the one tool the reply chose; raise ModelMistake otherwise."""
    offered = {tool.name: tool for tool in tools}
    name, args, sent = _one_call(reply, list(offered))
    return _validated(offered[name], args, f"the arguments of `{name}`", sent)


def _fields(tool: DecisionTool) -> list[str]:
    return list(tool.args.model_fields)


def read_fields(args: Any, tools: Sequence[DecisionTool], sent: str) -> BaseModel:
    """The decision an object of fields holds: the arguments of the one tool whose fields it
    gives (or the one `_settled` takes of two), validated; ModelMistake otherwise."""
    if not isinstance(args, dict):
        raise ModelMistake(f"a JSON {type(args).__name__} instead of an object", sent, form=True)
    chosen = _settled([t for t in tools if not args.keys().isdisjoint(_fields(t))], args, sent)
    if len(tools) > 1 and len(chosen) != 1:
        raise ModelMistake(f"exactly one of {_field_list(tools)} is needed", sent)
    tool = chosen[0] if chosen else tools[0]
    return _validated(tool, args, f"the fields of the `{tool.name}` decision", sent)


def _settled(chosen: list[DecisionTool], args: dict[str, Any], sent: str) -> list[DecisionTool]:
    """Of two decisions whose fields a reply gives at once, the one its `beside_another`
    takes (when exactly one of them has it and its fields validate); else `chosen` as it is."""
    judges = [(tool, tool.beside_another) for tool in chosen if tool.beside_another is not None]
    if len(chosen) != 2 or len(judges) != 1:
        return chosen
    [(judge, takes)] = judges
    try:
        validated = _validated(judge, args, "", sent)
    except ModelMistake:
        return chosen
    return [judge] if takes(validated) else [tool for tool in chosen if tool is not judge]


def _field_list(tools: Sequence[DecisionTool]) -> str:
    return " or ".join(f"`{name}`" for tool in tools for name in _fields(tool))


def read_json_decision(reply: AIMessage, tools: Sequence[DecisionTool]) -> BaseModel:
    """The decision the reply's text holds as a JSON object (a ```json fence is allowed)."""
    text = reply.text.strip()
    sent = repr(text) if text else "(an empty reply)"
    args = json_value(text)
    if args is None:
        raise ModelMistake("the reply is not a JSON object", sent, form=True)
    return read_fields(args, tools, sent)


def json_value(text: str) -> Any:
    """The JSON value `text` holds, alone or in a ```json fence; None when it holds none."""
    fenced = _FENCE.match(text.strip())
    try:
        return json.loads(fenced[1] if fenced else text)
    except ValueError:
        return None


RequestKind = Literal["tools", "decide", "json"]
"""The decision tools themselves, the one `decide` tool, or a JSON object as the reply."""


def ran_on_outside_the_form(reply: AIMessage, kind: RequestKind) -> bool:
    """Whether `reply` ran on to its token limit outside the form asked for: with no tool call
    when one was forced (prose, or a call written as text: the server did not enforce it), or
    in prose when JSON was asked for. A JSON reply cut off in a JSON mode is the model looping
    inside a form the server did enforce."""
    if not cut_off(reply) or reply.tool_calls or reply.invalid_tool_calls:
        return False
    return kind != "json" or not reply.text.lstrip().startswith(_JSON_STARTS)


@dataclass(frozen=True)
class Request:
    """A decision request in one mode: the model bound to ask it, the messages to send, what
    the request forces (`asked`, for messages), and how the reply is read and corrected."""

    model: Runnable[LanguageModelInput, BaseMessage]
    messages: list[BaseMessage]
    asked: str
    tools: Sequence[DecisionTool]
    kind: RequestKind = "tools"

    def offered(self) -> OfferedTools | None:
        """The tools a call written as text may name (none when a JSON object is the reply)."""
        if self.kind == "json":
            return None
        if self.kind == "decide":
            return OfferedTools.of([DECIDE_TOOL_NAME])
        required = self.tools[0].args if len(self.tools) == 1 else None
        return OfferedTools.of([tool.name for tool in self.tools], required)

    def read(self, reply: AIMessage) -> BaseModel:
        """The decision in `reply`; ModelMistake when it holds none. A tool call cut off at the
        token limit is never taken: the client reads streamed arguments leniently, so a
        truncated call could pass for a whole one (a decision written as text that still
        parses whole is taken)."""
        if cut_off(reply) and reply.tool_calls and not recovered_calls(reply):
            raise ModelMistake("cut off", "", form=True)
        if self.kind == "json":
            return read_json_decision(reply, self.tools)
        if self.kind == "decide":
            _, args, sent = _one_call(reply, [DECIDE_TOOL_NAME])
            return read_fields(args, self.tools, sent)
        return read_decision(reply, self.tools)

    def correction(self, mistake: ModelMistake, prompts: Prompts) -> str:
        """What the model is told after `mistake`."""
        template, expected = prompts.correction, f"`{DECIDE_TOOL_NAME}`"
        if self.kind == "json":
            template, expected = prompts.json_correction, _field_list(self.tools)
        elif self.kind == "tools":
            expected = " or ".join(f"`{tool.name}`" for tool in self.tools)
        return template.format(problem=mistake.problem, sent=mistake.sent, expected=expected)


def _with_note(messages: Sequence[BaseMessage], note: str) -> list[BaseMessage]:
    """`messages` with `note` at the end of the leading system message (some chat templates
    take only one, first)."""
    if messages and isinstance(messages[0], SystemMessage):
        return [SystemMessage(f"{messages[0].text}\n\n{note}"), *messages[1:]]
    return [SystemMessage(note), *messages]


def bind_json(
    model: BaseChatModel, mode: DecisionMode, schema: Mapping[str, Any], name: str = "decision"
) -> Runnable[LanguageModelInput, BaseMessage]:
    """`model` asked for one JSON object of `schema` the way `mode` (`json_schema`, or
    llama-cpp-python's `json_object` with a schema) asks for it."""
    response_format: dict[str, Any] = (
        {"type": "json_schema", "json_schema": {"name": name, "schema": dict(schema)}}
        if mode == "json_schema"
        else {"type": "json_object", "schema": dict(schema)}
    )
    if isinstance(model, ChatOpenAI):
        # Sent as is: langchain-openai would route a `response_format` through the OpenAI
        # client's structured-output parser, which raises on a reply cut off at a token limit
        # instead of handing it over to be corrected.
        extra_body = {**(model.extra_body or {}), "response_format": response_format}
        return model.bind(extra_body=extra_body)
    return model.bind(response_format=response_format)


def _json_request(
    mode: DecisionMode,
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    tools: Sequence[DecisionTool],
    prompts: Prompts,
) -> Request:
    bound = bind_json(model, mode, decision_schema(tools))
    fields = "\n".join(
        f'- "{name}": {tool.description} {tool.field_descriptions.get(name, "")}'.rstrip()
        for tool in tools
        for name in _fields(tool)
    )
    note = prompts.json_note.format(fields=fields)
    return Request(bound, _with_note(messages, note), f"response_format {mode}", tools, "json")


def decide_spec(tools: Sequence[DecisionTool], prompts: Prompts) -> dict[str, Any]:
    """The OpenAI function schema of the `decide` tool: the fields of every tool of `tools`,
    exactly one tool's to be given."""
    function = {
        "name": DECIDE_TOOL_NAME,
        "description": prompts.decide_tool,
        "parameters": decision_schema(tools),
    }
    return {"type": "function", "function": function}


def build_request(
    mode: DecisionMode,
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    tools: Sequence[DecisionTool],
    prompts: Prompts,
) -> Request:
    """How to ask `model` for a decision among `tools` in `mode`."""
    if mode in JSON_MODES:
        return _json_request(mode, model, messages, tools, prompts)
    if len(tools) == 1:
        name = tools[0].name
        bound = model.bind_tools([tools[0].spec()], tool_choice=name)
        return Request(bound, list(messages), f"a named tool_choice ('{name}')", tools)
    if mode == "tool_required":
        bound = model.bind_tools([tool.spec() for tool in tools], tool_choice="any")
        return Request(bound, list(messages), "tool_choice 'required'", tools)
    bound = model.bind_tools([decide_spec(tools, prompts)], tool_choice=DECIDE_TOOL_NAME)
    asked = f"a named tool_choice ('{DECIDE_TOOL_NAME}')"
    return Request(bound, _with_note(messages, prompts.decide_note), asked, tools, "decide")


def refusal_status(error: ModelUnavailableError) -> int | None:
    """The HTTP status of a server's refusal behind `error`, or None for any other failure."""
    cause = error.__cause__
    if isinstance(cause, openai.APIStatusError) and cause.status_code in REFUSAL_STATUSES:
        return cause.status_code
    return None


@dataclass
class DecisionModes:
    """How one run asks for decisions: the mode its context asks for, and the fallbacks its
    state records. `update()` is the state update a node returns to keep new fallbacks."""

    requested: DecisionMode = "tool_required"
    record: DecisionModeRecord | None = None
    changed: bool = False

    @classmethod
    def of_run(cls, context: Context, state: PlanExecuteState) -> DecisionModes:
        """The modes of the run whose context and state these are."""
        return cls(context.decision_mode, state.get("decision_mode"))

    @property
    def mode(self) -> DecisionMode:
        """The mode to ask in now."""
        return effective_mode(self.requested, self.record)

    def candidates(self) -> list[DecisionMode]:
        """The mode to ask in, then the modes to try if the server refuses it."""
        return list(DECISION_MODES[DECISION_MODES.index(self.mode) :])

    def fell_back(
        self, refusals: Sequence[tuple[Request, DecisionMode, int]], to: DecisionMode
    ) -> None:
        """Record that the server refused these requests and accepted mode `to`, and say so on
        the run's custom stream."""
        fallbacks = fallbacks_of(self.record)
        for request, refused, status in refusals:
            fallback: DecisionFallback = {
                "refused": refused,
                "asked": request.asked,
                "status": status,
                "fallback": to,
                "reason": "refused",
            }
            fallbacks.append(fallback)
            _announce(fallback)
        self.record = {"mode": to, "fallbacks": fallbacks}
        self.changed = True

    def give_up(self, request: Request, reason: FallbackReason = "mistakes") -> bool:
        """Leave the mode asked in now for the model's mistakes in it (`reason` "mistakes":
        its replies to `request` carried no decision; "unenforced": the server let a forced
        call come back as text), for its `MISTAKE_FALLBACKS` mode (skipping modes the server
        refused before); record and announce it. False when there is no mode to go to."""
        left = self.mode
        to = MISTAKE_FALLBACKS.get(left)
        if to is None:
            return False
        fallback: DecisionFallback = {
            "refused": left,
            "asked": request.asked,
            "status": None,
            "fallback": to,
            "reason": reason,
        }
        fallbacks = [*fallbacks_of(self.record), fallback]
        self.record = {"mode": left, "fallbacks": fallbacks}
        self.record["mode"] = self.mode  # `to`, or where a refusal of `to` led before
        self.changed = True
        _announce(fallback)
        return True

    def update(self) -> dict[str, Any]:
        """`{"decision_mode": record}` when this node fell back, else nothing."""
        return {"decision_mode": self.record} if self.changed and self.record else {}


def _announce(fallback: DecisionFallback) -> None:
    try:
        write = get_stream_writer()
    except RuntimeError:  # outside a graph run
        return
    write({STREAM_KEY: dict(fallback)})


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
    refusals: list[tuple[Request, DecisionMode, int]] = []
    first_error: ModelUnavailableError | None = None
    for mode in modes.candidates():
        request = build_request(mode, model, messages, tools, prompts)
        if any(request.asked == refused.asked for refused, _, _ in refusals):
            continue  # this mode asks the same of the server (one decision: a named choice)
        try:
            reply = yield from ask_model(
                request.model, request.messages, context, request.offered()
            )
        except ModelUnavailableError as exc:
            status = refusal_status(exc)
            if status is None:
                raise
            first_error = first_error or exc
            refusals.append((request, mode, status))
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
            if recovered_calls(reply) and request.kind != "json":
                modes.give_up(request, "unenforced")  # the next decisions ask for JSON
            return decision
        mistakes += 1
        attempts += 1
        if not mistake.form:
            in_a_row = 0
        elif ran_on_outside_the_form(reply, request.kind):
            in_a_row = MISTAKES_BEFORE_FALLBACK
        else:
            in_a_row += 1
        if in_a_row >= MISTAKES_BEFORE_FALLBACK and modes.give_up(request):
            conversation, attempts, in_a_row = list(messages), 0, 0  # afresh in the new mode
            continue
        if attempts > retries:
            raise PlanExecuteError(
                node, f"{mistake.problem}, still after {attempts} attempts", mistake.sent
            )
        conversation.append(HumanMessage(request.correction(mistake, prompts)))
