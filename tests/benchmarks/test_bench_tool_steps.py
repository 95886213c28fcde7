"""The tool-steps benchmark's scripted runs hold what its targets say, without the latency."""

from __future__ import annotations

import pytest

from benchmarks.bench_tool_steps import CHAIN, TARGETS, measure, total_price


def test_tool_steps_meet_the_call_targets_and_answer_right(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "local")
    figures = measure(0.0, ["tool steps", "tool_steps off"])
    for objective, (most_calls, _) in TARGETS.items():
        mine, off = figures[objective]["tool steps"], figures[objective]["tool_steps off"]
        assert mine.model_calls <= most_calls < off.model_calls
        assert mine.tool_calls == off.tool_calls  # the same work, without the executor loops
    assert f"{total_price():.2f} EUR" in figures["look-ups"]["tool steps"].answer
    assert f"The result is {CHAIN}." == figures["chain"]["tool steps"].answer
