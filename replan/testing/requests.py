"""Readers of a chat completion request as the scripted server receives it (a JSON dict), for
responders: its text, the tools it offers or forces, the fields a decision asks for, and what
replan's briefings say (the objective, the executor's step, the steps still planned)."""

from __future__ import annotations

import re
from typing import Any

from replan.graphs.prompts import DEFAULT_PROMPTS


def message_text(message: dict[str, Any]) -> str:
    """The text of one request message (its text parts joined)."""
    content = message.get("content") or ""
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def prompt_text(request: dict[str, Any]) -> str:
    """Every message text of `request`, joined."""
    return "\n".join(message_text(m) for m in request.get("messages", []))


def last_user_text(request: dict[str, Any]) -> str:
    """The text of the request's last user message ("" without one)."""
    users = [m for m in request.get("messages") or [] if m.get("role") == "user"]
    return message_text(users[-1]) if users else ""


def tool_names(request: dict[str, Any]) -> list[str]:
    """The names of the tools the request offers."""
    return [t.get("function", {}).get("name", "") for t in request.get("tools") or []]


def forced_tool(request: dict[str, Any]) -> str | None:
    """The tool the request forces by name, if any."""
    choice = request.get("tool_choice")
    if isinstance(choice, dict):
        return str(choice.get("function", {}).get("name"))
    return None


def first_param(request: dict[str, Any], tool: str, default: str) -> str:
    """The first parameter name the request's schema gives `tool` (e.g. `steps`)."""
    for spec in request.get("tools") or []:
        function = spec.get("function", {})
        if function.get("name") == tool:
            return next(iter(function.get("parameters", {}).get("properties", {})), default)
    return default


def asked_fields(request: dict[str, Any]) -> set[str]:
    """The fields a decision request asks for as JSON (`response_format`) or in its one
    `decide` tool (other decision modes than forced `plan`/`respond` calls)."""
    response_format = request.get("response_format")
    if isinstance(response_format, dict):
        schema = response_format.get("schema") or response_format.get("json_schema", {}).get(
            "schema", {}
        )
        return set(schema.get("properties", {}))
    for spec in request.get("tools") or []:
        if spec.get("function", {}).get("name") == "decide":
            return set(spec["function"].get("parameters", {}).get("properties", {}))
    return set()


def steps_schema(request: dict[str, Any]) -> dict[str, Any]:
    """The JSON schema of the `steps` a plan decision asks for, in any decision mode (a `plan`
    or `decide` tool, or `response_format`); {} when the request asks for none."""
    response_format = request.get("response_format")
    if isinstance(response_format, dict):
        schema = response_format.get("schema") or response_format.get("json_schema", {}).get(
            "schema", {}
        )
        steps: dict[str, Any] = schema.get("properties", {}).get("steps", {})
        return steps
    for spec in request.get("tools") or []:
        function = spec.get("function", {})
        if function.get("name") in ("plan", "decide"):
            found: dict[str, Any] = function.get("parameters", {}).get("properties", {})
            return found.get("steps", {})
    return {}


def step_tools(request: dict[str, Any]) -> list[str]:
    """The tools a plan decision offers as tool steps: the one `enum` value of the `tool` of
    each tool-step object its `steps` schema offers (none when it offers none)."""
    branches = steps_schema(request).get("items", {}).get("anyOf", [])
    return [
        branch["properties"]["tool"]["enum"][0]
        for branch in branches
        if "tool" in branch.get("properties", {})
    ]


ANSWER_ASKS = (DEFAULT_PROMPTS.answer, DEFAULT_PROMPTS.answer_stopped)
"""How the answer node's request starts, from the results of steps (after the run's head)."""
UNMADE_CALLS_ASKS = DEFAULT_PROMPTS.unmade_calls.split("{")[0]
"""How the message that turns a replanner's request into a plan-only one starts."""


def is_unmade_calls_request(request: dict[str, Any]) -> bool:
    """Whether `request` is the replanner's plan-only request after a response that left
    calls of the plan unmade (`Prompts.unmade_calls`), corrections included."""
    users = [m for m in request.get("messages") or [] if m.get("role") == "user"]
    return any(message_text(m).startswith(UNMADE_CALLS_ASKS) for m in users)


def is_answer_request(request: dict[str, Any]) -> bool:
    """Whether `request` asks for the final answer in plain text (replan's `answer` node, with
    its default prompts): its user message starts with an answer prompt, or its last one ends
    with the note of a direct answer (`is_direct_answer`)."""
    users = [m for m in request.get("messages") or [] if m.get("role") == "user"]
    return bool(users) and (
        message_text(users[0]).startswith(ANSWER_ASKS) or is_direct_answer(request)
    )


def is_direct_answer(request: dict[str, Any]) -> bool:
    """Whether `request` asks for the answer of a run with no tools, from the conversation."""
    return last_user_text(request).endswith(DEFAULT_PROMPTS.answer_direct)


def _common_start(first: str, second: str) -> str:
    end = next((i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b), 0)
    return first[:end]


PLANNER_ASKS = _common_start(DEFAULT_PROMPTS.planner, DEFAULT_PROMPTS.planner_tool_steps)
"""How the planner's instructions start (after the user's objective, in the same message)."""


def objective(request: dict[str, Any]) -> str:
    """The objective a planner request carries: its last user message, without the planner's
    own instructions that follow it."""
    return last_user_text(request).split(f"\n\n{PLANNER_ASKS}")[0]


def _heading(template: str, placeholder: str) -> str:
    """The heading of a briefing `template` that `{placeholder}` follows ("# Your step\n"), up to
    a placeholder of its own ("# Steps still planned (new steps are numbered from ")."""
    return template.split(f"{{{placeholder}}}")[0].rsplit("\n\n", 1)[-1].split("{", 1)[0]


_STEP_HEADING = _heading(DEFAULT_PROMPTS.executor_task, "step")
"""The heading the step follows at the end of replan's executor briefing."""
_PLANNED_HEADING = _heading(DEFAULT_PROMPTS.replanner_task, "plan")
"""The heading of the steps still planned in replan's replanner briefing."""
_PLAN_LINE = re.compile(r"\d+\. (.*?)(?: \[after: (nothing|\d+(?:, \d+)*)\])?")


def executor_step(request: dict[str, Any]) -> str | None:
    """The step replan's executor is asked to carry out (what ends its briefing, after
    `_STEP_HEADING`), whatever its text; None for a request with no such briefing."""
    for message in request.get("messages") or []:
        said = message_text(message)
        if message.get("role") == "user" and _STEP_HEADING in said:
            return said.rsplit(_STEP_HEADING, 1)[1]
    return None


def _planned_listing(request: dict[str, Any]) -> str | None:
    prompt = prompt_text(request)
    if _PLANNED_HEADING not in prompt:
        return None
    return prompt.split(_PLANNED_HEADING, 1)[1].split("\n", 1)[-1].split("\n\n", 1)[0]


def planned_numbers(request: dict[str, Any]) -> list[int]:
    """The numbers of the steps replan's replanner briefing lists as still planned, in order
    (none for a request with no such list)."""
    listing = _planned_listing(request) or ""
    return [int(match[1]) for match in re.finditer(r"^(\d+)\. ", listing, re.M)]


def planned_steps(request: dict[str, Any]) -> list[Any] | None:
    """The steps replan's replanner briefing lists as still planned, as the `plan` tool takes
    them (a text, or `{"step", "depends_on"}` when the list says what a step waits for); None
    for a request with no such list."""
    listing = _planned_listing(request)
    if listing is None:
        return None
    items: list[Any] = []
    for line in listing.splitlines():
        if (match := _PLAN_LINE.fullmatch(line)) is None:
            continue
        if match[2] is None:
            items.append(match[1])
        else:
            after = [] if match[2] == "nothing" else [int(n) for n in match[2].split(", ")]
            items.append({"step": match[1], "depends_on": after})
    return items
