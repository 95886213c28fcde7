"""The executor's texts: what it is asked and its step's briefing (one user message), the
reminders and corrections of its tool loop, and the notes that stand as the result of a step that
did not finish."""

from __future__ import annotations

FAILED_PREFIX = "FAILED:"
"""How an executor's report starts when it could not do its step (see `EXECUTOR`)."""

EXECUTOR = f"""Do the step below, one step of a larger plan. Use a tool wherever one fits; never \
make up a figure a tool could give.{{computing}} Then report briefly what you found, with figures: \
later steps see only this. If it cannot be done, start with "{FAILED_PREFIX}" and say why.\
{{task_tools}}"""
"""What the executor is asked, in the user message before its step's briefing (`EXECUTOR_TASK`)."""

EXECUTOR_TASK_TOOLS = """ Task tools share a list."""
"""What `EXECUTOR` says in `{task_tools}` when the run offers the task tools (else nothing)."""

EXECUTOR_COMPUTING = """ Work out figures with {tools}."""
"""What `EXECUTOR` says in `{computing}` when the run has a computing tool (else nothing)."""

TOOL_REMINDER = """Your report {problem}, yet you called no tool in this step. If {tools} can do \
the step or give that figure, call it now instead of guessing. If none of them fits, give your \
report again."""
"""What the executor is told, once per step, when its report {problem} with no tool call."""
CALL_AS_JSON = """Call {tool} now: answer with its arguments as one JSON object, and nothing \
else."""
"""What a reminded executor is told when the server does not enforce `tool_choice` and the
forced call is asked for as a JSON object of the tool's arguments."""
REMINDER_FAILED = "says the step could not be done"
REMINDER_FIGURES = "gives figures ({figures}) that no tool result or earlier result shows"

EXECUTOR_TASK = """# Objective
{objective}

# Results it builds on
{dependencies}{tasks}

# Your step
{step}"""

TEXT_CALL_CORRECTION = """Your last reply looks like a tool call written as text, and it was not \
run: {problem}. To use a tool, call one of {tools} with a JSON object of arguments. When the step \
is done, answer with a plain-text report instead."""

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

TOOL_STEP_NOT_RUN = """Not run: it refers to the result of step {steps}, which did not end done."""
"""The result of a tool step whose referenced steps failed or are unfinished."""

TOOL_STEP_WHOLE_RESULT = """Not run: `{argument}` takes one value, and {shape}."""
"""The result of a tool step whose reference puts a JSON object or list into a string (`{shape}`
says what it is and how to name a part of it)."""

TOOL_STEP_NO_FIELD = """Not run: "{reference}" names nothing: {problem}."""
"""The result of a tool step whose reference's path (`$N.field`, `$N[0]`) names nothing in the
result; `{problem}` says what is there."""

TOOL_STEP_NO_TOOL = """Not run: this run has no tool `{tool}` for tool steps."""
"""The result of a tool step naming a tool the run does not have (e.g. resumed without it)."""
