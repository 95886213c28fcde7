"""The replanner's texts: what it is asked (with and without tool steps) and its briefing of the
turn so far, both in the user message, and the `respond` decision's descriptions."""

from __future__ import annotations

REPLANNER = """If the results below meet the objective, call {respond}. Else call `plan` with only \
the steps still to do (a string runs after the step before it; {{"step": "...", "depends_on": \
[N]}} waits for steps N). A step kept word for word keeps its number; a new one sees only its \
text and the results it depends on, so copy in what it needs. A step that failed for lack of a \
tool fails again: plan another way, or respond with what the results allow."""
"""What the replanner is asked, before its briefing (`REPLANNER_TASK`), when the run offers no
tool steps."""

RESPOND_WITH_ANSWER = """`respond` with the full answer"""
"""How the replanner texts' `{respond}` asks for the answer in the decision
(`answer="decision"`)."""
RESPOND_THEN_ANSWER = """`respond` with one sentence saying the objective is met (the answer is \
written next)"""
"""How the replanner texts' `{respond}` asks for a note only, the answer being written next
(`answer="plain"`)."""

REPLANNER_TASK = """# Objective
{objective}

# Steps done, with their results
{executed_steps}

# Steps still planned
(new steps are numbered from {next})
{plan}{tasks}{repeated}"""
"""The replanner's briefing. What a turn's replans share comes first (the objective, then the
steps done, which only grow), what each changes last (the steps still planned), so that a
server caching the last prompt (llama-server) reads the done steps' results once a turn."""

REPLANNER_TOOL_STEPS = """Decide what happens next on the objective below. When the results meet \
it, call {respond}. Else call `plan` with only the steps still to do, numbered from the number \
given below: tool steps (with values from the results, or "$N", "$N.name") and text steps; a \
planned NAME(…) whose steps are done becomes the tool steps it stands for. A failed step fails \
again unless changed.{computing}"""
"""What the replanner is asked when the run offers tool steps (`REPLANNER` otherwise)."""

REPLANNER_COMPUTING = """ Work out no figure yourself: plan a tool step of {tools} on the results \
("$N"), then respond with the figure it gives."""
"""What `REPLANNER_TOOL_STEPS` says in `{computing}` when the run has a computing tool."""

REPEATED_STEPS = """

# Steps carried out more than once
These steps were planned again after they were done, and carried out again; the last result is \
below. Planning one of them once more ends the run as making no progress: plan only what is still \
missing, or respond.
{steps}"""
UNMADE_CALLS = """You responded, but calls of the plan failed or were not made:
{steps}
Call `plan` with the steps still to do. Where a result says what must be done first, plan the \
call that does it, then the failed call again; change a call whose values were wrong; add any \
other call the objective needs."""
"""What the replanner is told, in a plan-only request, after a response while calls of the plan
failed or were not made (a small model answers after a failed call as if all were made, and
does not act on what a tool's error says must come first)."""
RESPOND_TOOL = "Give the user the final answer, when the objective has been met."
RESPOND_RESPONSE = "The complete answer for the user, saying plainly what could not be done."
RESPOND_NOTE = "One short sentence saying that the objective is met."

REPLANNER_EARLIER = """

Earlier in this conversation:
{exchanges}"""
"""What follows the objective in the replanner's briefing on a follow-up turn."""
