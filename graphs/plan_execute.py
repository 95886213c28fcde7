"""The plan–execute–replan graph: START → start_turn → planner → (review_plan →) executor →
replanner → (executor | answer | reply), answer → reply → END.

Each user message opens a turn (`start_turn` keeps the turn before and clears what the new one
writes) and each turn ends in `reply`, which appends its answer to `messages`. The edges into
`executor` send one task per step that can start (`Send` fan-out), so the steps of a wave run
side by side; the plain edge `executor` → `replanner` runs the replanner once, after the whole
wave. Once the replanner responds, `answer` writes the final answer in plain text
(`Context.answer`, `replan.graphs.nodes.answer`).

`build_plan_execute_graph` returns a compiled graph for library use (give it a checkpointer to
persist and resume runs); `graph` is the same graph without a checkpointer, which is what
`langgraph dev` serves as `plan_execute` (see langgraph.json).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.types import Checkpointer, Send

from replan.graphs.context import (
    DEFAULT_EXECUTOR_MAX_STEPS,
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_MISTAKE_RETRIES,
    MAX_BOUND,
    MAX_CONCURRENCY,
    TASK_TOOLS_CHOICES,
    Bounds,
    Context,
    TaskToolsChoice,
    run_context,
)
from replan.graphs.graph_state import (
    ANSWER,
    EXECUTOR,
    PLANNER,
    REPLANNER,
    REPLY,
    REVIEW,
    START_TURN,
    PlanExecuteInput,
    PlanExecuteOutput,
    PlanExecuteState,
)
from replan.graphs.model.offers import tool_offers
from replan.graphs.nodes.answer import Answerer, writes_answer
from replan.graphs.nodes.driver import dual_node
from replan.graphs.nodes.executor import Executor
from replan.graphs.nodes.planner import Planner
from replan.graphs.nodes.replanner import Replanner
from replan.graphs.nodes.review import PlanReviewNode
from replan.graphs.nodes.turns import StartTurn, reply
from replan.graphs.plan.scheduling import first_todos, wave, with_todos
from replan.graphs.prompts import DEFAULT_PROMPTS, Prompts
from replan.graphs.setting_checks import check_choice
from replan.state.task_stores import TaskStore, open_task_store
from replan.tools.task_descriptions import Language, check_language
from replan.tools.task_tools import TASK_TOOL_NAMES

GRAPH_NAME = "plan_execute"
RECURSION_LIMIT = 2 * MAX_BOUND + 10
"""Room for the most rounds any run may ask for; the round counter ends a run well before."""
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""Tool names the OpenAI API accepts (other servers are at least as strict)."""


def check_tools(tools: Sequence[BaseTool]) -> list[BaseTool]:
    """The caller's tools as a list; refuse what a model server or the graph could not use.

    Each must be a LangChain tool whose name the OpenAI API accepts; names must be unique and
    must not be one of the task tools' names, which the graph adds itself.
    """
    if isinstance(tools, str | bytes | BaseTool) or not isinstance(tools, Sequence):
        raise TypeError(f"tools must be a list of LangChain tools, not {type(tools).__name__}")
    seen: set[str] = set()
    for position, item in enumerate(tools):
        if not isinstance(item, BaseTool):
            raise TypeError(
                f"tools[{position}] is a {type(item).__name__}, not a LangChain tool: wrap a "
                "function with langchain_core.tools.tool"
            )
        if not TOOL_NAME.fullmatch(item.name):
            raise ValueError(
                f"tool name {item.name!r} is refused by the OpenAI API: use 1 to 64 letters, "
                "digits, '_' or '-'"
            )
        if item.name in TASK_TOOL_NAMES:
            raise ValueError(
                f"tool name {item.name!r} is taken by a task tool the graph adds itself; "
                "rename your tool"
            )
        if item.name in seen:
            raise ValueError(f"two tools are named {item.name!r}; tool names must be unique")
        seen.add(item.name)
    return list(tools)


def check_build_arguments(
    model: Any, checkpointer: Any, prompts: Any, language: Any
) -> tuple[Prompts, Language]:
    """Refuse build arguments of the wrong type now, not in the middle of a run.

    Returns the prompts to use and the checked language.
    """
    if model is not None and not (
        isinstance(model, Runnable) and callable(getattr(model, "bind_tools", None))
    ):
        raise TypeError(
            f"model must be a LangChain chat model with tool calling, not {type(model).__name__}"
        )
    if checkpointer is not None and not isinstance(checkpointer, bool | BaseCheckpointSaver):
        raise TypeError(
            f"checkpointer must be a LangGraph checkpointer, not {type(checkpointer).__name__}"
        )
    if prompts is not None and not isinstance(prompts, Prompts):
        raise TypeError(f"prompts must be a replan Prompts, not {type(prompts).__name__}")
    return prompts or DEFAULT_PROMPTS, check_language(language)


def after_planner(
    state: PlanExecuteState, runtime: Runtime[Context]
) -> Literal["review_plan", "answer", "reply"] | list[Send]:
    """Go to the human review when the run's context asks for it, else start the first wave;
    with nothing to carry out, write the answer (`replan.graphs.nodes.answer.writes_answer`) or
    end the turn."""
    context = run_context(runtime.context, state.get("settings"))
    if writes_answer(state, context):
        return ANSWER
    if state.get("response"):
        return REPLY
    return REVIEW if context.approve_plan else wave(state, context)


def after_replanner(
    state: PlanExecuteState, runtime: Runtime[Context]
) -> Literal["reply", "answer"] | list[Send]:
    """Once there is a response, write the answer (plain-text answers) or end the turn;
    otherwise start the next wave of steps."""
    context = run_context(runtime.context, state.get("settings"))
    if writes_answer(state, context):
        return ANSWER
    return REPLY if state.get("response") else wave(state, context)


def build_plan_execute_graph(
    model: BaseChatModel | None = None,
    tools: Sequence[BaseTool] = (),
    *,
    checkpointer: Checkpointer = None,
    store: BaseStore | None = None,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    executor_max_steps: int = DEFAULT_EXECUTOR_MAX_STEPS,
    mistake_retries: int = DEFAULT_MISTAKE_RETRIES,
    prompts: Prompts | None = None,
    language: Language = "en",
    task_store: TaskStore | str | os.PathLike[str] | None = None,
    task_tools: TaskToolsChoice | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Compile the plan–execute–replan graph.

    Args:
        model: Any LangChain chat model with tool calling. When None, each run builds a
            `ChatOpenAI` from its `Context` (model name, base URL, temperature, retries).
        tools: The caller's tools for the executor, to which the four task tools are added
            as `task_tools` says. Names must be unique, accepted by the OpenAI API and not a
            task tool's name. A run with no tools at all has nothing to plan: its answer is
            written at once (`replan.graphs.nodes.answer`).
        checkpointer: Saver for persistence, resume and the plan approval pause.
        store: A LangGraph store where runs record each tool call before making it, so that
            a resumed run tells a call cut short by a crash from one never started
            (docs/persistence.md, "Actions run once"); tools see it as `runtime.store`.
            Servers (`langgraph dev`, Aegra) give their own.
        max_iterations: Default most execute→replan rounds (a run's `Context` may set its
            own); past it the run ends with a response that says the objective was not
            finished and what was done.
        executor_max_steps: Default most model calls the executor makes for one step; past it
            the step is recorded as unfinished and the replanner decides.
        mistake_retries: Default number of times the planner/replanner re-ask a model that
            answered without a usable `plan`/`respond` call before they end the turn not
            finished (`no_decision`), with a report naming the problem.
        prompts: Replacement texts (see `replan.graphs.prompts`).
        language: Language of the task tools' descriptions ("en" or "zh").
        task_store: Where the task tools keep the task list: None for each run's own list in
            its state; a `TaskStore`, folder path or `postgresql://` URL for one list shared
            by every run of the graph (each run's state then keeps a copy as its replanner
            last read it).
        task_tools: How the executor is offered the task tools in a run whose
            `Context.task_tools` is unset: "compact", "full" or "none". Default: "compact"
            with a `task_store`, else "none".

    Raises TypeError or ValueError, naming the argument, for anything a run could not use.
    """
    texts, language = check_build_arguments(model, checkpointer, prompts, language)
    if task_tools is not None:
        check_choice("task_tools", task_tools, TASK_TOOLS_CHOICES)
    bounds = Bounds(
        max_iterations=max_iterations,
        executor_max_steps=executor_max_steps,
        mistake_retries=mistake_retries,
    )
    shared = open_task_store(task_store) if task_store is not None else None
    offers = tool_offers(check_tools(tools), language, shared, task_tools)
    planner = Planner(model, offers, texts, bounds, shared)
    saved = checkpointer is not None and checkpointer is not False
    executor = Executor(model, offers, texts, bounds, shared, checkpointed=saved)
    builder = StateGraph(
        PlanExecuteState,
        context_schema=Context,
        input_schema=PlanExecuteInput,
        output_schema=PlanExecuteOutput,
    )
    builder.add_node(START_TURN, StartTurn(texts.superseded))
    builder.add_node(PLANNER, dual_node(planner.planner, saves_settings=True, after=first_todos))
    builder.add_node(
        REVIEW, PlanReviewNode(texts, planner.tool_steps), destinations=(EXECUTOR, REPLY)
    )
    builder.add_node(EXECUTOR, dual_node(executor.executor, after=with_todos))
    replanner = Replanner(model, offers, texts, bounds, shared)
    builder.add_node(
        REPLANNER, dual_node(replanner.replanner, saves_settings=True, after=with_todos)
    )
    builder.add_node(ANSWER, dual_node(Answerer(model, offers, texts, bounds).answer))
    builder.add_node(REPLY, reply)
    builder.add_edge(START, START_TURN)
    builder.add_edge(START_TURN, PLANNER)
    builder.add_conditional_edges(PLANNER, after_planner, [REVIEW, EXECUTOR, ANSWER, REPLY])
    builder.add_edge(EXECUTOR, REPLANNER)
    builder.add_conditional_edges(REPLANNER, after_replanner, [EXECUTOR, ANSWER, REPLY])
    builder.add_edge(ANSWER, REPLY)
    builder.add_edge(REPLY, END)
    compiled = builder.compile(checkpointer=checkpointer, store=store, name=GRAPH_NAME)
    # The thread pool of sync runs must hold a whole wave; `max_concurrency` in the run's
    # Context is what bounds a wave.
    return compiled.with_config(recursion_limit=RECURSION_LIMIT, max_concurrency=MAX_CONCURRENCY)


@functools.cache
def default_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """The graph with no tools and no checkpointer, built on the first call and kept: `graph`,
    and what `langgraph dev` serves as `plan_execute` (langgraph.json names this function, as
    the server reads a module's variables without its `__getattr__`)."""
    return build_plan_execute_graph()


def __getattr__(name: str) -> Any:
    """`graph`: the graph with no tools and no checkpointer that `langgraph dev` serves as
    `plan_execute`, built on first use (importing this module compiles nothing)."""
    if name != "graph":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return default_graph()
