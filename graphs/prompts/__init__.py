"""The texts the plan–execute graph sends to the model and to people.

Every text is a `str.format` template; the placeholders each one may use are listed in
`PLACEHOLDERS`. Replace any of them with `dataclasses.replace(DEFAULT_PROMPTS, planner=...)`
and pass the result to `build_plan_execute_graph(prompts=...)`.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, fields

from replan.graphs.prompts.answer import (
    ANSWER,
    ANSWER_DIRECT,
    ANSWER_STOPPED,
    ANSWER_TASK,
)
from replan.graphs.prompts.decisions import (
    CORRECTION,
    DECIDE_NOTE,
    DECIDE_TOOL,
    JSON_CORRECTION,
    JSON_NOTE,
    REPLY_CUT_OFF,
)
from replan.graphs.prompts.executor import (
    CALL_AS_JSON,
    EXECUTOR,
    EXECUTOR_COMPUTING,
    EXECUTOR_TASK,
    EXECUTOR_TASK_TOOLS,
    REMINDER_FAILED,
    REMINDER_FIGURES,
    STEP_CUT_OFF,
    STEP_NO_REPORT,
    STEP_UNFINISHED,
    TEXT_CALL_CORRECTION,
    TOOL_REMINDER,
    TOOL_STEP_NO_FIELD,
    TOOL_STEP_NO_TOOL,
    TOOL_STEP_NOT_RUN,
    TOOL_STEP_WHOLE_RESULT,
)
from replan.graphs.prompts.head import HEAD
from replan.graphs.prompts.planner import (
    PLAN_STEPS,
    PLAN_STEPS_TOOLS,
    PLAN_TOOL,
    PLANNER,
    PLANNER_COMPUTING,
    PLANNER_EARLIER,
    PLANNER_SEALED,
    PLANNER_TOOL_STEPS,
)
from replan.graphs.prompts.replanner import (
    REPEATED_STEPS,
    REPLANNER,
    REPLANNER_COMPUTING,
    REPLANNER_EARLIER,
    REPLANNER_TASK,
    REPLANNER_TOOL_STEPS,
    RESPOND_NOTE,
    RESPOND_RESPONSE,
    RESPOND_THEN_ANSWER,
    RESPOND_TOOL,
    RESPOND_WITH_ANSWER,
    UNMADE_CALLS,
)
from replan.graphs.prompts.reports import (
    NO_DECISION,
    NO_PLAN,
    NO_PROGRESS,
    NOT_FINISHED,
    REJECTED,
    REVIEW_QUESTION,
    SUPERSEDED,
)

PLACEHOLDERS: dict[str, frozenset[str]] = {
    "head": frozenset({"tools"}),
    "planner": frozenset({"tools", "computing"}),
    "planner_computing": frozenset({"tools"}),
    "executor": frozenset({"tools", "task_tools", "computing"}),
    "executor_task_tools": frozenset(),
    "executor_computing": frozenset({"tools"}),
    "tool_reminder": frozenset({"problem", "tools"}),
    "reminder_failed": frozenset(),
    "call_as_json": frozenset({"tool"}),
    "reminder_figures": frozenset({"figures"}),
    "executor_task": frozenset({"objective", "dependencies", "tasks", "step"}),
    "replanner": frozenset({"respond"}),
    "respond_with_answer": frozenset(),
    "respond_then_answer": frozenset(),
    "answer": frozenset(),
    "answer_stopped": frozenset(),
    "answer_direct": frozenset(),
    "answer_task": frozenset({"objective", "executed_steps"}),
    "replanner_task": frozenset(
        {"objective", "plan", "executed_steps", "tasks", "repeated", "next"}
    ),
    "planner_tool_steps": frozenset({"tools", "computing", "example"}),
    "planner_sealed": frozenset(),
    "replanner_tool_steps": frozenset({"respond", "computing"}),
    "replanner_computing": frozenset({"tools"}),
    "plan_steps_tools": frozenset(),
    "repeated_steps": frozenset({"steps"}),
    "unmade_calls": frozenset({"steps"}),
    "correction": frozenset({"problem", "sent", "expected"}),
    "text_call_correction": frozenset({"problem", "tools"}),
    "reply_cut_off": frozenset({"max_tokens"}),
    "json_correction": frozenset({"problem", "sent", "expected"}),
    "decide_note": frozenset(),
    "json_note": frozenset({"fields"}),
    "not_finished": frozenset({"max_iterations", "executed_steps", "plan"}),
    "no_progress": frozenset({"step", "times", "executed_steps", "plan"}),
    "no_decision": frozenset({"problem", "executed_steps", "plan"}),
    "no_plan": frozenset({"problem"}),
    "superseded": frozenset(),
    "planner_earlier": frozenset({"executed_steps", "next"}),
    "replanner_earlier": frozenset({"exchanges"}),
    "step_unfinished": frozenset({"max_steps", "progress"}),
    "step_cut_off": frozenset({"max_tokens", "text", "progress"}),
    "step_no_report": frozenset({"progress"}),
    "tool_step_not_run": frozenset({"steps"}),
    "tool_step_no_tool": frozenset({"tool"}),
    "tool_step_whole_result": frozenset({"argument", "shape"}),
    "tool_step_no_field": frozenset({"reference", "problem"}),
    "review_question": frozenset({"plan"}),
    "rejected": frozenset({"reason"}),
    "plan_tool": frozenset(),
    "plan_steps": frozenset(),
    "respond_tool": frozenset(),
    "respond_response": frozenset(),
    "respond_note": frozenset(),
    "decide_tool": frozenset(),
}


@dataclass(frozen=True, kw_only=True)
class Prompts:
    """All texts of the graph; a template may use only its own placeholders. `head` starts
    every request of a run; each node's own text follows it, in the request's first user
    message (the planner's: after the conversation)."""

    head: str = HEAD

    planner: str = PLANNER
    planner_computing: str = PLANNER_COMPUTING
    executor: str = EXECUTOR
    executor_task_tools: str = EXECUTOR_TASK_TOOLS
    executor_computing: str = EXECUTOR_COMPUTING
    tool_reminder: str = TOOL_REMINDER
    reminder_failed: str = REMINDER_FAILED
    call_as_json: str = CALL_AS_JSON
    reminder_figures: str = REMINDER_FIGURES
    executor_task: str = EXECUTOR_TASK
    replanner: str = REPLANNER
    respond_with_answer: str = RESPOND_WITH_ANSWER
    respond_then_answer: str = RESPOND_THEN_ANSWER
    answer: str = ANSWER
    answer_stopped: str = ANSWER_STOPPED
    answer_direct: str = ANSWER_DIRECT
    answer_task: str = ANSWER_TASK
    replanner_task: str = REPLANNER_TASK
    planner_tool_steps: str = PLANNER_TOOL_STEPS
    planner_sealed: str = PLANNER_SEALED
    replanner_tool_steps: str = REPLANNER_TOOL_STEPS
    replanner_computing: str = REPLANNER_COMPUTING
    plan_steps_tools: str = PLAN_STEPS_TOOLS
    repeated_steps: str = REPEATED_STEPS
    unmade_calls: str = UNMADE_CALLS
    correction: str = CORRECTION
    text_call_correction: str = TEXT_CALL_CORRECTION
    reply_cut_off: str = REPLY_CUT_OFF
    json_correction: str = JSON_CORRECTION
    decide_note: str = DECIDE_NOTE
    json_note: str = JSON_NOTE
    not_finished: str = NOT_FINISHED
    no_progress: str = NO_PROGRESS
    no_decision: str = NO_DECISION
    no_plan: str = NO_PLAN
    superseded: str = SUPERSEDED
    planner_earlier: str = PLANNER_EARLIER
    replanner_earlier: str = REPLANNER_EARLIER
    step_unfinished: str = STEP_UNFINISHED
    step_cut_off: str = STEP_CUT_OFF
    step_no_report: str = STEP_NO_REPORT
    tool_step_not_run: str = TOOL_STEP_NOT_RUN
    tool_step_no_tool: str = TOOL_STEP_NO_TOOL
    tool_step_whole_result: str = TOOL_STEP_WHOLE_RESULT
    tool_step_no_field: str = TOOL_STEP_NO_FIELD
    review_question: str = REVIEW_QUESTION
    rejected: str = REJECTED
    plan_tool: str = PLAN_TOOL
    plan_steps: str = PLAN_STEPS
    respond_tool: str = RESPOND_TOOL
    respond_response: str = RESPOND_RESPONSE
    respond_note: str = RESPOND_NOTE
    decide_tool: str = DECIDE_TOOL

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
