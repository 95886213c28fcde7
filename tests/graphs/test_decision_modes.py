"""Every way of asking for a decision, through the real ChatOpenAI client against the scripted
server imitating real local servers: the same plans, corrections, and a fallback when the
server refuses the way asked."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from replan.graphs.context import DECISION_MODES, Context, DecisionMode
from replan.graphs.errors import ModelUnavailableError
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.testing import (
    LLAMA_CPP,
    LLAMA_CPP_PYTHON,
    OLLAMA,
    Quirks,
    Reply,
    ScriptedOpenAIServer,
    http_error,
    text,
    tool_call,
)
from replan.testing import plan_script as script
from tests.support.fake_models import Mode, both_modes, run, stream

OBJECTIVE = "Compare task queues in 4 diamond steps"


def _context(server: ScriptedOpenAIServer, **overrides: Any) -> Context:
    settings: dict[str, Any] = {"model": "scripted-model", "max_retries": 0, **overrides}
    return Context(base_url=server.base_url, **settings)


def _decisions(server: ScriptedOpenAIServer) -> list[dict[str, Any]]:
    return [r for r in server.requests if script.classify(r).role in ("planner", "replanner")]


def _plans(server: ScriptedOpenAIServer, mode: DecisionMode, run_mode: Mode) -> list[Any]:
    """The plans the planner and replanner made in one run in `mode`."""
    events = stream(
        build_plan_execute_graph(task_tools="compact"),
        OBJECTIVE,
        run_mode,
        stream_mode="updates",
        context=_context(server, decision_mode=mode),
    )
    return [
        update["plan"]
        for event in events
        for node, update in event.items()
        if node in ("planner", "replanner") and update
    ]


@both_modes
def test_every_decision_mode_yields_the_same_plans(
    server: ScriptedOpenAIServer, mode: Mode
) -> None:
    plans = {decision: _plans(server, decision, mode) for decision in DECISION_MODES}

    reference = plans["tool_required"]
    assert reference[0] == [
        {"id": 1, "step": "Step 1 of 4 [compare task queues in 4]", "depends_on": []},
        {"id": 2, "step": "Step 2 of 4 [compare task queues in 4]", "depends_on": [1]},
        {"id": 3, "step": "Step 3 of 4 [compare task queues in 4]", "depends_on": [1]},
        {"id": 4, "step": "Step 4 of 4 [compare task queues in 4]", "depends_on": [2, 3]},
    ]
    assert all(found == reference for found in plans.values()), plans


def test_each_mode_asks_the_server_its_own_way(server: ScriptedOpenAIServer) -> None:
    for decision in DECISION_MODES:
        run(
            build_plan_execute_graph(task_tools="compact"),
            OBJECTIVE,
            context=_context(server, decision_mode=decision),
        )
    asked = [
        (r.get("tool_choice"), (r.get("response_format") or {}).get("type"))
        for r in _decisions(server)
    ]
    plan_choice = {"type": "function", "function": {"name": "plan"}}
    decide_choice = {"type": "function", "function": {"name": "decide"}}
    # planner, then the replanner after each of the 3 waves, per mode
    assert asked == [
        *[(plan_choice, None), *[("required", None)] * 3],
        *[(plan_choice, None), *[(decide_choice, None)] * 3],
        *[(None, "json_schema")] * 4,
        *[(None, "json_object")] * 4,
    ]
    json_object = _decisions(server)[-1]
    assert set(json_object["response_format"]["schema"]["properties"]) == {"steps", "response"}
    assert "tools" not in json_object
    asked = json_object["messages"][-1]["content"]  # the JSON shape is named at the end
    assert asked.endswith(
        "Reply with one JSON object and nothing else: `response` (Give the user the final "
        "answer, when the objective has been met) or `steps` (Submit the plan: the steps to "
        "carry out, in order); not both."
    )


def _corrections(request: dict[str, Any]) -> int:
    return sum("could not be used" in str(m.get("content")) for m in request["messages"])


NEITHER = {"plan": ["Check again"], "answer": "Done"}
MISTAKES: dict[str, list[Reply]] = {
    "json_schema": [text("We are done, I think."), text(json.dumps(NEITHER))],
    "json_object": [text("```json\n[1, 2]\n```"), text(json.dumps({"steps": []}))],
    "tool_named": [tool_call("decide", NEITHER), tool_call("decide", '{"steps": [')],
}
PROBLEMS = {
    "json_schema": ["the reply is not a JSON object", "exactly one of `response` or `steps`"],
    "json_object": ["a JSON list instead of an object", "the fields of the `plan` decision"],
    "tool_named": ["exactly one of `response` or `steps`", "`decide` are not valid JSON"],
}


@pytest.mark.parametrize("decision", list(MISTAKES))
def test_a_reply_that_does_not_validate_is_corrected(
    server: ScriptedOpenAIServer, decision: DecisionMode
) -> None:
    def respond(request: dict[str, Any]) -> Reply:
        tries = _corrections(request)
        if script.classify(request).role == "replanner" and tries < len(MISTAKES[decision]):
            return MISTAKES[decision][tries]
        return script.respond(request)

    server.responder = respond
    result = run(
        build_plan_execute_graph(task_tools="compact"),
        "Sum up in 1 steps",
        context=_context(server, decision_mode=decision),
    )

    assert result["response"].startswith("All 1 steps")
    replanner = [r for r in server.requests if script.classify(r).role == "replanner"]
    told = [r["messages"][-1]["content"] for r in replanner[1:]]
    assert len(told) == 2
    for correction, problem in zip(told, PROBLEMS[decision], strict=True):
        assert problem in correction, correction
    if decision != "tool_named":
        assert "one JSON object" in told[0]


def test_mistakes_past_the_bound_end_the_turn_in_json_mode(server: ScriptedOpenAIServer) -> None:
    server.responder = lambda request: (
        text("no JSON here")
        if script.classify(request).role == "planner"
        else script.respond(request)
    )
    result = run(
        build_plan_execute_graph(task_tools="compact"),
        OBJECTIVE,
        context=_context(server, decision_mode="json_schema"),
    )
    assert result["stop_reason"] == "no_decision"
    assert "the reply is not a JSON object, still" in result["response"]


# --- servers as they really behave ----------------------------------------------------------


@both_modes
def test_llama_cpp_python_refusing_required_falls_back_once_to_a_named_tool(
    server: ScriptedOpenAIServer, mode: Mode
) -> None:
    server.quirks = LLAMA_CPP_PYTHON
    graph = build_plan_execute_graph(checkpointer=InMemorySaver(), task_tools="compact")
    config = {"configurable": {"thread_id": "t"}}
    events = stream(
        graph,
        OBJECTIVE,
        mode,
        config=config,
        stream_mode=["custom", "updates"],
        context=_context(server),
    )

    assert graph.get_state(config).values["response"].startswith("All 4 steps")
    fallback = {
        "refused": "tool_required",
        "asked": "tool_choice 'required'",
        "status": 500,
        "fallback": "tool_named",
        "reason": "refused",
    }
    said = [chunk for kind, chunk in events if kind == "custom"]
    fallbacks = [event for event in said if event["event"] == "decision_fallback"]
    assert [event["fallback"] for event in fallbacks] == [fallback]
    assert {event["node"] for event in fallbacks} <= {"planner", "replanner"}
    state = graph.get_state(config).values
    assert state["decision_mode"] == {"mode": "tool_named", "fallbacks": [fallback]}
    choices = [r.get("tool_choice") for r in _decisions(server)]
    decide = {"type": "function", "function": {"name": "decide"}}
    plan = {"type": "function", "function": {"name": "plan"}}
    assert choices == [plan, "required", decide, decide, decide]  # refused once, never again


def test_a_refused_json_schema_falls_back_to_json_object(server: ScriptedOpenAIServer) -> None:
    server.quirks = LLAMA_CPP_PYTHON
    graph = build_plan_execute_graph(checkpointer=InMemorySaver(), task_tools="compact")
    config = {"configurable": {"thread_id": "t"}}
    result = run(
        graph, OBJECTIVE, config=config, context=_context(server, decision_mode="json_schema")
    )

    assert result["response"].startswith("All 4 steps")
    formats = [(r.get("response_format") or {}).get("type") for r in _decisions(server)]
    assert formats == ["json_schema", *["json_object"] * 4]
    record = graph.get_state(config).values["decision_mode"]
    assert record["mode"] == "json_object"
    assert [(f["refused"], f["asked"]) for f in record["fallbacks"]] == [
        ("json_schema", "response_format json_schema")
    ]


def test_a_run_resumed_after_a_fallback_asks_in_the_fallen_back_mode(
    server: ScriptedOpenAIServer,
) -> None:
    server.quirks = LLAMA_CPP_PYTHON
    graph = build_plan_execute_graph(checkpointer=InMemorySaver(), task_tools="compact")
    config = {"configurable": {"thread_id": "t"}}
    failing = {"step": 2}

    def respond(request: dict[str, Any]) -> Reply:
        if script.classify(request) == script.Call("executor", failing.get("step")):
            return http_error(503, "busy")
        return script.respond(request)

    server.responder = respond
    with pytest.raises(ModelUnavailableError, match="HTTP 503"):
        run(graph, "Compare task queues in 2 steps", config=config, context=_context(server))
    assert graph.get_state(config).values["decision_mode"]["mode"] == "tool_named"
    failing.clear()
    before = len(server.requests)
    result = run(graph, None, config=config, context=_context(server))  # the starting mode

    assert result["response"].startswith("All 2 steps")
    after = [r.get("tool_choice") for r in _decisions(server)[-1:]]
    assert after == [{"type": "function", "function": {"name": "decide"}}]
    assert all(r.get("tool_choice") != "required" for r in server.requests[before:])


def test_a_server_that_fails_every_way_is_unavailable_and_nothing_falls_back(
    server: ScriptedOpenAIServer,
) -> None:
    server.responder = lambda request: (
        http_error(500, "out of memory")
        if script.classify(request).role == "replanner"
        else script.respond(request)
    )
    graph = build_plan_execute_graph(checkpointer=InMemorySaver(), task_tools="compact")
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(ModelUnavailableError, match="HTTP 500: out of memory"):
        run(graph, OBJECTIVE, config=config, context=_context(server))

    assert "decision_mode" not in graph.get_state(config).values
    kinds = [
        r.get("tool_choice") or r["response_format"]["type"]
        for r in server.requests
        if script.classify(r).role == "replanner"
    ]
    assert kinds == [
        "required",
        {"type": "function", "function": {"name": "decide"}},
        "json_schema",
        "json_object",
    ]


def test_a_server_refusing_every_tool_choice_falls_back_to_json_at_the_planner(
    server: ScriptedOpenAIServer,
) -> None:
    server.responder = lambda request: (
        http_error(400, "tool_choice is not supported")
        if request.get("tool_choice") not in (None, "auto")
        else script.respond(request)
    )
    graph = build_plan_execute_graph(checkpointer=InMemorySaver(), task_tools="compact")
    config = {"configurable": {"thread_id": "t"}}
    result = run(graph, OBJECTIVE, config=config, context=_context(server))

    assert result["response"].startswith("All 4 steps")
    asked = [r.get("tool_choice") or r["response_format"]["type"] for r in _decisions(server)]
    # tool_named would ask the planner the same (a named `plan`): it is not tried
    assert asked == [{"type": "function", "function": {"name": "plan"}}, *["json_schema"] * 4]
    record = graph.get_state(config).values["decision_mode"]
    assert [
        (f["refused"], f["asked"], f["status"], f["fallback"]) for f in record["fallbacks"]
    ] == [("tool_required", "a named tool_choice ('plan')", 400, "json_schema")]


def test_a_server_error_that_is_no_refusal_goes_up_at_once(server: ScriptedOpenAIServer) -> None:
    server.push(http_error(503, "overloaded"))
    with pytest.raises(ModelUnavailableError, match="HTTP 503: overloaded"):
        run(build_plan_execute_graph(task_tools="compact"), OBJECTIVE, context=_context(server))
    assert len(server.requests) == 1


@pytest.mark.parametrize("quirks", [OLLAMA, LLAMA_CPP], ids=["ollama", "llama_cpp"])
@pytest.mark.parametrize("decision", ["tool_required", "json_schema", "json_object"])
def test_servers_that_ignore_tool_choice_refuse_nothing(
    server: ScriptedOpenAIServer, quirks: Quirks, decision: DecisionMode
) -> None:
    server.quirks = quirks
    graph = build_plan_execute_graph(checkpointer=InMemorySaver(), task_tools="compact")
    config = {"configurable": {"thread_id": "t"}}
    result = run(graph, OBJECTIVE, config=config, context=_context(server, decision_mode=decision))

    assert result["response"].startswith("All 4 steps")
    record = graph.get_state(config).values.get("decision_mode")
    if quirks is LLAMA_CPP and decision == "tool_required":
        # the planner's call came back as text: recovered, and the next decisions ask for JSON
        assert record["mode"] == "json_schema"
        assert [f["reason"] for f in record["fallbacks"]] == ["unenforced"]
        decisions = [r for r in server.requests if script.classify(r).role != "executor"]
        assert [bool(r.get("tools")) for r in decisions] == [True] + [False] * (len(decisions) - 1)
    else:
        assert record is None


def test_a_later_thread_on_the_same_server_starts_in_the_mode_the_first_was_left_in(
    server: ScriptedOpenAIServer,
) -> None:
    """llama-server lets a forced call come back as text: the first thread learns it with its
    planner's request; the next threads on that server and model ask for JSON from their first
    request, and keep the record. Another model on that server learns anew."""
    server.quirks = LLAMA_CPP
    graph = build_plan_execute_graph(checkpointer=InMemorySaver(), task_tools="compact")

    def thread(name: str, **overrides: Any) -> list[bool]:
        """Whether each decision request of a new thread offered tools."""
        before = len(_decisions(server))
        config = {"configurable": {"thread_id": name}}
        result = run(graph, OBJECTIVE, config=config, context=_context(server, **overrides))
        assert result["response"].startswith("All 4 steps")
        record = graph.get_state(config).values["decision_mode"]
        assert record["mode"] == "json_schema"
        assert [f["reason"] for f in record["fallbacks"]] == ["unenforced"]
        return [bool(r.get("tools")) for r in _decisions(server)[before:]]

    first = thread("first")
    assert first[0] and not any(first[1:])
    assert not any(thread("second"))
    other = thread("another model", model="another-model")
    assert other[0] and not any(other[1:])


@both_modes
def test_a_server_that_names_itself_llama_cpp_is_asked_for_json_from_the_first_decision(
    server: ScriptedOpenAIServer, mode: Mode
) -> None:
    """llama.cpp's server names its models' owner `llamacpp` and does not enforce a forced
    call: the run lists the models once and asks every decision as JSON, the first included,
    recording why; a later thread does not ask again."""
    server.quirks, server.owned_by = LLAMA_CPP, "llamacpp"
    graph = build_plan_execute_graph(checkpointer=InMemorySaver(), task_tools="compact")
    for thread in ("first", "second"):
        config = {"configurable": {"thread_id": thread}}
        result = run(graph, OBJECTIVE, mode, config=config, context=_context(server))
        assert result["response"].startswith("All 4 steps")
        record = graph.get_state(config).values["decision_mode"]
        assert record["mode"] == "json_schema"
        assert [f["reason"] for f in record["fallbacks"]] == ["known"]
    decisions = _decisions(server)
    assert decisions and not any(r.get("tools") for r in decisions)
    assert server.models_listed == 1


def test_a_server_that_names_another_owner_is_asked_as_the_run_says(
    server: ScriptedOpenAIServer,
) -> None:
    """Any other owner (here a server that enforces a forced call) keeps the run's mode."""
    server.owned_by = "vllm"
    graph = build_plan_execute_graph(checkpointer=InMemorySaver(), task_tools="compact")
    config = {"configurable": {"thread_id": "t"}}
    result = run(graph, OBJECTIVE, config=config, context=_context(server))
    assert result["response"].startswith("All 4 steps")
    assert graph.get_state(config).values.get("decision_mode") is None
    assert all(r.get("tools") for r in _decisions(server))


def test_a_call_written_as_text_with_a_mistake_is_asked_for_again_as_json(
    server: ScriptedOpenAIServer,
) -> None:
    """llama-server lets the forced `plan` come back as text, and the plan in it names a later
    step: the correction already asks for JSON, whose schema the server enforces."""
    server.quirks = LLAMA_CPP
    server.push(tool_call("plan", {"steps": [{"step": "Pack", "depends_on": [2]}, "Ship"]}))
    graph = build_plan_execute_graph(checkpointer=InMemorySaver(), task_tools="compact")
    config = {"configurable": {"thread_id": "t"}}
    result = run(graph, OBJECTIVE, config=config, context=_context(server))

    assert result["response"].startswith("All 4 steps")
    first, again = _decisions(server)[:2]
    assert first["tools"] and "tools" not in again
    assert again["response_format"]["type"] == "json_schema"
    record = graph.get_state(config).values["decision_mode"]
    assert [f["reason"] for f in record["fallbacks"]] == ["unenforced"]


def test_llama_server_ignoring_the_named_decide_tool_is_a_mistake_corrected_in_vain(
    server: ScriptedOpenAIServer,
) -> None:
    server.quirks = Quirks(ignore_named_choice=True)  # it calls `plan` though `decide` was named
    result = run(
        build_plan_execute_graph(task_tools="compact"),
        OBJECTIVE,
        context=_context(server, decision_mode="tool_named"),
    )
    assert result["stop_reason"] == "no_decision"
    assert "(unexpected tool call `plan`, still after 3 attempts)" in result["response"]


# --- the scripted server's imitations ---------------------------------------------------------

DECIDE_TOOL = {
    "type": "function",
    "function": {
        "name": "decide",
        "parameters": {
            "type": "object",
            "properties": {"steps": {"type": "array"}, "response": {"type": "string"}},
        },
    },
}
PLAN = tool_call("plan", {"steps": ["a"]})


def _ask(server: ScriptedOpenAIServer, **request: Any) -> Any:
    server.push(PLAN)
    client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    messages: Any = [{"role": "user", "content": "go"}]
    return client.chat.completions.create(model="m", messages=messages, **request)


def test_llama_cpp_python_refuses_required_and_json_schema_with_an_empty_500(
    server: ScriptedOpenAIServer,
) -> None:
    server.quirks = LLAMA_CPP_PYTHON
    for request in (
        {"tools": [DECIDE_TOOL], "tool_choice": "required"},
        {"response_format": {"type": "json_schema", "json_schema": {"name": "d", "schema": {}}}},
    ):
        with pytest.raises(openai.InternalServerError) as refused:
            _ask(server, **request)
        assert refused.value.status_code == 500
        assert refused.value.body == {
            "message": "",
            "type": "server_error",
            "param": None,
            "code": None,
        }
    json_object = _ask(server, response_format={"type": "json_object", "schema": {}})
    assert json.loads(json_object.choices[0].message.content or "") == {"steps": ["a"]}
    named = _ask(
        server,
        tools=[DECIDE_TOOL],
        tool_choice={"type": "function", "function": {"name": "decide"}},
    )
    assert [c.function.name for c in named.choices[0].message.tool_calls or []] == ["decide"]


def test_servers_ignoring_a_named_choice_leave_the_scripted_call(
    server: ScriptedOpenAIServer,
) -> None:
    named = {"type": "function", "function": {"name": "decide"}}
    for quirks in (Quirks(ignore_named_choice=True), OLLAMA):
        server.quirks = quirks
        reply = _ask(server, tools=[DECIDE_TOOL], tool_choice=named)
        assert [c.function.name for c in reply.choices[0].message.tool_calls or []] == ["plan"]
        assert (
            _ask(server, tools=[DECIDE_TOOL], tool_choice="required").choices[0].message.tool_calls
        )


def test_a_guessed_answer_beside_a_new_tool_step_waits_for_it_and_one_beside_done_steps_stands(
    server: ScriptedOpenAIServer,
) -> None:
    """Small models send a guessed answer beside the calls still needed (`adds_call`): a new
    tool step beside a response makes the response a guess, and the plan goes on. They also
    re-list done steps or restate the work in text steps beside a right answer: then the
    response stands."""
    looked_up: list[str] = []

    @tool
    def lookup(item: str) -> str:
        """The price of an item."""
        looked_up.append(item)
        return f"{item}: 4.20"

    call = {"tool": "lookup", "args": {"item": "A"}}
    replies = iter(
        [
            {"steps": [call], "response": "A guess: 41"},  # a call not made yet: the plan
            {"steps": [call, "Add it up"], "response": "A costs 4.20"},  # nothing new: the answer
        ]
    )

    def respond(request: dict[str, Any]) -> Reply:
        if script.classify(request).role == "replanner":
            return text(json.dumps(next(replies)))
        return script.respond(request)

    server.responder = respond
    result = run(
        build_plan_execute_graph(tools=[lookup], task_tools="compact"),
        "Sum up in 1 steps",
        context=_context(server, decision_mode="json_schema"),
    )

    assert looked_up == ["A"]
    assert [step["step"] for step in result["executed_steps"]] == [
        script.step_text(1, 1, "sum up in 1 steps"),
        'lookup(item="A")',
    ]
    assert result["response"] == "A costs 4.20"
    assert result.get("corrected_mistakes", 0) == 0
