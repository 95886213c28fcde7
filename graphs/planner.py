"""The planner and replanner nodes, and the forced decisions they ask the model for.

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
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field, ValidationError, field_validator

from replan.graphs.chat_model import ask_model, resolve_model
from replan.graphs.context import Bounds, Context
from replan.graphs.errors import PlanExecuteError
from replan.graphs.prompts import Prompts
from replan.graphs.state import PlanExecuteState, briefing, format_plan, require_objective
from replan.graphs.steps import Steps
from replan.tools.arguments import validation_problems

SENT_PREVIEW_CHARS = 300


class PlanArgs(BaseModel):
    """Arguments of the `plan` decision: a non-empty list of non-blank steps."""

    steps: list[str] = Field(min_length=1)

    @field_validator("steps")
    @classmethod
    def _no_blank_steps(cls, steps: list[str]) -> list[str]:
        cleaned = [step.strip() for step in steps]
        if not all(cleaned):
            raise ValueError("a step must not be blank")
        return cleaned


class RespondArgs(BaseModel):
    """Arguments of the `respond` decision: the final answer."""

    response: str = Field(min_length=1)


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


class Planner:
    """The `planner` and `replanner` nodes, sharing the model, the tool list and the prompts."""

    def __init__(
        self,
        model: BaseChatModel | None,
        tools: Sequence[BaseTool],
        prompts: Prompts,
        bounds: Bounds,
    ) -> None:
        self.model = model
        self.tools = list(tools)
        self.prompts = prompts
        self.bounds = bounds

    def planner(self, state: PlanExecuteState, runtime: Runtime[Context]) -> Steps[dict[str, Any]]:
        """Ask the model for a plan (forced `plan` tool call) and start a fresh round count."""
        require_objective(state)
        tool_list = "\n".join(f"- {tool.name}: {tool.description}" for tool in self.tools)
        system = SystemMessage(self.prompts.planner.format(tools=tool_list or "(none)"))
        args = yield from decide(
            resolve_model(self.model, runtime.context),
            [system, *state["messages"]],
            [plan_tool(self.prompts)],
            node="planner",
            prompts=self.prompts,
            retries=self.bounds.for_run(runtime.context).mistake_retries,
        )
        assert isinstance(args, PlanArgs)
        return {"plan": args.steps, "response": "", "stop_reason": "", "iterations": 0}

    def replanner(
        self, state: PlanExecuteState, runtime: Runtime[Context]
    ) -> Steps[dict[str, Any]]:
        """Respond, or plan the remaining steps; past `max_iterations`, end with a plain report."""
        bounds = self.bounds.for_run(runtime.context)
        brief = briefing(state)
        args = yield from decide(
            resolve_model(self.model, runtime.context),
            [
                SystemMessage(self.prompts.replanner),
                HumanMessage(self.prompts.replanner_task.format(**brief)),
            ],
            [plan_tool(self.prompts), respond_tool(self.prompts)],
            node="replanner",
            prompts=self.prompts,
            retries=bounds.mistake_retries,
        )
        if isinstance(args, RespondArgs):
            return {"response": args.response}
        assert isinstance(args, PlanArgs)
        if state.get("iterations", 0) < bounds.max_iterations:
            return {"plan": args.steps}
        report = self.prompts.not_finished.format(
            max_iterations=bounds.max_iterations,
            executed_steps=brief["executed_steps"],
            plan=format_plan(args.steps),
        )
        return {"plan": args.steps, "response": report, "stop_reason": "max_iterations"}
