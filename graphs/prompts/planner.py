"""The planner's texts (with and without tool steps, sent after the conversation in the user
message), what follows the last answer on a follow-up, and the `plan` decision's descriptions."""

from __future__ import annotations

PLANNER = """Plan the objective above: call `plan` once with its steps, in order. Each step goes \
to an agent that sees only the objective, its own text and the results of the steps it depends \
on, so say in each step what it needs and what it must produce. A plain string runs after the \
step before it; {{"step": "...", "depends_on": [N, ...]}} waits for steps N, ... (an empty list: \
none). Steps are numbered in order from 1, unless told otherwise above. Plan only what the tools \
or writing can do; the last step gives the answer.{computing}"""
"""What the planner is asked, after the conversation, when the run offers no tool steps."""

PLANNER_COMPUTING = """
Work out figures in steps that use {tools}."""
"""What `PLANNER` says in `{computing}` when the run has a computing tool (else nothing)."""

PLANNER_TOOL_STEPS = """Call `plan` once with the steps of the objective above, numbered from \
1 unless told otherwise. A tool step {{"tool": NAME, "args": {{...}}}} calls a tool; in args "$N" \
is step N's result, "$N.name" or "$N[0]" a part of it, e.g. {example}. Look up ids and names, \
never guess; a call needing what step N gives is {{"tool": NAME, "depends_on": [N]}}, its args \
written once N is done. Other steps are texts for an agent seeing only them, the objective and \
the results they depend on ({{"step": "...", "depends_on": [N]}}; a plain string: the step \
before). Add no step to give the answer.{computing}"""
"""What the planner is asked when the run offers tool steps (`PLANNER` otherwise)."""

PLANNER_SEALED = """ This run is sealed: give each text step that changes anything the "tools" it \
may use. Steps planned later may act only with the tools this plan names."""
"""What follows the planner's text in a sealed run (`Context.plan_integrity`)."""

PLAN_TOOL = "Submit the plan: the steps to carry out, in order."
PLAN_STEPS = (
    "The steps: a string runs after the item before it; an object with `step` and `depends_on` "
    "(step numbers) waits for the steps named."
)
PLAN_STEPS_TOOLS = "The steps: tool steps, text steps, or plain strings."
"""`plan_steps` when the run offers tool steps (the planner's text says the rest)."""

PLANNER_EARLIER = """Results of the steps behind this answer, by number (the next plan may name \
them in `depends_on`, or as "$N" in a tool step's args):
{executed_steps}

Number the steps of the next plan from {next}."""
"""What the planner is shown after the last answer of the conversation, when the turn it ended
carried out steps."""
