"""The plan–execute–replan graph: START → planner → executor → replanner → (executor | END).

`build_plan_execute_graph` returns a compiled graph for library use (give it a checkpointer to
persist and resume runs); `graph` is the same graph without a checkpointer, which is what
`langgraph dev` serves as `plan_execute` (see langgraph.json).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Checkpointer

from replan.graphs.context import (
    DEFAULT_EXECUTOR_MAX_STEPS,
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_MISTAKE_RETRIES,
    MAX_BOUND,
    Bounds,
    Context,
)
from replan.graphs.executor import Executor
from replan.graphs.planner import Planner
from replan.graphs.prompts import DEFAULT_PROMPTS, Prompts
from replan.graphs.review import PlanReviewNode
from replan.graphs.state import PlanExecuteInput, PlanExecuteOutput, PlanExecuteState
from replan.graphs.steps import dual_node
from replan.tools.task_descriptions import Language
from replan.tools.task_tools import task_tools

GRAPH_NAME = "plan_execute"
RECURSION_LIMIT = 2 * MAX_BOUND + 10
"""Room for the most rounds any run may ask for; the round counter ends a run well before."""


def after_planner(
    state: PlanExecuteState, runtime: Runtime[Context]
) -> Literal["review_plan", "executor"]:
    """Go to the human review when the run's context asks for it."""
    approve = runtime.context is not None and runtime.context.approve_plan
    return "review_plan" if approve else "executor"


def after_replanner(state: PlanExecuteState) -> Literal["executor", "__end__"]:
    """End once there is a response; otherwise execute the next step."""
    return "__end__" if state.get("response") else "executor"


def build_plan_execute_graph(
    model: BaseChatModel | None = None,
    tools: Sequence[BaseTool] = (),
    *,
    checkpointer: Checkpointer = None,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    executor_max_steps: int = DEFAULT_EXECUTOR_MAX_STEPS,
    mistake_retries: int = DEFAULT_MISTAKE_RETRIES,
    prompts: Prompts | None = None,
    language: Language = "en",
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Compile the plan–execute–replan graph.

    Args:
        model: Any LangChain chat model with tool calling. When None, each run builds a
            `ChatOpenAI` from its `Context` (model name, base URL, temperature, retries).
        tools: The caller's tools for the executor; the four task tools are always added.
        checkpointer: Saver for persistence, resume and the plan approval pause.
        max_iterations: Default most execute→replan rounds (a run's `Context` may set its
            own); past it the run ends with a response that says the objective was not
            finished and what was done.
        executor_max_steps: Default most model calls the executor makes for one step; past it
            the step is recorded as unfinished and the replanner decides.
        mistake_retries: Default number of times the planner/replanner re-ask a model that
            answered without a usable `plan`/`respond` call before `PlanExecuteError`.
        prompts: Replacement texts (see `replan.graphs.prompts`).
        language: Language of the task tools' descriptions ("en" or "zh").
    """
    bounds = Bounds(
        max_iterations=max_iterations,
        executor_max_steps=executor_max_steps,
        mistake_retries=mistake_retries,
    )
    texts = prompts or DEFAULT_PROMPTS
    all_tools = [*tools, *task_tools(language=language)]
    planner = Planner(model, all_tools, texts, bounds)
    executor = Executor(model, all_tools, texts, bounds)
    builder = StateGraph(
        PlanExecuteState,
        context_schema=Context,
        input_schema=PlanExecuteInput,
        output_schema=PlanExecuteOutput,
    )
    builder.add_node("planner", dual_node(planner.planner))
    builder.add_node("review_plan", PlanReviewNode(texts), destinations=("executor", END))
    builder.add_node("executor", dual_node(executor.executor))
    builder.add_node("replanner", dual_node(planner.replanner))
    builder.add_edge(START, "planner")
    builder.add_conditional_edges("planner", after_planner)
    builder.add_edge("executor", "replanner")
    builder.add_conditional_edges("replanner", after_replanner)
    compiled = builder.compile(checkpointer=checkpointer, name=GRAPH_NAME)
    return compiled.with_config(recursion_limit=RECURSION_LIMIT)


graph = build_plan_execute_graph()
