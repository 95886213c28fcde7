"""The texts the plan–execute graph sends to the model and to people.

Every text is a `str.format` template; the placeholders each one may use are listed in
`PLACEHOLDERS`. Replace any of them with `dataclasses.replace(DEFAULT_PROMPTS, planner=...)`
and pass the result to `build_plan_execute_graph(prompts=...)`.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, fields

PLANNER = """You turn a user's objective into a plan that other agents will carry out.

Call the `plan` tool once with the steps. Each step goes to an agent that sees only the \
objective, the text of that step and the results of the steps it depends on, so write every \
step to stand on its own: name its inputs, the expected output and how to tell it is done. Leave \
out steps that add nothing, make the last step produce the answer or deliverable the user asked \
for, and keep the plan as short as the objective allows. Plan only what the agents can do with \
the tools listed below or by reasoning and writing: when the objective asks for a text (an \
answer, a list, a report), the steps write that text; never plan an action in the world (create \
a file, run a command, upload) that none of those tools performs.

Steps that do not need each other's results can run at the same time. A step written as a plain \
string runs after the step listed before it. A step written as an object \
{{"step": "...", "depends_on": [...]}} runs as soon as the steps at the listed 1-based \
positions are done, and right away with an empty list; it may only name steps listed before it. \
For example, two look-ups side by side and a comparison of their results:
[{{"step": "Find the price of plan A", "depends_on": []}}, \
{{"step": "Find the price of plan B", "depends_on": []}}, \
{{"step": "Compare the two prices and recommend one", "depends_on": [1, 2]}}]

The agents carrying out the steps can use these tools:
{tools}{computing}"""

FAILED_PREFIX = "FAILED:"
"""How an executor's report starts when it could not do its step (see `EXECUTOR`)."""

EXECUTOR = f"""You carry out one step of a larger plan.

Tools you can call: {{tools}}.{{task_tools}}

When a tool can do the step or give what it needs (a look-up, a figure, an action), your \
first move is to call that tool: do not answer from memory, and never write a figure that a \
tool could give you.{{computing}} Call tools as often as the step needs. Then answer with a \
short plain-text report of what you did and found, with the figures the tools gave: that \
report is all the later steps see of your work; never report as done an action that needs a \
tool you do not have. Only when a tool call failed, or no tool fits the step and it needs \
one, start the report with "{FAILED_PREFIX}" and say why."""

EXECUTOR_TASK_TOOLS = """ The task tools keep a task list shared with the other steps, some of \
which may be running at the same time as yours."""
"""What `EXECUTOR` says in `{task_tools}` when the run offers the task tools (else nothing)."""

EXECUTOR_COMPUTING = """ Do every sum, difference, product and comparison of figures with \
{tools}, never in your head."""
"""What `EXECUTOR` says in `{computing}` when the run has a computing tool (else nothing)."""

PLANNER_COMPUTING = """

Arithmetic on figures (a sum, a difference, a product, which is largest) is a step of its own \
that uses {tools}, with the figures or the steps that give them named in its text."""
"""What `PLANNER` says in `{computing}` when the run has a computing tool (else nothing)."""

TOOL_REMINDER = """Your report {problem}, yet you called no tool in this step. If {tools} can \
do the step or give that figure, call it now instead of guessing. If none of them fits, give \
your report again."""
"""What the executor is told, once per step, when its report {problem} with no tool call."""
CALL_AS_JSON = """Call {tool} now: answer with its arguments as one JSON object, and nothing \
else."""
"""What a reminded executor is told when the server does not enforce `tool_choice` and the
forced call is asked for as a JSON object of the tool's arguments."""
REMINDER_FAILED = "says the step could not be done"
REMINDER_FIGURES = "gives figures ({figures}) that no tool result or earlier result shows"

EXECUTOR_TASK = """# Objective
{objective}

# Results of the steps yours builds on
{dependencies}

# Task list
{tasks}

# Your step
{step}"""

REPLANNER = """You check how work on an objective is going and decide what happens next.

Call exactly one tool:
- {respond}, when the objective is met.
- `plan`, when work remains: list only the steps still to do. Use what the results taught you, \
and fix gaps or failures they reveal. A step that failed because no tool can do it fails again \
if planned again: plan something the tools or plain writing can do, or respond with what the \
results allow.

Write the steps as in a new plan: a plain string runs after the step before it, and an object \
with `step` and `depends_on` runs once the steps with those numbers are done (an empty list: \
right away). Numbers do not change: done steps keep theirs, a step you keep word for word keeps \
its own, and the steps of your list are numbered on from the number given below. `depends_on` \
may name done steps (the step then sees their results) and steps listed before it; leave done \
steps out of the list. A step you keep word for word still sees the results it was planned to \
use; any other step sees only the objective, its own text and the results of the steps it \
depends on, so copy into its text what it needs from earlier results. Long results are \
shortened below; the full text is kept."""

RESPOND_WITH_ANSWER = """`respond` with the full final answer for the user, built from the \
results of the steps"""
"""How the replanner prompts' `{respond}` asks for the answer in the decision
(`answer="decision"`)."""
RESPOND_THEN_ANSWER = """`respond` with one short sentence saying that the objective is met \
(the full answer is written next, from the results of the steps)"""
"""How the replanner prompts' `{respond}` asks for a note only, the answer being written next
(`answer="plain"`)."""

ANSWER = """You write the final answer to a user's objective from the results of the work \
done on it. Use only what the results say. Where a result already gives a figure or a name \
the objective asks for, copy it exactly instead of working it out again. Answer the \
objective directly, in plain text, without a preamble."""
"""The system prompt of the plain-text answer (`Context.answer="plain"`)."""

ANSWER_TASK = """# Objective
{objective}

# Results of the steps
{executed_steps}

Write the final answer now."""

REPLANNER_TASK = """# Objective
{objective}

# Steps still planned
{plan}

# Steps already done, with their results
{executed_steps}

# Task list
{tasks}{repeated}

Steps of a new plan are numbered from {next}."""

PLANNER_TOOL_STEPS = """Plan the user's objective: call `plan` with steps numbered 1, 2, ...
A tool step {{"tool": NAME, "args": {{...}}}} calls a tool; "$N" in args is step N's result, e.g. \
{example}.
Any other step is a text (or {{"step": "...", "depends_on": [N]}}) for an agent that sees only \
it, the objective and the results it depends on.
A step waits for the earlier steps it names (a plain string: for the step before it); the last \
step gives the answer. Tools:
{tools}{computing}"""
"""The planner's system prompt when the run offers tool steps (`planner` otherwise)."""

REPLANNER_TOOL_STEPS = """If the results below meet the objective, call {respond}. Else call \
`plan` with only the steps still to do, as in a plan: tool steps (with \
figures from the results, or "$N") and text steps. A failed step fails again unless \
changed.{computing}"""
"""The replanner's system prompt when the run offers tool steps (`replanner` otherwise)."""

REPLANNER_COMPUTING = """ Work out no figure yourself: while a sum, a difference, a product or \
which figure is largest is still needed, plan it as a tool step of {tools} on the results \
("$N"); once a result holds it, respond with that figure."""
"""What `REPLANNER_TOOL_STEPS` says in `{computing}` when the run has a computing tool."""

REPEATED_STEPS = """

# Steps carried out more than once
These steps were planned again after they were done, and carried out again; the last result \
is below. Planning one of them once more ends the run as making no progress: plan only what is \
still missing, or respond.
{steps}"""

CORRECTION = """Your last reply could not be used: {problem}. You sent: {sent}
Answer again by calling {expected} with valid arguments."""

TEXT_CALL_CORRECTION = """Your last reply looks like a tool call written as text, and it was not \
run: {problem}. To use a tool, call one of {tools} with a JSON object of arguments. When the \
step is done, answer with a plain-text report instead."""

REPLY_CUT_OFF = """the reply was cut off at the limit of {max_tokens} tokens before it was \
complete; keep the next one brief and end it right after the tool call"""
JSON_CORRECTION = """Your last reply could not be used: {problem}. You sent: {sent}
Answer again with one JSON object holding {expected}, and nothing else."""

DECIDE_NOTE = """The two tools above come here as one tool, `decide`: call it with `steps` \
where this text says to call `plan`, or with `response` where it says to call `respond`; give \
exactly one of the two."""

JSON_NOTE = """No tools are offered here: instead of calling a tool, answer with one JSON \
object and nothing else, holding exactly one of these keys:
{fields}"""

NOT_FINISHED = """The objective was not finished: the run stopped after {max_iterations} \
execute–replan rounds, its limit.

What was done:
{executed_steps}

Steps still planned:
{plan}"""

NO_DECISION = """The objective was not finished: after the work below, the model gave no usable \
decision on what to do next ({problem}).

What was done:
{executed_steps}

Steps still planned:
{plan}"""

NO_PROGRESS = """The objective was not finished: the run stopped making progress. The replanner \
planned the step "{step}" again after it had been carried out {times} times.

What was done:
{executed_steps}

Steps still planned:
{plan}"""

STEP_UNFINISHED = """UNFINISHED: the step was stopped after {max_steps} model calls, before the \
executor gave its final answer. Its last tool results:
{progress}"""

STEP_NO_REPORT = """UNFINISHED: the executor ended the step with an empty reply, without saying \
what it did. Its last tool results:
{progress}"""

STEP_CUT_OFF = """UNFINISHED: the executor's reply was cut off at the limit of {max_tokens} \
tokens, before it gave its final answer. What it had written:
{text}
Its last tool results:
{progress}"""

TOOL_STEP_NOT_RUN = """Not run: it refers to the result of step {steps}, which did not end \
done."""
"""The result of a tool step whose referenced steps failed or are unfinished."""

TOOL_STEP_NO_TOOL = """Not run: this run has no tool `{tool}` for tool steps."""
"""The result of a tool step naming a tool the run does not have (e.g. resumed without it)."""

REVIEW_QUESTION = """Approve this plan? Answer "approve", "reject", or an edited list of steps \
(strings, or {{"step": "...", "depends_on": [positions]}} for a step that waits for other \
steps than the one before it)."""

REJECTED = """The plan was rejected at review, so nothing was carried out.{reason}"""

PLAN_TOOL = "Submit the plan: the steps to carry out, each listed after the steps it needs."
PLAN_STEPS = (
    "The steps, each clear and self-contained. An item is either a string, which runs after "
    "the item before it, or an object with `step` (the text) and `depends_on` (the 1-based "
    "positions of earlier items whose results it needs; an empty list starts it at once)."
)
PLAN_STEPS_TOOLS = "The steps: tool steps, text steps, or plain strings."
"""`plan_steps` when the run offers tool steps (the prompt says the rest)."""
RESPOND_TOOL = "Give the user the final answer, when the objective has been met."
RESPOND_RESPONSE = "The complete answer for the user."
RESPOND_NOTE = "One short sentence saying that the objective is met."
DECIDE_TOOL = (
    "Give your decision: `steps` to plan the work still to do, or `response` to give the "
    "final answer; exactly one of them."
)

PLACEHOLDERS: dict[str, frozenset[str]] = {
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
    "answer_task": frozenset({"objective", "executed_steps"}),
    "replanner_task": frozenset(
        {"objective", "plan", "executed_steps", "tasks", "repeated", "next"}
    ),
    "planner_tool_steps": frozenset({"tools", "computing", "example"}),
    "replanner_tool_steps": frozenset({"respond", "computing"}),
    "replanner_computing": frozenset({"tools"}),
    "plan_steps_tools": frozenset(),
    "repeated_steps": frozenset({"steps"}),
    "correction": frozenset({"problem", "sent", "expected"}),
    "text_call_correction": frozenset({"problem", "tools"}),
    "reply_cut_off": frozenset({"max_tokens"}),
    "json_correction": frozenset({"problem", "sent", "expected"}),
    "decide_note": frozenset(),
    "json_note": frozenset({"fields"}),
    "not_finished": frozenset({"max_iterations", "executed_steps", "plan"}),
    "no_progress": frozenset({"step", "times", "executed_steps", "plan"}),
    "no_decision": frozenset({"problem", "executed_steps", "plan"}),
    "step_unfinished": frozenset({"max_steps", "progress"}),
    "step_cut_off": frozenset({"max_tokens", "text", "progress"}),
    "step_no_report": frozenset({"progress"}),
    "tool_step_not_run": frozenset({"steps"}),
    "tool_step_no_tool": frozenset({"tool"}),
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
    """All texts of the graph; a template may use only its own placeholders."""

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
    answer_task: str = ANSWER_TASK
    replanner_task: str = REPLANNER_TASK
    planner_tool_steps: str = PLANNER_TOOL_STEPS
    replanner_tool_steps: str = REPLANNER_TOOL_STEPS
    replanner_computing: str = REPLANNER_COMPUTING
    plan_steps_tools: str = PLAN_STEPS_TOOLS
    repeated_steps: str = REPEATED_STEPS
    correction: str = CORRECTION
    text_call_correction: str = TEXT_CALL_CORRECTION
    reply_cut_off: str = REPLY_CUT_OFF
    json_correction: str = JSON_CORRECTION
    decide_note: str = DECIDE_NOTE
    json_note: str = JSON_NOTE
    not_finished: str = NOT_FINISHED
    no_progress: str = NO_PROGRESS
    no_decision: str = NO_DECISION
    step_unfinished: str = STEP_UNFINISHED
    step_cut_off: str = STEP_CUT_OFF
    step_no_report: str = STEP_NO_REPORT
    tool_step_not_run: str = TOOL_STEP_NOT_RUN
    tool_step_no_tool: str = TOOL_STEP_NO_TOOL
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


# --- `replan check` (replan.graphs.server_check): small probes of a model server -------------
# Each probe asks a cooperative model for something it can clearly do in a few tokens.

CHECK_PLAIN = "Reply with the single word OK."
CHECK_TOOL = "Tell the current time in a city."
CHECK_TOOL_CITY = "The name of the city."
CHECK_ONE_CALL = "Call the tool `get_time` with city 'Paris'."
CHECK_TWO_CALLS = (
    "Call the tool `get_time` twice in this one reply: once with city 'Paris' and once with "
    "city 'Tokyo'."
)
CHECK_SYSTEM = "You decide how work on an objective goes on: plan steps, or give the answer."
CHECK_PLAN = (
    "Objective: tell the current time in Paris. Call `plan` with one step: "
    "'Look up the time in Paris'."
)
CHECK_RESPOND = (
    "Objective: name the capital of France. The work is done and the answer is Paris: give "
    "the final answer 'Paris' now (`respond`), no further steps."
)
CHECK_STREAM = "Count from 1 to 20, the numbers separated by spaces, and nothing else."
