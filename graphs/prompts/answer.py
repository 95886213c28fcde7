"""The texts of the plain-text answer (`replan.graphs.nodes.answer`): after a respond note
(`Context.answer="plain"`), after a turn that stopped short, and of a turn with nothing to carry
out."""

from __future__ import annotations

ANSWER = """Write the final answer to the objective below from the results of its steps. Use only \
what they say, copy figures and names exactly, and answer directly, in plain text."""
"""What the plain-text answer is asked (`Context.answer="plain"`), before its task."""

ANSWER_TASK = """# Objective
{objective}

# Results of the steps
{executed_steps}

Write the final answer now."""

ANSWER_STOPPED = """The steps below stopped before meeting the objective. Give the best answer \
their results allow, copying figures and names exactly, then say plainly in one sentence what \
could not be done. Plain text."""
"""What the answer is asked, before its task, for a turn that stopped after carrying out steps."""

ANSWER_DIRECT = """Answer the request above directly, in plain text. Do every part it asks for; \
where it asks you to choose, name your one choice plainly."""
"""What follows the conversation, in its last user message, when the run has no tools: the
answer is written at once."""
