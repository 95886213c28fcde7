"""What every decision mode shares: the decision tools offered, a reply without a usable
decision (`ModelMistake`), a `Request` built in one mode and read by it, and the
`ModeStrategy` protocol each mode implements (one module per mode in this package)."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from pydantic import BaseModel, ValidationError

from replan.graphs.context import DecisionMode
from replan.graphs.model.text_calls import OfferedTools, recovered_calls
from replan.graphs.model.turn import cut_off
from replan.graphs.prompts import Prompts
from replan.tools.arguments import validation_problems

SENT_PREVIEW_CHARS = 300


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

    @property
    def fields(self) -> list[str]:
        """The names of the arguments."""
        return list(self.args.model_fields)

    @functools.cached_property
    def _spec(self) -> dict[str, Any]:
        source = self.schema if self.schema is not None else self.args.model_json_schema()
        parameters = without_titles(inline_refs(copy.deepcopy(dict(source))))
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


def without_titles(schema: Any) -> Any:
    """`schema` without pydantic's `title`s (words every request would carry for nothing)."""
    if isinstance(schema, dict):
        return {
            key: without_titles(value)
            for key, value in schema.items()
            if not (key == "title" and isinstance(value, str))
        }
    if isinstance(schema, list):
        return [without_titles(value) for value in schema]
    return schema


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


def one_call(reply: AIMessage, offered: Sequence[str]) -> tuple[str, dict[str, Any], str]:
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


def validated(tool: DecisionTool, args: Any, what: str, sent: str) -> BaseModel:
    """`args` validated as `tool`'s arguments; ModelMistake saying what does not parse."""
    try:
        return tool.args.model_validate(args, context=tool.context)
    except ValidationError as exc:
        raise ModelMistake(f"{what} do not parse ({validation_problems(exc)})", sent) from exc


def read_tool_call(reply: AIMessage, tools: Sequence[DecisionTool]) -> BaseModel:
    """The validated arguments of the one tool the reply called; ModelMistake otherwise."""
    offered = {tool.name: tool for tool in tools}
    name, args, sent = one_call(reply, list(offered))
    return validated(offered[name], args, f"the arguments of `{name}`", sent)


def read_fields(args: Any, tools: Sequence[DecisionTool], sent: str) -> BaseModel:
    """The decision an object of fields holds: the arguments of the one tool whose fields it
    gives (or the one `_settled` takes of two), validated; ModelMistake otherwise."""
    if not isinstance(args, dict):
        raise ModelMistake(f"a JSON {type(args).__name__} instead of an object", sent, form=True)
    chosen = _settled([t for t in tools if not args.keys().isdisjoint(t.fields)], args, sent)
    if len(tools) > 1 and len(chosen) != 1:
        raise ModelMistake(f"exactly one of {field_list(tools)} is needed", sent)
    tool = chosen[0] if chosen else tools[0]
    return validated(tool, args, f"the fields of the `{tool.name}` decision", sent)


def _settled(chosen: list[DecisionTool], args: dict[str, Any], sent: str) -> list[DecisionTool]:
    """Of two decisions whose fields a reply gives at once, the one its `beside_another`
    takes (when exactly one of them has it and its fields validate); else `chosen` as it is."""
    judges = [(tool, tool.beside_another) for tool in chosen if tool.beside_another is not None]
    if len(chosen) != 2 or len(judges) != 1:
        return chosen
    [(judge, takes)] = judges
    try:
        args_validated = validated(judge, args, "", sent)
    except ModelMistake:
        return chosen
    return [judge] if takes(args_validated) else [tool for tool in chosen if tool is not judge]


def field_list(tools: Sequence[DecisionTool]) -> str:
    """The decisions' fields as a reader is told to give them: "`a` or `b`"."""
    return " or ".join(f"`{name}`" for tool in tools for name in tool.fields)


@dataclass(frozen=True)
class Request:
    """A decision request in one mode: the model bound to ask it, the messages to send, what
    the request forces (`asked`, for messages), the tools a call written as text may name
    (`offered`; None when the reply is a JSON object, `json`), and how its reply is read
    (`reader`) and a mistake corrected (`corrector`)."""

    mode: DecisionMode
    model: Runnable[LanguageModelInput, BaseMessage]
    messages: list[BaseMessage]
    asked: str
    tools: Sequence[DecisionTool]
    offered: OfferedTools | None
    reader: Callable[[AIMessage], BaseModel]
    corrector: Callable[[ModelMistake], str]

    @property
    def json(self) -> bool:
        """Whether the reply asked for is a JSON object rather than a tool call."""
        return self.offered is None

    def read(self, reply: AIMessage) -> BaseModel:
        """The decision in `reply`; ModelMistake when it holds none. A tool call cut off at the
        token limit is never taken: the client reads streamed arguments leniently, so a
        truncated call could pass for a whole one (a decision written as text that still
        parses whole is taken)."""
        if cut_off(reply) and reply.tool_calls and not recovered_calls(reply):
            raise ModelMistake("cut off", "", form=True)
        return self.reader(reply)

    def correction(self, mistake: ModelMistake) -> str:
        """What the model is told after `mistake`."""
        return self.corrector(mistake)


def call_correction(prompts: Prompts, expected: str) -> Callable[[ModelMistake], str]:
    """The correction of a request forcing a tool call: call `expected` again."""
    return lambda mistake: prompts.correction.format(
        problem=mistake.problem, sent=mistake.sent, expected=expected
    )


def named_request(
    mode: DecisionMode, model: BaseChatModel, messages: Sequence[BaseMessage], tool: DecisionTool,
    prompts: Prompts,
) -> Request:  # fmt: skip
    """A request forcing a call of the one decision `tool` by name (both tool modes ask a
    single decision so)."""
    bound = model.bind_tools([tool.spec()], tool_choice=tool.name)
    return Request(
        mode,
        bound,
        list(messages),
        f"a named tool_choice ('{tool.name}')",
        [tool],
        OfferedTools.of([tool.name], tool.args),
        lambda reply: read_tool_call(reply, [tool]),
        call_correction(prompts, f"`{tool.name}`"),
    )


ProbeSpec = tuple[str, int]
"""A probe of `replan check` standing for one of a mode's requests: its name and how many
decisions the request offers (1: the planner's, 2: the replanner's)."""


class ModeStrategy(Protocol):
    """One way of asking a model server for a decision (`Context.decision_mode`). Its module
    in this package is named as the mode and holds it as `STRATEGY`."""

    name: DecisionMode
    after_mistakes: DecisionMode | None
    """The mode a run goes on in when its model keeps answering this mode's requests without
    a decision in the form asked for (a refusal goes to the next mode of `DECISION_MODES`)."""
    probes: tuple[ProbeSpec, ...]
    """The probes of `replan check` that stand for this mode's requests."""

    def request(
        self,
        model: BaseChatModel,
        messages: Sequence[BaseMessage],
        tools: Sequence[DecisionTool],
        prompts: Prompts,
    ) -> Request:
        """How to ask `model` for a decision among `tools`, and how the reply is read."""
        ...

    def response_format(self, schema: Mapping[str, Any], name: str) -> dict[str, Any] | None:
        """How this mode asks for a JSON object of `schema` as the reply (`name`: what it holds),
        or None for a mode that asks for tool calls."""
        ...

    def sent(self, body: Mapping[str, Any]) -> bool:
        """Whether a chat completion request `body` asks what this mode asks of a server and
        a plain request does not (a scripted server refusing this mode refuses those)."""
        ...
