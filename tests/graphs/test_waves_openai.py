"""Waves of steps through the real ChatOpenAI client and the scripted server: what overlaps in
time is measured on the server (when each request arrived and was answered), not guessed. The
steps of a wave meet on the server (`tests.support.gathering`) instead of each waiting a fixed
time, so the tests are quick and a busy machine cannot make them fail."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from replan.graphs.context import Context
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.testing import ScriptedOpenAIServer
from replan.testing import plan_script as script
from tests.support.fake_models import ANSWER_CALLS, Mode, both_modes, run, stream
from tests.support.gathering import Gathering

SEQUENTIAL_HOLD = 0.1
"""How long each step of a chain is held: two of them sent together would overlap."""


@pytest.fixture
def clock() -> script.Clock:
    return script.Clock()


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, clock: script.Clock) -> Iterator[ScriptedOpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with ScriptedOpenAIServer(clock) as scripted:
        yield scripted


def _context(server: ScriptedOpenAIServer, **overrides: Any) -> Context:
    return Context(model="scripted-model", base_url=server.base_url, **overrides)


def _overlap(first: script.Span, second: script.Span) -> bool:
    return first.start < second.end and second.start < first.end


@both_modes
def test_independent_steps_run_at_the_same_time(
    server: ScriptedOpenAIServer, clock: script.Clock, mode: Mode
) -> None:
    clock.latency = Gathering([range(1, 9)])
    graph = build_plan_execute_graph(task_tools="compact")
    result = run(graph, "Survey in 8 parallel steps", mode, context=_context(server))

    assert result["response"].startswith("All 8 steps")
    spans = clock.executor_spans()
    assert sorted(spans) == list(range(1, 9))
    assert clock.most_at_once() == 8  # the default max_concurrency, also in sync runs
    assert max(s.start for s in spans.values()) < min(s.end for s in spans.values())
    roles = [span.call.role for span in clock.spans]
    assert roles.count("replanner") == 1  # one wave, one replanner call
    assert [done["id"] for done in result["executed_steps"]] == list(range(1, 9))


@both_modes
def test_max_concurrency_bounds_how_many_steps_overlap(
    server: ScriptedOpenAIServer, clock: script.Clock, mode: Mode
) -> None:
    clock.latency = Gathering([[1, 2], [3, 4], [5]])
    context = _context(server, max_concurrency=2, replan="when_needed")
    result = run(
        build_plan_execute_graph(task_tools="compact"),
        "Survey in 5 parallel steps",
        mode,
        context=context,
    )

    assert result["response"].startswith("All 5 steps")
    assert clock.most_at_once() == 2
    spans = clock.executor_spans()
    assert _overlap(spans[1], spans[2]) and _overlap(spans[3], spans[4])
    assert spans[2].end <= spans[3].start and spans[4].end <= spans[5].start  # waves of 2, 2, 1
    assert [span.call.role for span in clock.spans].count("replanner") == 1


@both_modes
def test_plain_string_steps_stay_sequential(
    server: ScriptedOpenAIServer, clock: script.Clock, mode: Mode
) -> None:
    clock.latency = Gathering([[1], [2], [3]], hold=SEQUENTIAL_HOLD)
    result = run(
        build_plan_execute_graph(task_tools="compact"),
        "Ship it in 3 steps",
        mode,
        context=_context(server),
    )

    assert result["response"].startswith("All 3 steps")
    assert clock.most_at_once() == 1
    assert script.executor_steps([span.request for span in clock.spans]) == [1, 2, 3]
    roles = [span.call.role for span in clock.spans]
    # as before dependencies
    assert roles == ["planner", *["executor", "replanner"] * 3, *["answer"] * ANSWER_CALLS]


@both_modes
def test_a_diamond_runs_in_three_waves_and_the_last_step_sees_its_dependencies(
    server: ScriptedOpenAIServer, clock: script.Clock, mode: Mode
) -> None:
    clock.latency = Gathering([[1], [2, 3, 4, 5], [6]])
    context = _context(server, replan="when_needed")
    result = run(
        build_plan_execute_graph(task_tools="compact"),
        "Build it in 6 diamond steps",
        mode,
        context=context,
    )

    assert result["response"].startswith("All 6 steps")
    spans = clock.executor_spans()
    middle = [spans[i] for i in (2, 3, 4, 5)]
    assert all(spans[1].end <= s.start for s in middle)
    assert clock.most_at_once() == 4
    assert all(s.end <= spans[6].start for s in middle)
    last = script.prompt_text(spans[6].request)
    assert all(f"RESULT {i}/6" in last for i in (2, 3, 4, 5))
    assert "RESULT 1/6" not in last  # only the results of the steps it depends on
    assert [span.call.role for span in clock.spans].count("replanner") == 1


@both_modes
def test_when_needed_a_chain_of_n_costs_n_plus_2_model_calls_and_the_answer(
    server: ScriptedOpenAIServer, clock: script.Clock, mode: Mode
) -> None:
    context = _context(server, replan="when_needed")
    result = run(
        build_plan_execute_graph(task_tools="compact"), "Ship it in 5 steps", mode, context=context
    )

    assert result["response"].startswith("All 5 steps")
    assert len(clock.spans) == 5 + 2 + ANSWER_CALLS
    first, last = (script.prompt_text(clock.executor_spans()[i].request) for i in (2, 5))
    assert abs(len(first) - len(last)) < 10  # a step's prompt does not grow along the chain


@both_modes
def test_updates_stream_each_step_result_as_it_arrives(
    server: ScriptedOpenAIServer, clock: script.Clock, mode: Mode
) -> None:
    slow_first = {1: 0.9, 2: 0.1, 3: 0.5}

    def latency(request: dict[str, Any]) -> float:
        call = script.classify(request)
        return slow_first.get(call.step or 0, 0.0) if call.role == "executor" else 0.0

    clock.latency = latency
    chunks = stream(
        build_plan_execute_graph(task_tools="compact"),
        "Look around in 3 parallel steps",
        mode,
        stream_mode="updates",
        context=_context(server),
    )
    executors = [c["executor"]["executed_steps"][0]["id"] for c in chunks if "executor" in c]
    assert executors == [2, 3, 1]  # in the order they finished
    last_model_node = "answer" if ANSWER_CALLS else "replanner"
    assert [next(iter(c)) for c in chunks][-2:] == [last_model_node, "reply"]
