"""The replanner's texts: its system prompts, its briefing of the run so far, and the
`respond` decision's descriptions."""

from __future__ import annotations

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
RESPOND_THEN_ANSWER = """`respond` with one short sentence saying that the objective is met \
(the full answer is written next, from the results of the steps)"""

REPLANNER_TASK = """# Objective
{objective}

# Steps still planned
{plan}

# Steps already done, with their results
{executed_steps}

# Task list
{tasks}{repeated}

Steps of a new plan are numbered from {next}."""

REPLANNER_TOOL_STEPS = """If the results below meet the objective, call {respond}. Else call \
`plan` with only the steps still to do, as in a plan: tool steps (with \
figures from the results, or "$N") and text steps. A failed step fails again unless \
changed.{computing}"""

REPLANNER_COMPUTING = """ Work out no figure yourself: while a sum, a difference, a product or \
which figure is largest is still needed, plan it as a tool step of {tools} on the results \
("$N"); once a result holds it, respond with that figure."""

REPEATED_STEPS = """

# Steps carried out more than once
These steps were planned again after they were done, and carried out again; the last result \
is below. Planning one of them once more ends the run as making no progress: plan only what is \
still missing, or respond.
{steps}"""
RESPOND_TOOL = "Give the user the final answer, when the objective has been met."
RESPOND_RESPONSE = "The complete answer for the user."
RESPOND_NOTE = "One short sentence saying that the objective is met."

REPLANNER_EARLIER = """

Earlier in this conversation:
{exchanges}"""
"""What follows the objective in the replanner's briefing on a follow-up turn."""
