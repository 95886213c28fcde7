"""The graph through the real ChatOpenAI client against the scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import pytest
from langchain_core.messages import AIMessageChunk

from replan.graphs.context import Context
from replan.graphs.errors import ModelUnavailableError
from replan.graphs.model.failures import unusable_reply_problem
from replan.graphs.plan.task_merge import merge_task_updates
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.state import TaskContext
from replan.testing import (
    BROKEN_REPLIES,
    Reply,
    ScriptedOpenAIServer,
    http_error,
    text,
    tool_call,
    tool_calls,
)
from replan.testing import plan_script as plan_execute_script
from tests.support.fake_models import ANSWER_CALLS, Mode, both_modes, run, stream

OBJECTIVE = "Compare task queues in 2 steps"


def _context(server: ScriptedOpenAIServer, **overrides: Any) -> Context:
    return Context(model="scripted-model", base_url=server.base_url, **overrides)


@both_modes
def test_a_run_through_chatopenai_forces_the_plan_tool(
    server: ScriptedOpenAIServer, mode: Mode
) -> None:
    result = run(
        build_plan_execute_graph(task_tools="compact"), OBJECTIVE, mode, context=_context(server)
    )

    assert [s["result"] for s in result["executed_steps"]] == [
        "Executed step 1: RESULT 1/2",
        "Executed step 2: RESULT 2/2",
    ]
    assert result["response"].startswith("All 2 steps")
    planner, *rest = server.requests
    assert planner["model"] == "scripted-model"
    assert planner["tool_choice"] == {"type": "function", "function": {"name": "plan"}}
    assert [t["function"]["name"] for t in planner["tools"]] == ["plan"]
    replanner = next(r for r in rest if len(r.get("tools", [])) == 2)
    assert replanner["tool_choice"] == "required"
    assert plan_execute_script.executor_steps(server.requests) == [1, 2]


@both_modes
def test_messages_stream_yields_tokens(server: ScriptedOpenAIServer, mode: Mode) -> None:
    items = stream(
        build_plan_execute_graph(task_tools="compact"),
        OBJECTIVE,
        mode,
        stream_mode="messages",
        subgraphs=True,  # the executor's loop is a subgraph
        context=_context(server),
    )
    chunks = [
        (namespace, message, meta)
        for namespace, (message, meta) in items
        if isinstance(message, AIMessageChunk)
    ]
    assert all(r.get("stream") for r in server.requests)
    executor_tokens = [m.text for ns, m, meta in chunks if meta["langgraph_node"] == "act"]
    assert "".join(executor_tokens).startswith("Executed step 1: RESULT 1/2")
    assert len(executor_tokens) > 3  # token by token, not one block
    planner = [m for ns, m, meta in chunks if ns == () and meta["langgraph_node"] == "planner"]
    assert sum(len(m.tool_call_chunks) for m in planner) > 3  # the plan arrives in pieces


def test_retries_run_out_into_an_error(server: ScriptedOpenAIServer) -> None:
    server.responder = lambda _: http_error(500, "down for good", retry_after_ms=1)
    with pytest.raises(Exception, match="down for good"):
        run(
            build_plan_execute_graph(task_tools="compact"),
            OBJECTIVE,
            context=_context(server, max_retries=1),
        )
    sent = Counter(json.dumps(r, sort_keys=True) for r in server.requests)
    assert set(sent.values()) == {2}  # each request retried once, by replan's HTTP client alone


@both_modes
def test_a_model_mistake_through_the_client_is_corrected(
    server: ScriptedOpenAIServer, mode: Mode
) -> None:
    server.push(text("no tools for me"), tool_call("plan", '{"steps": ["a",'))
    result = run(
        build_plan_execute_graph(task_tools="compact"), OBJECTIVE, mode, context=_context(server)
    )

    assert result["response"].startswith("All ")
    second, third = (r["messages"][-1]["content"] for r in server.requests[1:3])
    assert "no tool call" in second and "no tools for me" in second
    assert "not valid JSON" in third and '{"steps": ["a",' in third


@both_modes
def test_an_unreachable_server_is_model_unavailable(
    server: ScriptedOpenAIServer, mode: Mode
) -> None:
    context = _context(server, max_retries=0)
    url = re.escape(server.base_url)
    server.stop()
    with pytest.raises(ModelUnavailableError, match=f"cannot reach the model server at {url}: "):
        run(build_plan_execute_graph(task_tools="compact"), OBJECTIVE, mode, context=context)


@both_modes
def test_executor_tool_call_with_malformed_json_is_answered_with_an_error(
    server: ScriptedOpenAIServer, mode: Mode
) -> None:
    executor_turns = 0

    def respond(request: dict[str, Any]) -> Reply:
        nonlocal executor_turns
        if plan_execute_script.classify(request).role == "executor":
            executor_turns += 1
            if executor_turns == 1:
                return tool_call("TaskList", "raw not json")
        return plan_execute_script.respond(request)

    server.responder = respond
    result = run(
        build_plan_execute_graph(task_tools="compact"), OBJECTIVE, mode, context=_context(server)
    )

    assert result["response"].startswith("All 2 steps")
    executor = [r for r in server.requests if plan_execute_script.classify(r).role == "executor"]
    assistant, tool = executor[1]["messages"][-2:]
    (sent,) = assistant["tool_calls"]
    assert sent["function"] == {"name": "TaskList", "arguments": "raw not json"}
    assert tool["role"] == "tool" and tool["tool_call_id"] == sent["id"]
    assert "not valid JSON" in tool["content"]


def test_consecutive_event_loops_in_one_process(server: ScriptedOpenAIServer) -> None:
    """Each `asyncio.run` has its own loop; pooled connections must not leak across them."""
    graph = build_plan_execute_graph(task_tools="compact")
    responses = [run(graph, OBJECTIVE, "async", context=_context(server)) for _ in range(2)]
    assert all(r["response"].startswith("All 2 steps") for r in responses)


@pytest.mark.parametrize("kind", list(BROKEN_REPLIES))
@both_modes
def test_a_reply_that_is_no_chat_completion_is_model_unavailable_naming_node_and_reply(
    server: ScriptedOpenAIServer, mode: Mode, kind: str
) -> None:
    server.push(BROKEN_REPLIES[kind])
    with pytest.raises(ModelUnavailableError) as caught:
        run(
            build_plan_execute_graph(task_tools="compact"),
            OBJECTIVE,
            mode,
            context=_context(server, max_retries=0),
        )
    message = str(caught.value)
    assert message.startswith("planner: the model server sent ")
    assert "\n" not in message
    body = BROKEN_REPLIES[kind].body or ""
    assert body[:40] in message or " ".join(body.split())[:40] in message
    assert len(server.requests) == 1


@both_modes
def test_an_unusable_reply_is_retried_like_a_failing_server(
    server: ScriptedOpenAIServer, mode: Mode
) -> None:
    server.push(BROKEN_REPLIES["empty choices"])
    result = run(
        build_plan_execute_graph(task_tools="compact"),
        OBJECTIVE,
        mode,
        context=_context(server, max_retries=1),
    )
    assert result["response"].startswith("All 2 steps")
    # the broken reply, then the 5 turns of the run (and its answer)
    assert len(server.requests) == 1 + 5 + ANSWER_CALLS


@both_modes
def test_unusable_replies_to_the_executor_and_to_streamed_requests(
    server: ScriptedOpenAIServer, mode: Mode
) -> None:
    def respond(request: dict[str, Any]) -> Reply:
        if plan_execute_script.classify(request).role == "executor":
            return BROKEN_REPLIES["text/plain"]
        return plan_execute_script.respond(request)

    server.responder = respond
    with pytest.raises(ModelUnavailableError, match=r"^executor/act: .*text/plain.*overloaded"):
        stream(
            build_plan_execute_graph(task_tools="compact"),
            OBJECTIVE,
            mode,
            stream_mode="messages",
            context=_context(server, max_retries=1),
        )
    executor = [r for r in server.requests if plan_execute_script.classify(r).role == "executor"]
    assert len(executor) == 2 and all(r.get("stream") for r in executor)


def test_reply_checks_accept_every_usable_completion() -> None:
    completion = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}]}
    body = json.dumps(completion).encode()
    assert unusable_reply_problem("application/json; charset=utf-8", body, stream=False) is None
    assert unusable_reply_problem("text/event-stream", b"data: {}", stream=True) is None
    assert unusable_reply_problem("application/json", body, stream=True) is not None


@pytest.mark.parametrize("ids", [("", "", ""), ("same", "same", "same"), (None, None, None)])
@both_modes
def test_executor_turn_with_repeated_empty_or_missing_call_ids_loses_no_task(
    server: ScriptedOpenAIServer, mode: Mode, ids: tuple[str | None, ...]
) -> None:
    first_turn = True

    def respond(request: dict[str, Any]) -> Reply:
        nonlocal first_turn
        if plan_execute_script.classify(request).role == "executor" and first_turn:
            first_turn = False
            creates = [
                ("TaskCreate", {"subject": f"Part {n}", "description": "d"}) for n in (1, 2, 3)
            ]
            return tool_calls(creates, ids=ids)
        return plan_execute_script.respond(request)

    server.responder = respond
    updates = stream(
        build_plan_execute_graph(task_tools="compact"),
        OBJECTIVE,
        mode,
        stream_mode="updates",
        context=_context(server),
    )
    executor = next(u["executor"] for u in updates if "executor" in u)
    tasks = merge_task_updates(TaskContext(), executor["tasks_context"])  # the step's changes
    assert [t.subject for t in tasks.tasks] == ["Part 1", "Part 2", "Part 3"]
    second = [r for r in server.requests if plan_execute_script.classify(r).role == "executor"][1]
    assistant, *replies = second["messages"][-4:]
    sent_ids = [c["id"] for c in assistant["tool_calls"]]
    assert len(set(sent_ids)) == 3 and all(sent_ids)
    assert [r["tool_call_id"] for r in replies] == sent_ids
    assert [r["content"] for r in replies] == [
        f"Task #{n} created successfully: Part {n}" for n in (1, 2, 3)
    ]
