"""LangGraph's plan-and-execute tutorial design, built as its page builds it: the baseline that
the benchmarks measure replan against.

- The planner and the replanner answer through the chat model's plain `with_structured_output`
  (its default method: a JSON schema sent as `response_format` with langchain-openai 1.x), into
  `Plan` and `Act` models whose field descriptions say what the tutorial's say (reworded): the
  plan's steps in the order to follow them, and the replanner's choice between a `Response`
  to the user and a new `Plan` when tools are still needed.
- Plans are plain strings, carried out one at a time by a prebuilt ReAct agent with the run's
  tools (`langgraph.prebuilt.create_react_agent`, as the tutorial page uses it; the model may
  call several tools in one reply), then the replanner decides: planner → agent → replanner →
  agent | END.

Multi-turn form (`tutorial_turn`): the tutorial answers one objective. For a conversation the
same graph is invoked once per user turn on one thread; the conversation (every user turn and
every answer given) is kept in `messages`, which the planner receives where the tutorial's
planner prompt takes its messages. Each turn starts a new objective: the turn's request is the
replanner's `input`, and plan, past steps and response of the turn before are cleared.

Bounds are added the same way for every design a benchmark compares: reply-token limits
(`max_tokens` of the models given) and `executor_max_steps` (most model calls of the agent for
one step, as its recursion limit). Prompts are reworded from the tutorial's, same meaning.
"""

from __future__ import annotations

import operator
import os
import warnings
from collections.abc import Sequence
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.tools import BaseTool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import create_react_agent
from langgraph.types import Overwrite
from langgraph.warnings import LangGraphDeprecationWarning
from pydantic import BaseModel, Field, SecretStr
from typing_extensions import TypedDict


class TutorialState(TypedDict, total=False):
    input: str
    plan: list[str]
    past_steps: Annotated[list[tuple[str, str]], operator.add]
    response: str
    messages: Annotated[list[AnyMessage], add_messages]
    """The conversation in the multi-turn form (`tutorial_turn`); absent for one objective."""


class Plan(BaseModel):
    """The plan to follow from here on."""

    steps: list[str] = Field(
        description="the different steps to follow, listed in the order to take them"
    )


class Response(BaseModel):
    """The reply for the user."""

    response: str


class Act(BaseModel):
    """The action to take."""

    action: Response | Plan = Field(
        description="The action to take. To reply to the user, give a Response. When tools "
        "are still needed to reach the answer, give a Plan."
    )


DECISIONS = ("Plan", "Act")
"""The names of the tutorial's two structured outputs (the JSON schema's or tool's name)."""

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
TUTORIAL_AGENT_PROMPT = "You are an assistant who helps the user."


def tutorial_agent(
    model: BaseChatModel, tools: Sequence[BaseTool] = (), *, max_steps: int | None = None
) -> Any:
    """The tutorial's executor: a prebuilt ReAct agent with `tools` and a one-line prompt; at
    most `max_steps` model calls per step when given (its recursion limit: the prebuilt agent
    then ends the step saying it needs more steps, and the replanner goes on)."""
    with warnings.catch_warnings():  # the tutorial's agent; moved to `langchain` in v1
        warnings.simplefilter("ignore", LangGraphDeprecationWarning)
        agent = create_react_agent(model, list(tools), prompt=TUTORIAL_AGENT_PROMPT)
    return agent if max_steps is None else agent.with_config(recursion_limit=2 * max_steps)


def tutorial_ask(plan: list[str]) -> str:
    """What the tutorial's executor is told: the whole plan, then to carry out its first step."""
    listing = "\n".join(f"{i}. {step}" for i, step in enumerate(plan, 1))
    return f"The plan:\n{listing}\n\nCarry out step 1: {plan[0]}."


def tutorial_turn(request: str) -> dict[str, Any]:
    """The input of one user turn in the multi-turn form: the request as the new objective and
    as the next message of the conversation; the last turn's plan, steps and answer cleared."""
    return {
        "input": request,
        "messages": [HumanMessage(request)],
        "plan": [],
        "past_steps": Overwrite([]),
        "response": "",
    }


def tutorial_decision(request: dict[str, Any]) -> Literal["Plan", "Act"] | None:
    """Which of the tutorial's decisions a chat completion request (JSON body) asks for: by
    the name of its `response_format` JSON schema, or of the tool it forces; None for others."""
    response_format = request.get("response_format")
    name: Any = None
    if isinstance(response_format, dict):
        name = (response_format.get("json_schema") or {}).get("name")
    choice = request.get("tool_choice")
    if name is None and isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
    return name if name in DECISIONS else None


def forcing_decision(request: dict[str, Any]) -> dict[str, Any]:
    """`request` as if it forced the call of the tutorial decision it asks for, for scripted
    models written for forced `Plan` / `Act` calls (the scripted server still answers the
    request as it came, with the call's arguments as JSON text)."""
    decision = tutorial_decision(request)
    if decision is None:
        return request
    return {**request, "tool_choice": {"type": "function", "function": {"name": decision}}}


def baseline_chat_model(
    base_url: str | None,
    model: str,
    *,
    max_tokens: int,
    timeout: float | None,
    max_retries: int,
) -> ChatOpenAI:
    """A baseline's chat model, set up as replan sets up its own from a `Context`: temperature
    0, the same timeout and retries, replies bounded to `max_tokens` in the request field
    replan uses (`max_tokens` in the body for a server other than OpenAI's, which older local
    servers read), the key from OPENAI_API_KEY (any value for a local server)."""
    openai = not base_url or urlsplit(base_url).hostname == "api.openai.com"
    limit: dict[str, Any] = (
        {"max_tokens": max_tokens} if openai else {"extra_body": {"max_tokens": max_tokens}}
    )
    return ChatOpenAI(
        model=model,
        base_url=base_url,
        api_key=SecretStr(os.environ.get("OPENAI_API_KEY") or "local"),
        temperature=0,
        timeout=timeout,
        max_retries=max_retries,
        **limit,
    )


def tutorial_graph(
    model: BaseChatModel,
    checkpointer: Any = None,
    tools: Sequence[BaseTool] = (),
    *,
    decision_model: BaseChatModel | None = None,
    executor_max_steps: int | None = None,
) -> Any:
    """The plan-and-execute tutorial's graph: planner, a ReAct agent with `tools` per step,
    replanner. `model` runs the agent; `decision_model` (default `model`) the planner and the
    replanner, so each role can have its own reply-token limit."""
    deciding = decision_model or model
    planner = ChatPromptTemplate.from_messages(
        [("system", TUTORIAL_PLANNER), ("placeholder", "{messages}")]
    ) | deciding.with_structured_output(Plan)
    replanner = ChatPromptTemplate.from_template(
        TUTORIAL_REPLANNER
    ) | deciding.with_structured_output(Act)
    agent = tutorial_agent(model, tools, max_steps=executor_max_steps)

    async def plan_step(state: TutorialState) -> dict[str, Any]:
        conversation = state.get("messages") or [HumanMessage(state["input"])]
        plan = await planner.ainvoke({"messages": conversation})
        if not isinstance(plan, Plan):
            raise ValueError("planner: the model's reply held no Plan")
        return {"plan": plan.steps}

    async def execute_step(state: TutorialState) -> dict[str, Any]:
        if not state["plan"]:
            raise ValueError("agent: the plan has no step to carry out")
        done = await agent.ainvoke({"messages": [("user", tutorial_ask(state["plan"]))]})
        return {"past_steps": [(state["plan"][0], done["messages"][-1].text)]}

    async def replan_step(state: TutorialState) -> dict[str, Any]:
        asked = {key: state.get(key, []) for key in ("plan", "past_steps")}
        decision = await replanner.ainvoke({"input": state["input"], **asked})
        if not isinstance(decision, Act):
            raise ValueError("replanner: the model's reply held no Act")
        if isinstance(decision.action, Response):
            answer = decision.action.response
            kept = [AIMessage(answer)] if "messages" in state else []
            return {"response": answer, **({"messages": kept} if kept else {})}
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
