"""The texts of the plain-text answer (`Context.answer="plain"`)."""

from __future__ import annotations

ANSWER = """Write the final answer to the objective below from the results of its steps. Use only \
what they say, copy figures and names exactly, and answer directly, in plain text."""
"""What the plain-text answer is asked (`Context.answer="plain"`), before its task."""

ANSWER_TASK = """# Objective
{objective}

# Results of the steps
{executed_steps}

Write the final answer now."""
