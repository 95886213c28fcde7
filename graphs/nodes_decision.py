"""Forced decisions: make the model answer by calling one of a few schema tools, or fail clearly.

The planner and the replanner do not run tools; they read the model's choice of `plan` (with
`steps`) or `respond` (with `response`). A reply without a tool call, with a tool that was not
offered, with several calls, or with arguments that do not parse is a mistake: the model is told
what went wrong and asked again, up to a bound, then `PlanExecuteError` stops the run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel, ValidationError

from graphs.errors import PlanExecuteError
from graphs.model import Steps, ask_model
from graphs.prompts import Prompts
from state.plan_execute import PlanArgs, RespondArgs
from tools.arguments import validation_problems

SENT_PREVIEW_CHARS = 300


@dataclass(frozen=True)
class DecisionTool:
    """A tool the model calls to give a structured answer; `args` validates its arguments."""

    name: str
    description: str
    args: type[BaseModel]
    field_descriptions: dict[str, str]

    def spec(self) -> dict[str, Any]:
        """The OpenAI function schema of this tool."""
        parameters = self.args.model_json_schema()
        parameters.pop("title", None)
        parameters.pop("description", None)
        for name, description in self.field_descriptions.items():
            parameters["properties"][name]["description"] = description
        function = {"name": self.name, "description": self.description, "parameters": parameters}
        return {"type": "function", "function": function}


def plan_tool(prompts: Prompts) -> DecisionTool:
    """The `plan` tool: `steps`, a list of strings."""
    return DecisionTool("plan", prompts.plan_tool, PlanArgs, {"steps": prompts.plan_steps})


def respond_tool(prompts: Prompts) -> DecisionTool:
    """The `respond` tool: `response`, the final answer."""
    return DecisionTool(
        "respond", prompts.respond_tool, RespondArgs, {"response": prompts.respond_response}
    )


class ModelMistake(Exception):
    """A reply that does not carry a usable decision."""

    def __init__(self, problem: str, sent: str) -> None:
        self.problem = problem
        self.sent = sent if len(sent) <= SENT_PREVIEW_CHARS else sent[:SENT_PREVIEW_CHARS] + "…"
        super().__init__(f"{problem}: {self.sent}")


def read_decision(reply: AIMessage, tools: Sequence[DecisionTool]) -> BaseModel:
    """The validated arguments of the one tool the reply chose; raise ModelMistake otherwise."""
    offered = {tool.name: tool for tool in tools}
    if reply.invalid_tool_calls:
        bad = reply.invalid_tool_calls[0]
        raise ModelMistake(
            f"the arguments of `{bad.get('name')}` are not valid JSON", str(bad.get("args"))
        )
    if not reply.tool_calls:
        text = reply.text
        raise ModelMistake("no tool call", repr(text) if text else "(an empty reply)")
    if len(reply.tool_calls) > 1:
        names = ", ".join(call["name"] for call in reply.tool_calls)
        raise ModelMistake("more than one tool call; exactly one is needed", names)
    call = reply.tool_calls[0]
    tool = offered.get(call["name"])
    sent = f"{call['name']}({json.dumps(call['args'], ensure_ascii=False)})"
    if tool is None:
        raise ModelMistake(f"unexpected tool call `{call['name']}`", sent)
    try:
        return tool.args.model_validate(call["args"])
    except ValidationError as exc:
        problems = validation_problems(exc)
        raise ModelMistake(
            f"the arguments of `{tool.name}` do not parse ({problems})", sent
        ) from exc


def decide(
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    tools: Sequence[DecisionTool],
    *,
    node: str,
    prompts: Prompts,
    retries: int,
) -> Steps[BaseModel]:
    """Ask `model` to call exactly one of `tools`; correct and retry up to `retries` times.

    Returns the validated arguments; their type (`PlanArgs`, `RespondArgs`) says which tool.
    """
    tool_choice = tools[0].name if len(tools) == 1 else "any"
    bound = model.bind_tools([tool.spec() for tool in tools], tool_choice=tool_choice)
    expected = " or ".join(f"`{tool.name}`" for tool in tools)
    conversation = list(messages)
    for _ in range(retries + 1):
        reply = yield from ask_model(bound, conversation)
        try:
            return read_decision(reply, tools)
        except ModelMistake as exc:
            mistake = exc
            correction = prompts.correction.format(
                problem=exc.problem, sent=exc.sent, expected=expected
            )
            conversation.append(HumanMessage(correction))
    raise PlanExecuteError(
        node, f"{mistake.problem}, still after {retries + 1} attempts", mistake.sent
    )
