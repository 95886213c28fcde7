"""A deterministic plan–execute–replan model for tests: a pure function of the request.

`respond(request)` plays every role of the graph, recognised by the tools the request offers:

- planner — the request forces (or only offers) the `plan` tool: a plan of N steps named
  ``Step i of N [topic]`` where topic is the objective's first words and N comes from
  "in N steps" in the objective (default 3);
- replanner — offers `plan` and `respond`: `plan` with the steps whose result marker is not yet
  in the prompt, or `respond` once every step's is;
- executor — anything else: a text result carrying the marker ``RESULT i/N``.

Since nothing is remembered between calls, two processes may share one server and a run may
be killed and resumed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tests.scripted_openai import Reply, text, tool_call

DEFAULT_STEPS = 3
_STEP = re.compile(r"Step (\d+) of (\d+) \[([a-z0-9 ]*)\]")
_RESULT = re.compile(r"RESULT (\d+)/(\d+)")
_STEP_COUNT = re.compile(r"\bin (\d+) steps\b", re.IGNORECASE)


@dataclass(frozen=True)
class Call:
    """What a request asks for: `role` is planner/executor/replanner; `step` for the executor."""

    role: str
    step: int | None = None


def step_text(index: int, total: int, topic: str) -> str:
    """The text of step `index` (1-based) of a `total`-step plan."""
    return f"Step {index} of {total} [{topic}]"


def _content(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def _prompt(request: dict[str, Any]) -> str:
    return "\n".join(_content(m) for m in request.get("messages", []))


def _tool_names(request: dict[str, Any]) -> list[str]:
    return [t.get("function", {}).get("name", "") for t in request.get("tools") or []]


def _forced_tool(request: dict[str, Any]) -> str | None:
    choice = request.get("tool_choice")
    if isinstance(choice, dict):
        return str(choice.get("function", {}).get("name"))
    return None


def _first_param(request: dict[str, Any], tool: str, default: str) -> str:
    """The first parameter name the request's schema gives `tool` (e.g. `steps`)."""
    for spec in request.get("tools") or []:
        function = spec.get("function", {})
        if function.get("name") == tool:
            return next(iter(function.get("parameters", {}).get("properties", {})), default)
    return default


def _done(prompt: str) -> set[int]:
    return {int(match[0]) for match in _RESULT.findall(prompt)}


def _plan_shape(prompt: str) -> tuple[int, str] | None:
    """(total, topic) from the first step named in the prompt."""
    match = _STEP.search(prompt)
    return (int(match[2]), match[3]) if match else None


def classify(request: dict[str, Any]) -> Call:
    """Which graph node sent `request` and, for the executor, which step it runs."""
    names = _tool_names(request)
    if _forced_tool(request) == "plan" or names == ["plan"]:
        return Call("planner")
    if "plan" in names and "respond" in names:
        return Call("replanner")
    prompt = _prompt(request)
    done = _done(prompt)
    pending = sorted(int(m[0]) for m in _STEP.findall(prompt) if int(m[0]) not in done)
    return Call("executor", pending[0] if pending else None)


def _objective(request: dict[str, Any]) -> str:
    users = [m for m in request.get("messages", []) if m.get("role") == "user"]
    return _content(users[-1]) if users else ""


def _plan(request: dict[str, Any]) -> Reply:
    objective = _objective(request)
    count = _STEP_COUNT.search(objective)
    total = int(count[1]) if count else DEFAULT_STEPS
    topic = " ".join(re.sub(r"[^a-z0-9 ]", " ", objective.lower()).split()[:5])
    steps = [step_text(i, total, topic) for i in range(1, total + 1)]
    return tool_call("plan", {_first_param(request, "plan", "steps"): steps})


def _replan(request: dict[str, Any]) -> Reply:
    prompt = _prompt(request)
    shape = _plan_shape(prompt)
    if shape is None:
        return text("scripted replanner: no step found in the prompt")
    total, topic = shape
    done = _done(prompt)
    remaining = [step_text(i, total, topic) for i in range(1, total + 1) if i not in done]
    if remaining:
        return tool_call("plan", {_first_param(request, "plan", "steps"): remaining})
    answer = f"All {total} steps of [{topic}] are done: " + ", ".join(
        f"RESULT {i}/{total}" for i in range(1, total + 1)
    )
    return tool_call("respond", {_first_param(request, "respond", "response"): answer})


def respond(request: dict[str, Any]) -> Reply:
    """The scripted model's answer to `request` (see the module docstring)."""
    call = classify(request)
    if call.role == "planner":
        return _plan(request)
    if call.role == "replanner":
        return _replan(request)
    shape = _plan_shape(_prompt(request))
    if call.step is None or shape is None:
        return text("scripted executor: no pending step found in the prompt")
    return text(f"Executed step {call.step}: RESULT {call.step}/{shape[0]}")


def executor_steps(requests: list[dict[str, Any]]) -> list[int | None]:
    """The step of every executor request in `requests`, in order (for assertions)."""
    return [c.step for c in map(classify, requests) if c.role == "executor"]
