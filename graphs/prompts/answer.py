"""The texts of the plain-text answer (`Context.answer="plain"`)."""

from __future__ import annotations

ANSWER = """You write the final answer to a user's objective from the results of the work \
done on it. Use only what the results say. Where a result already gives a figure or a name \
the objective asks for, copy it exactly instead of working it out again. Answer the \
objective directly, in plain text, without a preamble."""

ANSWER_TASK = """# Objective
{objective}

# Results of the steps
{executed_steps}

Write the final answer now."""
