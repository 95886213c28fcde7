"""Tool calls written as text, through the real ChatOpenAI client and the scripted server
imitating llama.cpp's (`Quirks.calls_as_text`): the planner decides, the executor's tools run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from replan.graphs.context import Context
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.testing import (
    CallsAsText,
    Quirks,
    Reply,
    ScriptedOpenAIServer,
    text,
    tool_call,
    tool_calls,
)
from replan.testing import plan_script as script
from tests.support.fake_models import Mode, both_modes, run, stream

OBJECTIVE = "Compare task queues in 2 steps"
TOPIC = "compare task queues in 2"
SHAPES: tuple[CallsAsText, ...] = ("fenced", "bare", "tagged")
TASK = {"subject": "Write it", "description": "the report"}


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")


def _executor_turns(request: dict[str, Any]) -> int:
    return sum(m.get("role") == "assistant" for m in request["messages"])


def _with_tasks(request: dict[str, Any]) -> Reply:
    """Step 1 creates a task and lists the tasks in one turn, then reports."""
    if script.classify(request) == script.Call("executor", 1) and _executor_turns(request) == 0:
        return tool_calls([("TaskCreate", TASK), ("TaskList", {})])
    return script.respond(request)


@pytest.fixture(params=SHAPES)
def shape(request: pytest.FixtureRequest) -> CallsAsText:
    value: CallsAsText = request.param
    return value


@pytest.fixture
def server(shape: CallsAsText) -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(_with_tasks, quirks=Quirks(calls_as_text=shape)) as scripted:
        yield scripted


def _context(server: ScriptedOpenAIServer, **overrides: Any) -> Context:
    return Context(model="scripted-model", base_url=server.base_url, **overrides)


def _executor_requests(server: ScriptedOpenAIServer, step: int) -> list[dict[str, Any]]:
    return [r for r in server.requests if script.classify(r) == script.Call("executor", step)]


@both_modes
def test_calls_written_as_text_plan_run_the_task_tools_and_are_counted(
    server: ScriptedOpenAIServer, mode: Mode
) -> None:
    graph = build_plan_execute_graph(checkpointer=InMemorySaver(), task_tools="compact")
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    result = run(graph, OBJECTIVE, mode, config=config, context=_context(server))

    assert [(s["result"], s["status"]) for s in result["executed_steps"]] == [
        ("Executed step 1: RESULT 1/2", "done"),
        ("Executed step 2: RESULT 2/2", "done"),
    ]
    assert result["response"] == f"All 2 steps of [{TOPIC}] are done: RESULT 1/2, RESULT 2/2"
    first, second = _executor_requests(server, 1)
    assert _executor_turns(first) == 0
    sent_back = second["messages"][-3:]
    assert [m["role"] for m in sent_back] == ["assistant", "tool", "tool"]
    assert [c["function"]["name"] for c in sent_back[0]["tool_calls"]] == ["TaskCreate", "TaskList"]
    assert "Write it" in sent_back[2]["content"]  # TaskList ran after TaskCreate, and saw it
    values = graph.get_state(config).values
    assert [(t.subject, t.status) for t in values["tasks_context"].sorted_tasks()] == [
        ("Write it", "pending")
    ]
    # planner 1 + step 1's two calls; the server does not enforce a forced call, so the
    # replanner's decisions are then asked for as JSON (no call to recover)
    assert values["recovered_calls"] == 3
    assert values["decision_mode"]["mode"] == "json_schema"
    assert "recovered_calls" not in result  # in the state, not in the output


def test_the_scripted_quirk_writes_every_call_as_text(server: ScriptedOpenAIServer) -> None:
    reply = tool_calls([("TaskCreate", TASK), ("TaskList", {})])
    written = server.quirks.answer({}, reply)
    assert written.calls == () and written.content is not None
    objects = [json.dumps({"name": "TaskCreate", "arguments": TASK}), '{"name": "TaskList", ']
    assert all(part in written.content for part in objects)
    marker = {"fenced": "```json\n", "tagged": "<tool_call>\n", "bare": '{"name": '}
    assert written.content.count(marker[server.quirks.calls_as_text or ""]) == 2
    assert server.quirks.answer({}, text("plain")) == text("plain")


def _a_task_per_step(request: dict[str, Any]) -> Reply:
    """Each step creates a task named after it, then reports."""
    call = script.classify(request)
    if call.role == "executor" and _executor_turns(request) == 0:
        return tool_call("TaskCreate", {"subject": f"Task of step {call.step}", "description": "-"})
    return script.respond(request)


@pytest.mark.parametrize("shape", ["tagged"])
def test_counts_and_tasks_of_parallel_steps_are_merged(shape: CallsAsText) -> None:
    quirks = Quirks(calls_as_text=shape)
    with ScriptedOpenAIServer(_a_task_per_step, quirks=quirks) as server:
        graph = build_plan_execute_graph(checkpointer=InMemorySaver(), task_tools="compact")
        config: RunnableConfig = {"configurable": {"thread_id": "t"}}
        result = run(
            graph,
            "Two at once in 2 parallel steps",
            "async",
            config=config,
            context=_context(server),
        )
    assert [s["status"] for s in result["executed_steps"]] == ["done", "done"]
    values = graph.get_state(config).values
    subjects = sorted(t.subject for t in values["tasks_context"].sorted_tasks())
    assert subjects == ["Task of step 1", "Task of step 2"]
    # planner, one call per step; the replanner is asked for JSON (no call to recover)
    assert values["recovered_calls"] == 3


def test_recovery_is_announced_on_the_plan_stream(server: ScriptedOpenAIServer) -> None:
    events = stream(
        build_plan_execute_graph(task_tools="compact"),
        OBJECTIVE,
        "sync",
        stream_mode="custom",
        context=_context(server),
    )
    recovered = [
        (chunk["node"], chunk["count"], chunk["tools"])
        for chunk in events
        if chunk["event"] == "text_calls"
    ]
    # after the planner's, decisions are asked for as JSON: the server sent a forced call as text
    assert recovered == [("planner", 1, ["plan"]), ("executor", 2, ["TaskCreate", "TaskList"])]


@pytest.mark.parametrize("shape", ["fenced"])
def test_without_recovery_the_planner_falls_back_to_a_json_reply(
    server: ScriptedOpenAIServer,
) -> None:
    graph = build_plan_execute_graph(checkpointer=InMemorySaver(), task_tools="compact")
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    context = _context(server, recover_text_calls=False)
    result = run(graph, OBJECTIVE, "sync", config=config, context=context)

    # step 1's calls, written as text, are never run: the run ends as making no progress
    assert result["stop_reason"] == "no_progress"
    first, second, third = server.requests[:3]
    assert "tools" in first and "tools" in second  # two replies with the call as text
    assert third["response_format"]["type"] == "json_schema" and "tools" not in third
    (fallback,) = graph.get_state(config).values["decision_mode"]["fallbacks"]
    assert (fallback["reason"], fallback["status"], fallback["fallback"]) == (
        "mistakes",
        None,
        "json_schema",
    )


def _plain_server(responder: Any) -> ScriptedOpenAIServer:
    return ScriptedOpenAIServer(responder)


def test_a_planner_writing_only_its_plan_arguments_as_text_gets_the_plan_taken() -> None:
    """A small model answers the forced `plan` with its arguments alone, as text: the plan is
    taken, with no second planner request."""

    def bare_plan(request: dict[str, Any]) -> Reply:
        if script.classify(request).role == "planner":
            return text(json.dumps({"steps": script.first_plan(request)}))
        return script.respond(request)

    with _plain_server(bare_plan) as server:
        result = run(
            build_plan_execute_graph(task_tools="compact"),
            "Go in 1 steps",
            "sync",
            context=_context(server),
        )
    assert [s["step"] for s in result["executed_steps"]] == ["Step 1 of 1 [go in 1 steps]"]
    assert sum(script.classify(r).role == "planner" for r in server.requests) == 1


UNKNOWN_CALL = json.dumps({"name": "Nope", "arguments": {"x": 1}})


def _unknown_call_first(request: dict[str, Any]) -> Reply:
    """The executor first writes a call to a tool it does not have, then reports."""
    if script.classify(request).role == "executor" and _executor_turns(request) == 0:
        return text(f"```json\n{UNKNOWN_CALL}\n```")
    return script.respond(request)


@both_modes
def test_a_call_to_an_unknown_tool_written_as_text_is_corrected_not_recorded(mode: Mode) -> None:
    with _plain_server(_unknown_call_first) as server:
        result = run(
            build_plan_execute_graph(task_tools="compact"),
            "Go in 1 steps",
            mode,
            context=_context(server),
        )
    assert [(s["result"], s["status"]) for s in result["executed_steps"]] == [
        ("Executed step 1: RESULT 1/1", "done")
    ]
    _, corrected = _executor_requests(server, 1)
    correction = corrected["messages"][-1]
    assert correction["role"] == "user"
    assert "not run" in correction["content"] and "`Nope`" in correction["content"]


def test_a_step_whose_replies_stay_unreadable_calls_ends_unfinished() -> None:
    def always_unknown(request: dict[str, Any]) -> Reply:
        if script.classify(request).role == "executor":
            return text(UNKNOWN_CALL)
        return script.respond(request)

    with _plain_server(always_unknown) as server:
        graph = build_plan_execute_graph(max_iterations=1, task_tools="compact")
        result = run(graph, "Go in 1 steps", "sync", context=_context(server, executor_max_steps=2))
    (step,) = result["executed_steps"]
    assert step["status"] == "unfinished"
    assert step["result"].startswith("UNFINISHED") and "Nope" not in step["result"]
    assert len(_executor_requests(server, 1)) == 2


def test_without_recovery_the_executor_records_the_text_as_before() -> None:
    def text_call(request: dict[str, Any]) -> Reply:
        if script.classify(request).role == "executor":
            return text(json.dumps({"name": "TaskList", "arguments": {}}))
        return script.respond(request)

    with _plain_server(text_call) as server:
        graph = build_plan_execute_graph(max_iterations=1, task_tools="compact")
        context = _context(server, recover_text_calls=False)
        result = run(graph, "Go in 1 steps", "sync", context=context)
    assert result["executed_steps"][0]["result"] == '{"name": "TaskList", "arguments": {}}'
    assert len(_executor_requests(server, 1)) == 1


def test_real_tool_calls_are_not_counted() -> None:
    with _plain_server(_with_tasks) as server:
        graph = build_plan_execute_graph(checkpointer=InMemorySaver(), task_tools="compact")
        config: RunnableConfig = {"configurable": {"thread_id": "t"}}
        run(graph, OBJECTIVE, "sync", config=config, context=_context(server))
    values = graph.get_state(config).values
    assert [t.subject for t in values["tasks_context"].sorted_tasks()] == ["Write it"]
    assert values["recovered_calls"] == 0


def test_recover_text_calls_must_be_a_boolean() -> None:
    with pytest.raises(ValueError, match="recover_text_calls must be true or false, not 'no'"):
        Context(recover_text_calls="no")  # type: ignore[arg-type]
