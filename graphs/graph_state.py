"""State schemas of the plan–execute–replan graph: what a run keeps, takes and returns.

The graph keeps the user's `messages`, the `plan` (steps still to do, each with a stable `id`
and the ids of the steps it waits for), the `executed_steps` with their results, the final
`response`, the shared task list (`tasks_context`), how many execute→replan rounds ran
(`iterations`), once the model server refused a way of asking for decisions, the way used
instead (`decision_mode`), how many tool calls written as text were recovered
(`recovered_calls`) and how many mistaken model replies were corrected (`corrected_mistakes`),
and the tokens the model calls used (`usage`, per node and per plan step, see
`replan.state.usage`).

A model (or a reviewer) writes a plan as a list whose items are a string, which runs after the
item before it, `{"step": text, "depends_on": [numbers]}`, or, when the run offers tool steps,
`{"tool": name, "args": {...}, "depends_on": [numbers]}` (`PlanItem`; see
`replan.graphs.plan.numbering` for the numbers and `replan.graphs.plan.tool_steps` for tool
steps). A
step's `id` is the number the model was shown, so a replan never renumbers.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.messages import (
    AnyMessage,
)
from langgraph.graph import add_messages
from typing_extensions import TypedDict

from replan.graphs.context import (
    DecisionMode,
)
from replan.graphs.plan.task_merge import merge_task_updates
from replan.graphs.plan.todos import Todo, merge_todos
from replan.state.tasks import TaskContext
from replan.state.usage import RunUsage, merge_usage
from replan.tools.task_state import TasksState

START_TURN: Literal["start_turn"] = "start_turn"
PLANNER: Literal["planner"] = "planner"
REVIEW: Literal["review_plan"] = "review_plan"
EXECUTOR: Literal["executor"] = "executor"
REPLANNER: Literal["replanner"] = "replanner"
ANSWER: Literal["answer"] = "answer"
REPLY: Literal["reply"] = "reply"
"""The graph's nodes, by name."""
NODES = (START_TURN, PLANNER, REVIEW, EXECUTOR, REPLANNER, ANSWER, REPLY)
"""The nodes of `build_plan_execute_graph`'s graph, in the order it adds them."""
ACT: Literal["act"] = "act"
"""The node of an executor's tool loop that asks the model."""
MODEL_NODES = frozenset({PLANNER, REPLANNER, ANSWER, ACT})
"""The nodes that ask the model."""


def latest(_: Any, new: Any) -> Any:
    """A channel's reducer that keeps the value written last (parallel steps may each write
    the same one)."""
    return new


class PlannedStep(TypedDict):
    """A step still to do: a stable `id` (unique in the thread, the number the model was shown),
    its text, and the ids of the steps that must be done before it starts. A tool step also has
    the `tool` it runs and its `args` (with `"$N"` references to the results of steps by id);
    its text is the call as shown to people, e.g. `area(room="A")`."""

    id: int
    step: str
    depends_on: list[int]
    tool: NotRequired[str]
    args: NotRequired[dict[str, Any]]
    tools: NotRequired[list[str]]
    """A text step of a sealed run: the tools its executor may act with (`replan.graphs.seal`)."""
    deferred: NotRequired[str]
    """A deferred step: the tool it will call, its arguments written by the replanner once the
    steps it waits for are done (`replan.graphs.plan.numbering`); it never runs as it is."""


StepStatus = Literal["done", "unfinished", "failed"]
"""How a step ended: its executor answered, ran out of model calls, or reported a failure (a
tool step: its tool answered, or raised or answered with an error status)."""


class ExecutedStep(TypedDict):
    """One carried-out step and the executor's report on it. A tool step also keeps its `tool`,
    the `args` it was called with (references replaced) and, when an earlier step had made the
    same call, that step's id as `reused_from` (its result was taken, the tool not called).
    `acted` marks a step that called a tool which may act (`replan.tools.effects`); a call of a
    read-only tool is marked `read_only`, with `after`, how many steps of the turn were done
    when its wave began: its result may be reused while no step since `after` acted."""

    step: str
    result: str
    id: NotRequired[int]
    status: NotRequired[StepStatus]
    tool: NotRequired[str]
    args: NotRequired[dict[str, Any]]
    reused_from: NotRequired[int]
    acted: NotRequired[bool]
    read_only: NotRequired[bool]
    after: NotRequired[int]


PlanItem = str | dict[str, Any]
"""A step as a model or a reviewer writes it (see the module docstring)."""


class PlanExecuteInput(TypedDict):
    """What a caller gives the graph: the conversation holding the objective."""

    messages: Annotated[list[AnyMessage], add_messages]


StopReason = Literal["", "max_iterations", "no_progress", "no_decision", "rejected", "superseded"]
"""Why a turn ended without meeting its objective: its round limit, a step planned again after
it had been carried out twice (a failed call: twice with the same result; `repeated_step`),
no usable planner or replanner decision within its retries, its plan rejected at review
(nothing was carried out), or a new user message came before it ended (`superseded`: it was
left as it was); "" when it met it."""


FallbackReason = Literal["refused", "mistakes", "unenforced", "known"]
"""Why a run left a way of asking for decisions: the server refused it (an HTTP error), the
model's replies to it kept carrying no decision, the server let a forced call come back as
text, which it then does not enforce, or the server is known not to enforce it before anything
was asked (`replan.graphs.model.decision_modes`, `replan.graphs.model.servers`)."""


class DecisionFallback(TypedDict):
    """A way of asking for decisions this run left: `refused` (the mode left), `asked` (what
    its requests carried), the HTTP `status` of the server's refusal (None when it was left
    for the model's mistakes), the mode asked in instead and the `reason` (records written
    before reasons were kept have none: those were refusals)."""

    refused: DecisionMode
    asked: str
    status: int | None
    fallback: DecisionMode
    reason: NotRequired[FallbackReason]


class DecisionModeRecord(TypedDict):
    """How this run asks for decisions since it left a way (`mode`), and each fallback;
    absent while it asks as its context says."""

    mode: DecisionMode
    fallbacks: list[DecisionFallback]


def fallbacks_of(record: DecisionModeRecord | None) -> list[DecisionFallback]:
    """The fallbacks `record` holds (none without one)."""
    return list(record["fallbacks"]) if record else []


def effective_mode(requested: DecisionMode, record: DecisionModeRecord | None) -> DecisionMode:
    """The mode a run asks in: `requested`, or the mode it fell back to from it."""
    instead = {fallback["refused"]: fallback["fallback"] for fallback in fallbacks_of(record)}
    mode = requested
    while mode in instead:  # fallbacks only go forward in DECISION_MODES: no cycle
        mode = instead[mode]
    return mode


class Turn(TypedDict):
    """An ended turn of a conversation, as it was when the next one began: its objective (the
    user message it answered), its answer or report, why it ended short (`stop_reason`), the
    steps it carried out, those still planned, and its model usage."""

    objective: str
    response: str
    stop_reason: StopReason
    executed_steps: list[ExecutedStep]
    plan: list[PlannedStep]
    usage: RunUsage


class PlanExecuteOutput(TypedDict, total=False):
    """What the graph returns: the conversation with the turn's answer appended (`messages`),
    the answer itself (`response`), the steps left, the steps done, `stop_reason` when the turn
    ended without meeting its objective, its model calls' `usage`, and the earlier `turns`."""

    messages: list[AnyMessage]
    response: str
    plan: list[PlannedStep]
    executed_steps: list[ExecutedStep]
    stop_reason: StopReason
    usage: RunUsage
    turns: list[Turn]


class PlanExecuteState(PlanExecuteInput, total=False):
    """The full state of the plan–execute graph: the thread's conversation (`messages`), its
    ended `turns`, and the current turn's plan, steps, answer and usage.

    `tasks_context` merges the task-list changes of parallel executor branches
    (`replan.graphs.plan.task_merge`); a plain `TaskContext` written to it replaces the list.
    `usage` adds up what every node of the turn reports (parallel steps' usage too).
    """

    turns: Annotated[list[Turn], operator.add]
    objective: str
    """The objective of the turn under way (the planner reads it from `messages`)."""
    declared_tools: list[str]
    """A sealed run's turn: the tools its first plan declared it may act with (`seal`)."""
    declared_steps: list[int]
    """A sealed run's turn: the ids of its first plan's steps, written before any result."""
    carried_steps: list[ExecutedStep]
    """The steps of the turn before, which this turn's plans may name by number."""
    plan: list[PlannedStep]
    executed_steps: Annotated[list[ExecutedStep], operator.add]
    response: str
    stop_reason: StopReason
    tasks_context: Annotated[TaskContext, merge_task_updates]
    iterations: int
    recovered_calls: Annotated[int, operator.add]
    """How many tool calls the model wrote as text were recovered, over every node and
    executor branch (`replan.graphs.model.text_calls`); kept in the state, not in the output."""
    corrected_mistakes: Annotated[int, operator.add]
    """How many model replies were mistakes the model was told about and asked again for: a
    decision without a usable decision in it, an executor turn with a tool call whose arguments
    are not valid JSON or a tool call written as text that could not be read; over every node
    and executor branch, kept in the state, not in the output."""
    reused_calls: Annotated[int, operator.add]
    """How many tool steps took the result of an earlier step that had made the same call,
    instead of calling the tool again; kept in the state, not in the output."""
    decision_mode: DecisionModeRecord
    usage: Annotated[RunUsage, merge_usage]
    settings: Annotated[dict[str, Any], latest]
    """The run's `Context` as plain values, saved by its first node: a resume or approval that
    gives no context goes on with them, one that gives some fields changes only those
    (`replan.graphs.context.run_context`)."""
    todos: Annotated[list[Todo], merge_todos]
    """The turn's plan as a to-do list for chat UIs (`replan.graphs.plan.todos`); kept in the
    state, not in the input or output, so a parent agent's own `todos` stay its own."""


class StepRun(TypedDict):
    """What one executor branch gets: the objective, its step, the results of the steps it
    depends on, and the task list as the wave started; a tool step also gets the calls of
    read-only tools done so far that nothing may have changed since (`earlier_calls`), whose
    results it takes instead of making the same call, and how many steps of the turn were done
    as its wave began (`after`);
    `decision_mode`, how the run asks for decisions now (an executor forcing a tool call asks
    for it the same way)."""

    objective: str
    step: PlannedStep
    dependencies: list[ExecutedStep]
    tasks_context: TaskContext
    earlier_calls: NotRequired[list[ExecutedStep]]
    after: NotRequired[int]
    decision_mode: NotRequired[DecisionMode]
    settings: NotRequired[dict[str, Any]]
    seal: NotRequired[dict[str, Any]]
    """In a sealed run: the tools the step may act with, the arguments that may come from a
    result (`replan.graphs.seal.step_seal`)."""
    known: NotRequired[str]
    """For a text step: the words of what the user wrote and of the thread's results, where
    its calls' values may come from (`replan.graphs.plan.provenance.known_words`)."""


class ExecutorState(TasksState, total=False):
    """State of the executor's inner tool loop; `step` is the step's text, `model_calls` counts
    its model turns, `corrected_mistakes` the turns answered with a correction, `reminded` says
    the model was reminded of its tools (once per step), `forced_tool` names the tool its next
    turn must call ("" for none), `forced_as` how (a JSON decision mode: a JSON object of the
    tool's arguments, for servers that do not enforce `tool_choice`), `usage` adds up their
    tokens."""

    step: str
    max_steps: int
    """The most model calls the step may make (`Context.executor_max_steps`)."""
    builds_on: bool
    """Whether the step was given the results of earlier steps."""
    model_calls: int
    reminded: bool
    forced_tool: str
    forced_as: DecisionMode
    corrected_mistakes: Annotated[int, operator.add]
    usage: Annotated[RunUsage, merge_usage]
    known: str
    """Where its calls' values may come from besides its own messages (`StepRun.known`)."""
    seal: dict[str, Any]
    """In a sealed run: what its calls may do (`StepRun.seal`)."""


PLAN_ACTION = "plan"
"""The name of the one action a plan review asks about."""
ALLOWED_DECISIONS = ["approve", "edit", "reject"]


def one_action_request(
    name: str, args: Mapping[str, Any], description: str, allowed: Sequence[str]
) -> dict[str, Any]:
    """An interrupt value in LangChain's human-in-the-loop shape (`HITLRequest`) asking about
    one action: `name` with `args`, the decisions `allowed`."""
    return {
        "action_requests": [{"name": name, "args": dict(args), "description": description}],
        "review_configs": [{"action_name": name, "allowed_decisions": list(allowed)}],
    }


def review_request(items: list[Any], description: str) -> dict[str, Any]:
    """The interrupt value of a plan review: a `HITLRequest` for the plan's `items`."""
    return one_action_request(PLAN_ACTION, {"steps": items}, description, ALLOWED_DECISIONS)


def reviewed_steps(value: Any) -> list[Any]:
    """The steps a review interrupt's `value` asks about (in either shape replan has paused
    with: a `HITLRequest`, or `{"plan": [...], "question": ...}` before)."""
    return list(review_summary(value)["plan"])


def review_refusal(value: Any) -> str:
    """Why a review interrupt's `value` asks again, when it does: the paragraph its description
    puts before the question (`replan.graphs.nodes.review`); "" for a first ask."""
    question = str(review_summary(value)["question"])
    refused, separator, _ = question.rpartition("\n\n")
    return refused if separator else ""


def review_summary(value: Any) -> dict[str, Any]:
    """A review interrupt's `value` as `{"plan": steps, "question": text}`, whichever shape."""
    if not isinstance(value, dict):
        return {"plan": [], "question": ""}
    if value.get("action_requests"):
        request = value["action_requests"][0]
        steps = (request.get("args") or {}).get("steps")
        steps = steps if isinstance(steps, list) else []
        return {"plan": steps, "question": request.get("description", "")}
    return {"plan": value.get("plan") or [], "question": value.get("question", "")}
