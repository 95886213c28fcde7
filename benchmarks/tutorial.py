"""LangGraph's plan-and-execute tutorial design, written in a few lines: the baseline that the
benchmarks measure replan against.

Plans are plain strings carried out one at a time by a ReAct agent, with a replanner call
after every step; the planner and replanner answer through forced function calls (`Plan`,
`Act`), as the tutorial's structured output does.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Sequence
from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import create_react_agent
from langgraph.warnings import LangGraphDeprecationWarning
from pydantic import BaseModel
from typing_extensions import TypedDict


class TutorialState(TypedDict, total=False):
    input: str
    plan: list[str]
    past_steps: Annotated[list[tuple[str, str]], operator.add]
    response: str


class Plan(BaseModel):
    """Steps to follow, in order."""

    steps: list[str]


class Response(BaseModel):
    """The answer for the user."""

    response: str


class Act(BaseModel):
    """What to do next: answer, or follow a new plan."""

    action: Response | Plan


TUTORIAL_PLANNER = (
    "Break the objective into a short plan of single tasks that, done in order, produce the "
    "answer. Leave out anything unnecessary, give every step what it needs to be done, and "
    "make the last step give the final answer."
)
TUTORIAL_REPLANNER = (
    TUTORIAL_PLANNER + "\n\nThe objective:\n{input}\n\nThe plan so far:\n{plan}\n\n"
    "The steps done, with their results:\n{past_steps}\n\nUpdate the plan. If the user can be "
    "answered now, answer; otherwise list only the steps still to do, not those already done."
)


def tutorial_agent(model: BaseChatModel, tools: Sequence[BaseTool] = ()) -> Any:
    """The tutorial's executor: a ReAct agent with `tools` and a one-line prompt."""
    with warnings.catch_warnings():  # the tutorial's agent; moved to `langchain` in v1
        warnings.simplefilter("ignore", LangGraphDeprecationWarning)
        return create_react_agent(model, list(tools), prompt="You are a helpful assistant.")


def tutorial_ask(plan: list[str]) -> str:
    """What the tutorial's executor is told: the whole plan, then to carry out its first step."""
    listing = "\n".join(f"{i}. {step}" for i, step in enumerate(plan, 1))
    return f"The plan:\n{listing}\n\nCarry out step 1: {plan[0]}."


def tutorial_graph(
    model: BaseChatModel, checkpointer: Any = None, tools: Sequence[BaseTool] = ()
) -> Any:
    """The plan-and-execute tutorial's graph: planner, a ReAct agent with `tools` per step,
    replanner."""
    planner = ChatPromptTemplate.from_messages(
        [("system", TUTORIAL_PLANNER), ("placeholder", "{messages}")]
    ) | model.with_structured_output(Plan, method="function_calling")
    replanner = ChatPromptTemplate.from_template(TUTORIAL_REPLANNER) | model.with_structured_output(
        Act, method="function_calling"
    )
    agent = tutorial_agent(model, tools)

    async def plan_step(state: TutorialState) -> dict[str, Any]:
        plan = await planner.ainvoke({"messages": [("user", state["input"])]})
        if not isinstance(plan, Plan):
            raise ValueError("planner: the model's reply held no Plan call")
        return {"plan": plan.steps}

    async def execute_step(state: TutorialState) -> dict[str, Any]:
        done = await agent.ainvoke({"messages": [("user", tutorial_ask(state["plan"]))]})
        return {"past_steps": [(state["plan"][0], done["messages"][-1].content)]}

    async def replan_step(state: TutorialState) -> dict[str, Any]:
        decision = await replanner.ainvoke(dict(state))
        if not isinstance(decision, Act):
            raise ValueError("replanner: the model's reply held no Act call")
        if isinstance(decision.action, Response):
            return {"response": decision.action.response}
        return {"plan": decision.action.steps}

    builder = StateGraph(TutorialState)
    builder.add_node("planner", plan_step)
    builder.add_node("agent", execute_step)
    builder.add_node("replan", replan_step)
    builder.add_edge(START, "planner")
    builder.add_edge("planner", "agent")
    builder.add_edge("agent", "replan")
    builder.add_conditional_edges(
        "replan", lambda state: END if state.get("response") else "agent", ["agent", END]
    )
    return builder.compile(checkpointer=checkpointer)
