"""What the model is told about the form of a decision: corrections of unusable replies and
the notes of the `decide` and JSON ways of asking."""

from __future__ import annotations

CORRECTION = """Your last reply could not be used: {problem}. You sent: {sent}
Answer again by calling {expected} with valid arguments."""

REPLY_CUT_OFF = """the reply was cut off at the limit of {max_tokens} tokens before it was \
complete; keep the next one brief and end it right after the tool call"""
JSON_CORRECTION = """Your last reply could not be used: {problem}. You sent: {sent}
Answer again with one JSON object holding {expected}, and nothing else."""

DECIDE_NOTE = """The two tools above come here as one tool, `decide`: call it with `steps` \
where this text says to call `plan`, or with `response` where it says to call `respond`; give \
exactly one of the two."""

JSON_NOTE = """No tools are offered here: instead of calling a tool, answer with one JSON \
object and nothing else, holding exactly one of these keys:
{fields}"""
DECIDE_TOOL = (
    "Give your decision: `steps` to plan the work still to do, or `response` to give the "
    "final answer; exactly one of them."
)
