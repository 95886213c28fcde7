"""The plan–execute–replan graph: START → planner → executor → replanner → (executor | END).

`build_plan_execute_graph` returns a compiled graph for library use (give it a checkpointer to
persist and resume runs); `graph` is the same graph without a checkpointer, which is what
`langgraph dev` serves as `plan_execute` (see langgraph.json).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from graphs.context import Context
from graphs.model import dual_node
from graphs.nodes import PlanExecuteNodes, after_planner, after_replanner
from graphs.nodes_executor import ExecutorLoop
from graphs.prompts import DEFAULT_PROMPTS, Prompts
from state.plan_execute import PlanExecuteInput, PlanExecuteOutput, PlanExecuteState
from tools import task_tools
from tools.task_descriptions import Language

GRAPH_NAME = "plan_execute"


def build_plan_execute_graph(
    model: BaseChatModel | None = None,
    tools: Sequence[BaseTool] = (),
    *,
    checkpointer: Checkpointer = None,
    max_iterations: int = 10,
    executor_max_steps: int = 20,
    mistake_retries: int = 2,
    prompts: Prompts | None = None,
    language: Language = "en",
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Compile the plan–execute–replan graph.

    Args:
        model: Any LangChain chat model with tool calling. When None, each run builds a
            `ChatOpenAI` from its `Context` (model name, base URL, temperature, retries).
        tools: The caller's tools for the executor; the four task tools are always added.
        checkpointer: Saver for persistence, resume and the plan approval pause.
        max_iterations: Most execute→replan rounds; past it the run ends with a response that
            says the objective was not finished and what was done.
        executor_max_steps: Most model calls the executor makes for one step; past it the step
            is recorded as unfinished and the replanner decides.
        mistake_retries: How often the planner/replanner re-ask a model that answered without
            a usable `plan`/`respond` call before `PlanExecuteError` stops the run.
        prompts: Replacement texts (see `graphs.prompts`).
        language: Language of the task tools' descriptions ("en" or "zh").
    """
    all_tools = [*tools, *task_tools(language=language)]
    loop = ExecutorLoop(model, all_tools, prompts or DEFAULT_PROMPTS, executor_max_steps)
    nodes = PlanExecuteNodes(loop, max_iterations=max_iterations, mistake_retries=mistake_retries)
    builder = StateGraph(
        PlanExecuteState,
        context_schema=Context,
        input_schema=PlanExecuteInput,
        output_schema=PlanExecuteOutput,
    )
    builder.add_node("planner", dual_node(nodes.planner))
    builder.add_node("review_plan", nodes.review_plan, destinations=("executor", END))
    builder.add_node("executor", dual_node(nodes.executor))
    builder.add_node("replanner", dual_node(nodes.replanner))
    builder.add_edge(START, "planner")
    builder.add_conditional_edges("planner", after_planner)
    builder.add_edge("executor", "replanner")
    builder.add_conditional_edges("replanner", after_replanner)
    compiled = builder.compile(checkpointer=checkpointer, name=GRAPH_NAME)
    return compiled.with_config(recursion_limit=2 * max_iterations + 10)


graph = build_plan_execute_graph()
