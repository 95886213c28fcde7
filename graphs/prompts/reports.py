"""Texts for people, not for the model: the review question, and the reports that end a run
without meeting its objective."""

from __future__ import annotations

NOT_FINISHED = """The objective was not finished: the run stopped after {max_iterations} \
execute–replan rounds, its limit.

What was done:
{executed_steps}

Steps still planned:
{plan}"""

NO_DECISION = """The objective was not finished: the model gave no usable decision on what to do \
next ({problem}).

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

REVIEW_QUESTION = """Approve this plan? Answer "approve", "reject", or an edited list of steps \
(strings, or {{"step": "...", "depends_on": [positions]}} for a step that waits for other \
steps than the one before it)."""

REJECTED = """The plan was rejected at review, so nothing was carried out.{reason}"""

NO_PLAN = """The objective was not started: the model gave no usable plan ({problem})."""

SUPERSEDED = """The objective was left unfinished: a new message came before it was done."""
