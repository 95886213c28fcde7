"""What the model is told about the form of a decision: corrections of unusable replies and
the notes of the `decide` and JSON ways of asking."""

from __future__ import annotations

CORRECTION = """Your last reply could not be used: {problem}. You sent: {sent}
Answer again by calling {expected} with valid arguments."""

REPLY_CUT_OFF = """the reply was cut off at the limit of {max_tokens} tokens before it was \
complete; keep the next one brief and end it right after the tool call"""
JSON_CORRECTION = """Your last reply could not be used: {problem}. You sent: {sent}
Answer again with one JSON object holding {expected}, and nothing else."""

DECIDE_NOTE = """The decisions come as one tool, `decide`: give it `steps` to plan, or `response` \
to respond; exactly one of them."""

JSON_NOTE = """Reply with one JSON object and nothing else: {fields}."""
DECIDE_TOOL = (
    "Give your decision: `steps` to plan the work still to do, or `response` to give the "
    "final answer; exactly one of them."
)
