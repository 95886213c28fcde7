"""The texts the plan–execute graph sends to the model and to people.

Every text is a `str.format` template; the placeholders each one may use are listed in
`PLACEHOLDERS`. Replace any of them with `dataclasses.replace(DEFAULT_PROMPTS, planner=...)`
and pass the result to `build_plan_execute_graph(prompts=...)`.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, fields

PLANNER = """You turn a user's objective into a plan that another agent will carry out.

Call the `plan` tool once with the steps, in the order they must be done. Write each step so \
that someone who sees only that step, the objective and the results of earlier steps can do it: \
name the inputs, the expected output and how to tell it is done. Leave out steps that add \
nothing, and make the last step produce the answer or deliverable the user asked for. Keep the \
plan as short as the objective allows.

The agent carrying out the steps can use these tools:
{tools}"""

EXECUTOR = """You carry out one step of a larger plan, carefully and completely.

Use the tools when they help; the task tools (TaskCreate, TaskGet, TaskUpdate, TaskList) keep a \
shared task list across steps. Do only the step you are given. When it is done, answer with a \
plain-text report of what you did and what you found: that report is all the next stages will \
see of your work."""

EXECUTOR_TASK = """# Objective
{objective}

# The plan still to do (your step comes first)
{plan}

# Steps already done, with their results
{executed_steps}

# Task list
{tasks}

# Your step
{step}"""

REPLANNER = """You check how work on an objective is going and decide what happens next.

Call exactly one tool:
- `respond`, when the objective is met: give the user the full final answer, built from the \
results of the steps.
- `plan`, when work remains: list only the steps still to do, in order. Drop steps that are \
done, use what the results taught you, and fix gaps or failures they reveal. Each step must be \
doable on its own by an agent that sees only that step, the objective and earlier results."""

REPLANNER_TASK = """# Objective
{objective}

# Steps still planned
{plan}

# Steps already done, with their results
{executed_steps}

# Task list
{tasks}"""

CORRECTION = """Your last reply could not be used: {problem}. You sent: {sent}
Answer again by calling {expected} with valid arguments."""

NOT_FINISHED = """The objective was not finished: the run stopped after {max_iterations} \
execute–replan rounds, its limit.

What was done:
{executed_steps}

Steps still planned:
{plan}"""

STEP_UNFINISHED = """UNFINISHED: the step was stopped after {max_steps} model calls, before the \
executor gave its final answer. Its last tool results:
{progress}"""

REVIEW_QUESTION = """Approve this plan? Answer "approve", "reject", or an edited list of steps."""

REJECTED = """The plan was rejected at review, so nothing was carried out.{reason}"""

PLAN_TOOL = "Submit the plan: the steps to carry out, in order."
PLAN_STEPS = "The steps, in the order they must be done; each one clear and self-contained."
RESPOND_TOOL = "Give the user the final answer, when the objective has been met."
RESPOND_RESPONSE = "The complete answer for the user."

PLACEHOLDERS: dict[str, frozenset[str]] = {
    "planner": frozenset({"tools"}),
    "executor": frozenset(),
    "executor_task": frozenset({"objective", "plan", "executed_steps", "tasks", "step"}),
    "replanner": frozenset(),
    "replanner_task": frozenset({"objective", "plan", "executed_steps", "tasks"}),
    "correction": frozenset({"problem", "sent", "expected"}),
    "not_finished": frozenset({"max_iterations", "executed_steps", "plan"}),
    "step_unfinished": frozenset({"max_steps", "progress"}),
    "review_question": frozenset({"plan"}),
    "rejected": frozenset({"reason"}),
    "plan_tool": frozenset(),
    "plan_steps": frozenset(),
    "respond_tool": frozenset(),
    "respond_response": frozenset(),
}


@dataclass(frozen=True, kw_only=True)
class Prompts:
    """All texts of the graph; a template may use only its own placeholders."""

    planner: str = PLANNER
    executor: str = EXECUTOR
    executor_task: str = EXECUTOR_TASK
    replanner: str = REPLANNER
    replanner_task: str = REPLANNER_TASK
    correction: str = CORRECTION
    not_finished: str = NOT_FINISHED
    step_unfinished: str = STEP_UNFINISHED
    review_question: str = REVIEW_QUESTION
    rejected: str = REJECTED
    plan_tool: str = PLAN_TOOL
    plan_steps: str = PLAN_STEPS
    respond_tool: str = RESPOND_TOOL
    respond_response: str = RESPOND_RESPONSE

    def __post_init__(self) -> None:
        """Reject a template that names a placeholder it will never be given."""
        for f in fields(self):
            template: str = getattr(self, f.name)
            used = {name for _, name, _, _ in string.Formatter().parse(template) if name}
            unknown = used - PLACEHOLDERS[f.name]
            if unknown:
                allowed = ", ".join(sorted(PLACEHOLDERS[f.name])) or "none"
                raise ValueError(
                    f"prompt {f.name!r} uses unknown placeholders {sorted(unknown)}; "
                    f"allowed: {allowed}"
                )


DEFAULT_PROMPTS = Prompts()
