"""The plan-execute benchmark's scripted model gives every design the same objective; designs
whose plans are plain strings get the same steps without their dependencies."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.bench_plan_execute import _answer

OBJECTIVE = "Benchmark run in 8 parallel steps"


def _request(**asks: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": OBJECTIVE}], **asks}


def _steps(reply: Any) -> list[Any]:
    (call,) = reply.calls
    arguments = json.loads(call.arguments)
    return list(arguments.get("steps") or arguments["action"]["steps"])


@pytest.mark.parametrize("plain", [True, False])
def test_the_planners_read_the_same_shape_words(plain: bool) -> None:
    tutorial = _request(response_format={"type": "json_schema", "json_schema": {"name": "Plan"}})
    role, reply = _answer(tutorial, 0, plain)
    assert role == "planner"
    assert _steps(reply) == [f"Step {i} of 8 [benchmark run in 8 parallel]" for i in range(1, 9)]
    replan = _request(
        tools=[{"type": "function", "function": {"name": "plan", "parameters": {}}}],
        tool_choice={"type": "function", "function": {"name": "plan"}},
    )
    role, reply = _answer(replan, 0, plain)
    steps = _steps(reply)
    assert role == "planner" and len(steps) == 8
    if plain:  # replan restricted to strings ("sequential"): the same steps, no dependencies
        assert all(isinstance(step, str) for step in steps)
    else:
        assert all(step["depends_on"] == [] for step in steps)
