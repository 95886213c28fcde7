"""Each decision mode is a strategy in its own module, found by its name; `replan check` and the
scripted server read what the strategies declare."""

from __future__ import annotations

from typing import get_args

import pytest
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from replan.cli.probes import MODE_PROBES, ProbeName
from replan.graphs.context import DECISION_MODES, DecisionMode
from replan.graphs.model.decision_modes.registry import STRATEGIES, asks_json, fallbacks_after
from replan.graphs.plan.decisions import plan_tool, respond_tool
from replan.graphs.prompts import DEFAULT_PROMPTS
from replan.testing import LLAMA_CPP_PYTHON, Quirks, ScriptedOpenAIServer, text


def test_every_mode_has_its_strategy_under_its_own_name() -> None:
    assert list(STRATEGIES) == list(DECISION_MODES)
    for name, way in STRATEGIES.items():
        assert way.name == name
        assert type(way).__module__.endswith(f".decision_modes.{name}")
        assert way.after_mistakes is None or way.after_mistakes in DECISION_MODES


def test_refusals_fall_back_through_the_modes_in_their_declared_order() -> None:
    assert fallbacks_after(DECISION_MODES[0]) == list(DECISION_MODES)
    assert fallbacks_after(DECISION_MODES[-1]) == [DECISION_MODES[-1]]


def test_replan_check_probes_the_requests_each_mode_sends() -> None:
    """Each mode's probes, written out: the planner's request (one decision offered) and the
    replanner's (two), as that mode asks them."""
    assert MODE_PROBES == {
        "tool_required": ("named", "required"),
        "tool_named": ("named", "decide"),
        "json_schema": ("json_schema",),
        "json_object": ("json_object",),
    }
    assert {name for names in MODE_PROBES.values() for name in names} <= set(get_args(ProbeName))
    offered = {mode: [count for _, count in way.probes] for mode, way in STRATEGIES.items()}
    assert offered == {
        "tool_required": [1, 2],
        "tool_named": [1, 2],
        "json_schema": [2],
        "json_object": [2],
    }


@pytest.mark.parametrize("mode", DECISION_MODES)
def test_a_strategy_recognises_the_requests_it_sends(mode: DecisionMode) -> None:
    tools = [plan_tool(DEFAULT_PROMPTS), respond_tool(DEFAULT_PROMPTS)]
    way = STRATEGIES[mode]
    with ScriptedOpenAIServer(lambda _: text("{}")) as server:
        model = ChatOpenAI(model="m", api_key=SecretStr("test"), base_url=server.base_url)
        request = way.request(model, [HumanMessage("go")], tools, DEFAULT_PROMPTS)
        request.model.invoke(request.messages)
        (body,) = server.requests
    assert way.sent(body)
    assert not any(other.sent(body) for name, other in STRATEGIES.items() if name != mode)
    assert request.json == asks_json(mode)


def test_a_server_refusing_modes_refuses_the_requests_of_those_modes_only() -> None:
    assert LLAMA_CPP_PYTHON.refused_modes == ("tool_required", "json_schema")
    refusing = Quirks(refused_modes=("json_object",))
    asked = {"messages": [], "response_format": {"type": "json_object", "schema": {}}}
    plain = {"messages": []}
    assert refusing.answer(asked, text("x")).status == 500
    assert refusing.answer(plain, text("x")).status == 200
