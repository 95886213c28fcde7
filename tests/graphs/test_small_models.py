"""What makes a small local model get through a run: an executor reminded of its tools, the
answer written in plain text, decisions that fall back when a mode keeps failing, arithmetic
steered to a computing tool, and default settings that work on every local server's quirks."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from replan.graphs.context import Context, DecisionMode
from replan.graphs.model.offers import ToolOffer
from replan.graphs.nodes.report_check import tool_to_force
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.graphs.prompts import DEFAULT_PROMPTS
from replan.testing import (
    LLAMA_CPP,
    LLAMA_CPP_PYTHON,
    OLLAMA,
    Reply,
    ScriptedOpenAIServer,
    tool_call,
)
from replan.testing import plan_script as script
from replan.testing import text as said
from replan.tools.calculator import calculator
from tests.support.fake_models import (
    FakeChatModel,
    Mode,
    both_modes,
    call,
    plan,
    respond,
    run,
    stream,
    text,
)

PAGES = {"atlas": 212, "diary": 96}
OBJECTIVE = "Compare task queues in 2 steps"
SMALL_ON_LLAMA_CPP = dataclasses.replace(LLAMA_CPP, run_on=True, prose_when_forced=True)
"""llama-server with a small model: calls as text, replies run on, prose where a call is forced
(the server does not hold it to the forced tool)."""
PRESETS = {
    "llama-server, small model": SMALL_ON_LLAMA_CPP,
    "llama-server, run on": dataclasses.replace(LLAMA_CPP, run_on=True),
    "llama-cpp-python": LLAMA_CPP_PYTHON,
    "ollama": OLLAMA,
    "ollama, small model": dataclasses.replace(OLLAMA, prose_when_forced=True),
}


@tool
def page_count(book: str) -> str:
    """The number of pages of one book (atlas or diary)."""
    return f"Book {book}: {PAGES[book.strip().lower()]} pages"


@tool
def temperature(city: str) -> str:
    """The current temperature in a city."""
    return f"{city}: 21.5 °C"


def _config() -> RunnableConfig:
    return {"configurable": {"thread_id": "t"}}


def _context(server: ScriptedOpenAIServer, **overrides: Any) -> Context:
    return Context(model="scripted-model", base_url=server.base_url, max_retries=0, **overrides)


# --- an executor that uses its tools -------------------------------------------------------


@both_modes
def test_a_failure_report_without_calling_the_tool_is_asked_once_more(mode: Mode) -> None:
    model = FakeChatModel(
        planner=[plan("Find the page count of the diary")],
        executor=[
            text("FAILED: The diary does not exist."),
            call("page_count", book="diary"),
            text("The diary has 96 pages."),
        ],
        replanner=[respond("The diary has 96 pages.")],
    )
    graph = build_plan_execute_graph(
        model, [page_count], checkpointer=InMemorySaver(), task_tools="compact"
    )
    result = run(graph, "How many pages has the diary?", mode, config=_config())

    first, second, third = model.requests_of("executor")
    reminder = second.messages[-1]
    assert isinstance(reminder, HumanMessage) and "`page_count`" in reminder.text
    assert "could not be done" in reminder.text
    assert (first.tool_choice, second.tool_choice, third.tool_choice) == (
        None,
        "page_count",  # the run's only tool, forced by name for one turn
        None,
    )
    (done,) = result["executed_steps"]
    assert (done["status"], done["result"]) == ("done", "The diary has 96 pages.")
    assert graph.get_state(_config()).values["corrected_mistakes"] == 1


def test_a_failure_reported_again_after_the_reminder_stands() -> None:
    """A model that reports failure again once reminded of its tools is believed: the reminder
    comes once per step, so a step that cannot be done does not loop."""
    model = FakeChatModel(
        planner=[plan("Find the page count of the almanac")],
        executor=[text("FAILED: no book almanac."), text("FAILED: there is no almanac.")],
        replanner=[respond("No such book.")],
    )
    graph = build_plan_execute_graph(
        model, [page_count], checkpointer=InMemorySaver(), task_tools="compact"
    )
    result = run(graph, "Pages of the almanac?", config=_config())

    assert len(model.requests_of("executor")) == 2
    assert result["executed_steps"][0]["status"] == "failed"
    assert graph.get_state(_config()).values["corrected_mistakes"] == 1


def test_a_small_model_making_up_a_figure_is_reminded_and_made_to_call_the_named_tool() -> None:
    """Small models report a figure no tool gave instead of calling the tool: the reminder
    names the figure and the computing tool, and the tool the step names is forced."""
    model = FakeChatModel(
        planner=[plan("Find the temperature in Lisbon")],
        executor=[
            text("It is 10 degrees warmer there."),
            call("temperature", city="Lisbon"),
            text("Lisbon: 21.5 °C"),
        ],
        replanner=[respond("21.5 °C")],
    )
    graph = build_plan_execute_graph(model, [temperature, calculator], task_tools="compact")
    result = run(graph, "How warm is it in Lisbon?")

    second = model.requests_of("executor")[1]
    assert "(10)" in second.messages[-1].text and "`calculator`" in second.messages[-1].text
    assert second.tool_choice == "temperature"  # the one tool the step names
    assert result["executed_steps"][0]["result"] == "Lisbon: 21.5 °C"


def test_figures_from_earlier_results_and_steps_without_own_tools_pass_unchecked() -> None:
    model = FakeChatModel(
        planner=[plan("Find the pages of the atlas", "Say whether the atlas has over 100")],
        executor=[
            call("page_count", book="atlas"),
            text("Book atlas: 212 pages"),
            text("1. The atlas has 212 pages, over 100."),  # figures it was given
        ],
        replanner=[plan("Say whether the atlas has over 100"), respond("Yes: 212 pages.")],
    )
    result = run(
        build_plan_execute_graph(model, [page_count], task_tools="compact"),
        "Is the atlas over 100 pages?",
    )
    assert len(model.requests_of("executor")) == 3
    assert [done["status"] for done in result["executed_steps"]] == ["done", "done"]

    only_task_tools = FakeChatModel(
        planner=[plan("Count the pages")],
        executor=[text("There are 999 pages.")],
        replanner=[respond("999")],
    )
    run(build_plan_execute_graph(only_task_tools, task_tools="compact"), "Count the pages")
    assert len(only_task_tools.requests_of("executor")) == 1


def test_a_call_written_as_text_after_the_reminder_is_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")

    def responder(request: dict[str, Any]) -> Reply:
        if script.classify(request).role != "executor":
            return script.respond(request)
        roles = [m.get("role") for m in request["messages"]]
        if "tool" in roles:
            return script.respond(request)
        if roles.count("assistant"):  # reminded: the call, which llama-server leaves as text
            return tool_call("page_count", {"book": "atlas"})
        return said("The atlas holds 999 pages.")

    with ScriptedOpenAIServer(responder, quirks=LLAMA_CPP) as server:
        graph = build_plan_execute_graph(
            tools=[page_count], checkpointer=InMemorySaver(), task_tools="compact"
        )
        result = run(
            graph, "Pages of the atlas in 1 steps", config=_config(), context=_context(server)
        )
        state = graph.get_state(_config()).values

    assert result["executed_steps"][0]["result"] == "Executed step 1: RESULT 1/1"
    executor = [r for r in server.requests if script.classify(r).role == "executor"]
    tool_replies = [m for m in executor[-1]["messages"] if m.get("role") == "tool"]
    assert [m["content"] for m in tool_replies] == ["Book atlas: 212 pages"]
    assert state["recovered_calls"] >= 1 and state["corrected_mistakes"] == 1


@pytest.mark.parametrize(
    "written",
    ['{"book": "atlas"}', '{"name": "page_count", "arguments": {"book": "atlas"}}'],
)
def test_where_tool_choice_is_not_enforced_the_forced_call_is_asked_for_as_json(
    monkeypatch: pytest.MonkeyPatch, written: str
) -> None:
    """llama-server: the run's decisions went to json_schema, so the reminded executor is asked
    for the tool's arguments with the tool's schema as `response_format`, which it enforces."""
    monkeypatch.setenv("OPENAI_API_KEY", "test")

    def responder(request: dict[str, Any]) -> Reply:
        if script.classify(request).role != "executor":
            return script.respond(request)
        if "response_format" in request:
            return said(written)
        if "tool" in [m.get("role") for m in request["messages"]]:
            return script.respond(request)
        return said("FAILED: there is no tool for books.")

    with ScriptedOpenAIServer(responder, quirks=LLAMA_CPP) as server:
        graph = build_plan_execute_graph(
            tools=[page_count], checkpointer=InMemorySaver(), task_tools="compact"
        )
        result = run(
            graph, "Pages of the atlas in 1 steps", config=_config(), context=_context(server)
        )
        state = graph.get_state(_config()).values

    assert state["decision_mode"]["mode"] == "json_schema"  # the planner's call came as text
    executor = [r for r in server.requests if script.classify(r).role == "executor"]
    forced = next(r for r in executor if "response_format" in r)
    assert "tools" not in forced
    schema = forced["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"]) == ["book"]
    assert "Call `page_count` now" in forced["messages"][-1]["content"]
    tool_replies = [m for m in executor[-1]["messages"] if m.get("role") == "tool"]
    assert [m["content"] for m in tool_replies] == ["Book atlas: 212 pages"]
    assert result["executed_steps"][0]["result"] == "Executed step 1: RESULT 1/1"
    assert state["corrected_mistakes"] == 1


# --- arithmetic goes to a computing tool ---------------------------------------------------


def test_prompts_name_the_computing_tool_only_when_the_run_has_one() -> None:
    with_calculator = FakeChatModel(
        planner=[plan("Add 1 and 2")], executor=[text("done")], replanner=[respond("3")]
    )
    run(
        build_plan_execute_graph(with_calculator, [page_count, calculator], task_tools="compact"),
        "Add",
    )
    without = FakeChatModel(
        planner=[plan("Add 1 and 2")], executor=[text("done")], replanner=[respond("3")]
    )
    run(build_plan_execute_graph(without, [page_count], task_tools="compact"), "Add")

    def asked(model: FakeChatModel) -> tuple[str, ...]:
        """What each node is asked after the head all requests share."""
        return tuple(
            "\n".join(m.text for m in model.requests_of(node)[0].messages[1:])
            for node in ("planner", "executor", "replanner")
        )

    planner, executor, replanner = asked(with_calculator)
    assert "Work out figures in steps that use `calculator`" in planner
    assert "Work out figures with `calculator`" in executor
    assert 'plan a tool step of `calculator` on the results ("$N")' in replanner
    for prompt in asked(without):
        assert "calculator" not in prompt and "Work out" not in prompt


# --- answers in plain text -----------------------------------------------------------------


@both_modes
def test_the_answer_is_written_by_a_plain_request_and_counted(
    server: ScriptedOpenAIServer, mode: Mode
) -> None:
    answers = {"step": "The answer, written in plain text."}

    def responder(request: dict[str, Any]) -> Reply:
        if script.classify(request).role == "answer":
            return said(answers["step"])
        return script.respond(request)

    server.responder = responder
    context = _context(server, answer="plain")
    result = run(build_plan_execute_graph(task_tools="compact"), OBJECTIVE, mode, context=context)

    (asked,) = [r for r in server.requests if script.classify(r).role == "answer"]
    assert not {"tools", "tool_choice", "response_format"} & asked.keys()
    assert "RESULT 1/2" in script.prompt_text(asked) and OBJECTIVE in script.prompt_text(asked)
    assert result["response"] == "The answer, written in plain text."
    assert result["usage"]["nodes"]["answer"]["calls"] == 1
    replanner = [r for r in server.requests if script.classify(r).role == "replanner"][-1]
    respond_spec = next(t for t in replanner["tools"] if t["function"]["name"] == "respond")
    described = respond_spec["function"]["parameters"]["properties"]["response"]["description"]
    assert described == DEFAULT_PROMPTS.respond_note  # the decision is only a note now


def test_with_answers_in_the_decision_there_is_no_answer_request(
    server: ScriptedOpenAIServer,
) -> None:
    result = run(
        build_plan_execute_graph(task_tools="compact"),
        OBJECTIVE,
        context=_context(server, answer="decision"),
    )

    assert all(script.classify(r).role != "answer" for r in server.requests)
    assert result["response"].startswith("All 2 steps") and "answer" not in result["usage"]["nodes"]
    asked = server.requests[-1]["messages"][-1]["content"]
    assert DEFAULT_PROMPTS.respond_with_answer in asked


def test_the_answer_streams_and_a_blank_one_keeps_the_note_with_the_results(
    server: ScriptedOpenAIServer,
) -> None:
    server.responder = lambda request: (
        said(" \n") if script.classify(request).role == "answer" else script.respond(request)
    )
    graph = build_plan_execute_graph(checkpointer=InMemorySaver(), task_tools="compact")
    events = stream(
        graph,
        OBJECTIVE,
        "sync",
        config=_config(),
        context=_context(server, answer="plain"),
        stream_mode=["messages", "updates"],
    )

    nodes = {chunk[1]["langgraph_node"] for kind, chunk in events if kind == "messages"}
    assert "answer" in nodes
    response = graph.get_state(_config()).values["response"]
    assert response.startswith("All 2 steps") and "Result: Executed step 2: RESULT 2/2" in response


def test_a_run_that_stops_unfinished_answers_from_its_results_after_saying_why(
    server: ScriptedOpenAIServer,
) -> None:
    result = run(
        build_plan_execute_graph(max_iterations=1, task_tools="compact"),
        "Ship it in 3 steps",
        context=_context(server, answer="plain"),
    )
    assert result["stop_reason"] == "max_iterations"
    (answering,) = [r for r in server.requests if script.classify(r).role == "answer"]
    assert "say plainly in one sentence what could not be done" in script.prompt_text(answering)
    why, answer = result["response"].split("\n\n")
    assert why.startswith("The objective was not finished: the run stopped after 1 execute")
    assert answer == "1 of 3 steps of [ship it in 3 steps] are done: RESULT 1/3"


# --- decisions that keep failing fall back; defaults work on every server -------------------


def test_decisions_that_keep_coming_back_as_prose_fall_back_to_a_json_reply(
    server: ScriptedOpenAIServer,
) -> None:
    server.quirks = SMALL_ON_LLAMA_CPP
    graph = build_plan_execute_graph(checkpointer=InMemorySaver(), task_tools="compact")
    events = stream(
        graph,
        OBJECTIVE,
        "sync",
        config=_config(),
        context=_context(server),
        stream_mode=["custom", "updates"],
    )

    state = graph.get_state(_config()).values
    assert state["response"].startswith("All 2 steps")
    fallback = {
        "refused": "tool_required",
        "asked": "a named tool_choice ('plan')",
        "status": None,
        "fallback": "json_schema",
        "reason": "mistakes",
    }
    assert state["decision_mode"] == {"mode": "json_schema", "fallbacks": [fallback]}
    said = [chunk for kind, chunk in events if kind == "custom"]
    fallbacks = [event for event in said if event["event"] == "decision_fallback"]
    assert [event["fallback"] for event in fallbacks] == [fallback]
    assert {event["node"] for event in fallbacks} <= {"planner", "replanner"}
    decisions = [r for r in server.requests if script.classify(r).role in ("planner", "replanner")]
    asked = [r.get("response_format", {}).get("type") for r in decisions]
    # one reply of prose run on to the token limit is enough; never asked that way again
    assert asked == [None, *["json_schema"] * (len(decisions) - 1)]
    assert state["corrected_mistakes"] == 1


LOOPING = '{"steps": ["Step 1 of 2", "Step 1 of 2", "Step 1 of 2", "Step 1 of 2", "St'
"""A plan whose list a small model keeps repeating, cut off at the token limit."""


@pytest.mark.parametrize(
    ("decision", "second"),
    [
        # the schema was enforced and the model looped inside it: one mistake, same mode
        ("json_schema", "json_schema"),
        # a forced call came back as text: the server enforced nothing, so the mode is left
        ("tool_required", "json_schema"),
    ],
)
def test_a_json_reply_cut_off_is_a_mistake_in_a_json_mode_and_a_fallback_in_a_tool_mode(
    server: ScriptedOpenAIServer, decision: DecisionMode, second: str
) -> None:
    cut = dataclasses.replace(said("```json\n" + LOOPING), finish_reason="length")

    def respond(request: dict[str, Any]) -> Reply:
        first = script.classify(request).role == "planner" and len(server.requests) == 1
        return cut if first else script.respond(request)

    server.responder = respond
    graph = build_plan_execute_graph(checkpointer=InMemorySaver(), task_tools="compact")
    result = run(
        graph, OBJECTIVE, config=_config(), context=_context(server, decision_mode=decision)
    )

    assert result["response"].startswith("All ") and not result.get("stop_reason")
    asked = [r.get("response_format", {}).get("type") for r in server.requests]
    assert asked[1] == second and "json_object" not in asked
    record = graph.get_state(_config()).values.get("decision_mode")
    assert (record is None) == (decision == "json_schema")


def test_plans_are_bounded_in_the_schema_and_a_longer_one_is_corrected(
    server: ScriptedOpenAIServer,
) -> None:
    first_two = [script.step_text(i, 3, "compare task queues in 3") for i in (1, 2)]

    def respond(request: dict[str, Any]) -> Reply:
        if script.classify(request).role == "planner" and len(server.requests) == 2:
            return said(json.dumps({"steps": first_two}))  # corrected: the next two only
        return script.respond(request)

    server.responder = respond
    result = run(
        build_plan_execute_graph(task_tools="compact"),
        "Compare task queues in 3 steps",
        context=_context(server, decision_mode="json_schema", max_plan_steps=2),
    )

    first, second = server.requests[:2]
    steps = first["response_format"]["json_schema"]["schema"]["properties"]["steps"]
    assert steps["maxItems"] == 2
    assert "the plan lists 3 steps, more than 2" in second["messages"][-1]["content"]
    assert result["response"].startswith("All 3 steps")  # the replanner planned the third
    assert [done["step"] for done in result["executed_steps"]] == [
        *first_two,
        script.step_text(3, 3, "compare task queues in 3"),
    ]


@pytest.mark.parametrize("preset", list(PRESETS))
def test_a_first_run_with_default_settings_gets_to_an_answer(
    server: ScriptedOpenAIServer, preset: str
) -> None:
    server.quirks = PRESETS[preset]
    result = run(
        build_plan_execute_graph(task_tools="compact"), OBJECTIVE, context=_context(server)
    )
    assert result["response"].startswith("All 2 steps") and not result.get("stop_reason")


def test_a_model_that_never_decides_falls_back_to_the_last_mode_and_then_ends_the_turn(
    server: ScriptedOpenAIServer,
) -> None:
    server.responder = lambda request: said("I would rather chat.")
    result = run(
        build_plan_execute_graph(task_tools="compact"), OBJECTIVE, context=_context(server)
    )
    assert result["stop_reason"] == "no_decision"
    assert "still after 3 attempts" in result["response"]
    asked = [r.get("response_format", {}).get("type") or "tools" for r in server.requests]
    assert asked == ["tools"] * 2 + ["json_schema"] * 2 + ["json_object"] * 3


@pytest.mark.parametrize(
    ("step", "builds_on", "forced"),
    [
        ("Find the pages of the atlas", False, "page_count"),  # a look-up: the other tool
        ("Compare the counts", True, "calculator"),  # on earlier results: the computing one
        ("Find the temperature in Lisbon", True, "temperature"),  # named in the step
        ("Find the pages of the atlas", True, "calculator"),
    ],
)
def test_a_step_that_names_no_tool_is_forced_to_the_one_of_its_kind(
    step: str, builds_on: bool, forced: str
) -> None:
    offer = ToolOffer(
        (page_count, temperature, calculator),
        has_task_tools=False,
        own=("page_count", "temperature", "calculator"),
    )
    two = ToolOffer(
        (page_count, calculator), has_task_tools=False, own=("page_count", "calculator")
    )
    chosen_offer = offer if "temperature" in step else two
    assert tool_to_force(chosen_offer, step, builds_on) == forced
    # with two look-up tools and no name in the step, none is guessed
    assert tool_to_force(offer, "Find the pages of the atlas", False) is None


@both_modes
def test_llama_cpp_python_takes_back_an_executor_call_with_empty_content(
    server: ScriptedOpenAIServer, mode: Mode
) -> None:
    """The client sends an assistant message with tool calls and no text as `content: ""`:
    llama-cpp-python refuses `null` there (HTTP 500)."""
    server.quirks = LLAMA_CPP_PYTHON

    def respond(request: dict[str, Any]) -> Reply:
        roles = [m.get("role") for m in request["messages"]]
        if script.classify(request).role == "executor" and "tool" not in roles:
            return tool_call("page_count", {"book": "atlas"})
        return script.respond(request)

    server.responder = respond
    graph = build_plan_execute_graph(tools=[page_count], task_tools="compact")
    result = run(graph, "Pages of the atlas in 1 steps", mode, context=_context(server))

    assert result["executed_steps"][0]["result"] == "Executed step 1: RESULT 1/1"
    sent_back = [
        m
        for r in server.requests
        for m in r["messages"]
        if m.get("role") == "assistant" and m.get("tool_calls")
    ]
    assert sent_back and all(m["content"] == "" for m in sent_back)
