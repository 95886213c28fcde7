"""The executor's texts: its system prompt and step briefing, the reminders and corrections
of its tool loop, and the notes that stand as the result of a step that did not finish."""

from __future__ import annotations

FAILED_PREFIX = "FAILED:"

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

EXECUTOR_COMPUTING = """ Do every sum, difference, product and comparison of figures with \
{tools}, never in your head."""

TOOL_REMINDER = """Your report {problem}, yet you called no tool in this step. If {tools} can \
do the step or give that figure, call it now instead of guessing. If none of them fits, give \
your report again."""
CALL_AS_JSON = """Call {tool} now: answer with its arguments as one JSON object, and nothing \
else."""
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

TEXT_CALL_CORRECTION = """Your last reply looks like a tool call written as text, and it was not \
run: {problem}. To use a tool, call one of {tools} with a JSON object of arguments. When the \
step is done, answer with a plain-text report instead."""

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

TOOL_STEP_NO_TOOL = """Not run: this run has no tool `{tool}` for tool steps."""
