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


def test_the_tutorial_is_scripted_at_its_ceiling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "local")
    figures = measure(0.0, ["tutorial"])
    look_ups, chain = figures["look-ups"]["tutorial"], figures["chain"]["tutorial"]
    # planner, the agent's one reply with all eight look-ups, its report, the replanner
    assert (look_ups.model_calls, look_ups.tool_calls) == (4, 8)
    assert f"{total_price():.2f} EUR" in look_ups.answer
    # planner, ten additions one after the other, the agent's report, the replanner
    assert (chain.model_calls, chain.tool_calls) == (CHAIN + 3, CHAIN)
    assert f"The result is {CHAIN}." == chain.answer
