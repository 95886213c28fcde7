"""The real `langgraph dev` server, driven with langgraph-sdk the way Studio drives it.

One server per module, started offline on a copy of the repository with the SQLite
checkpointer langgraph.json configures; the model is the scripted OpenAI-compatible server.
"""

from __future__ import annotations

import json
import re
import socket
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

from replan.cli import main as replan
from replan.testing import LLAMA_CPP_PYTHON, Quirks, Reply, ScriptedOpenAIServer, tool_call
from replan.testing import plan_script as script
from tests.support.dev_server import (
    REPO,
    copy_repo,
    dev_server,
    start_dev_server,
    stop_dev_server,
)
from tests.support.fake_models import ANSWER_CALLS
from tests.support.readme import doc, python_blocks

pytestmark = pytest.mark.slow  # a real `langgraph dev` server

GRAPH = "plan_execute"
OBJECTIVE: dict[str, Any] = {"messages": [{"role": "user", "content": "Ship it in 2 steps"}]}
STEPS = ["Step 1 of 2 [ship it in 2 steps]", "Step 2 of 2 [ship it in 2 steps]"]
ANSWER = "All 2 steps of [ship it in 2 steps] are done: RESULT 1/2, RESULT 2/2"
TASK = {"subject": "Announce the release", "description": "Write to the mailing list."}
PLANNED = {"task_tools": "compact"}
"""A run's context that gives its executor the task tools: the served graph has no tools of its
own, so without them a run is answered at once."""


def respond_with_a_task(request: dict[str, Any]) -> Reply:
    """The scripted plan–execute model, whose executor creates a task before step 1's result."""
    call = script.classify(request)
    used_a_tool = any(m.get("role") == "tool" for m in request.get("messages", []))
    if call.role == "executor" and call.step == 1 and not used_a_tool:
        return tool_call("TaskCreate", TASK)
    return script.respond(request)


@dataclass(frozen=True)
class Served:
    """A running dev server: its URL, an SDK client, and the SQLite file of its checkpoints."""

    url: str
    client: SyncLangGraphClient
    db: Path
    model: ScriptedOpenAIServer


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A dev server whose model is the scripted one."""
    tmp = tmp_path_factory.mktemp("dev-server")
    db = tmp / "dev.sqlite"
    with ScriptedOpenAIServer(respond_with_a_task) as model:
        env = {
            "OPENAI_API_KEY": "test",
            "OPENAI_BASE_URL": model.base_url,
            "REPLAN_DEV_DB": str(db),
        }
        with dev_server(tmp, env) as url:
            yield Served(url, get_sync_client(url=url), db, model)


@pytest.fixture
def client(served: Served) -> SyncLangGraphClient:
    return served.client


def assistant_id(client: SyncLangGraphClient) -> str:
    (assistant,) = client.assistants.search(graph_id=GRAPH)
    return str(assistant["assistant_id"])


def new_thread(client: SyncLangGraphClient) -> str:
    return str(client.threads.create()["thread_id"])


def test_every_graph_in_langgraph_json_is_served(client: SyncLangGraphClient) -> None:
    registered = json.loads((REPO / "langgraph.json").read_text())["graphs"]
    served = {a["graph_id"] for a in client.assistants.search()}
    assert GRAPH in registered and served == set(registered)


@pytest.mark.parametrize("xray", [False, True])
def test_studio_graph_has_the_nodes_and_conditional_edges(
    client: SyncLangGraphClient, xray: bool
) -> None:
    drawn = client.assistants.get_graph(assistant_id(client), xray=xray)
    nodes = {node["id"] for node in drawn["nodes"]}
    assert {"start_turn", "planner", "review_plan", "executor", "replanner", "reply"} <= nodes
    edges = {(e["source"], e["target"], bool(e.get("conditional"))) for e in drawn["edges"]}
    assert {("start_turn", "planner", False), ("executor", "replanner", False)} <= edges
    assert {("replanner", "executor", True), ("replanner", "reply", True)} <= edges
    assert {("planner", "executor", True), ("planner", "review_plan", True)} <= edges
    assert ("reply", "__end__", False) in edges


def test_studio_offers_the_run_context(client: SyncLangGraphClient) -> None:
    schema = client.assistants.get_schemas(assistant_id(client))["context_schema"]
    assert schema is not None
    assert {"model", "base_url", "approve_plan"} <= set(schema["properties"])
    assert {"max_concurrency", "replan"} <= set(schema["properties"])


def test_a_thread_streams_updates_in_order_and_keeps_its_state(served: Served) -> None:
    client = served.client
    thread = new_thread(client)
    parts = client.runs.stream(
        thread, assistant_id(client), input=OBJECTIVE, context=PLANNED, stream_mode="updates"
    )
    order = [node for part in parts if part.event == "updates" for node in part.data]
    assert order == [
        "start_turn",
        "planner",
        "executor",
        "replanner",
        "executor",
        "replanner",
        *["answer"] * ANSWER_CALLS,
        "reply",
    ]

    state = client.threads.get_state(thread)
    values = state["values"]
    assert isinstance(values, dict)
    assert values["response"] == ANSWER and values["plan"] == []
    assert [done["step"] for done in values["executed_steps"]] == STEPS
    (task,) = values["tasks_context"]["tasks"]
    assert task["subject"] == TASK["subject"] and task["status"] == "pending"
    assert state["next"] == [] and client.threads.get(thread)["status"] == "idle"

    with sqlite3.connect(served.db) as conn:  # the checkpoints went to the configured SQLite file
        stored = conn.execute("SELECT COUNT(*) FROM checkpoints WHERE thread_id = ?", (thread,))
        assert stored.fetchone()[0] > 0


def test_the_cli_reads_runs_of_the_dev_server(
    served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = _paused(served.client)
    assert replan(["show", "--db", str(served.db), "--thread-id", thread]) == 0
    shown = capsys.readouterr().out
    assert "Status: waiting for approval" in shown and f"1. {STEPS[0]}" in shown


def test_a_refused_decision_mode_and_the_plan_are_streamed_and_kept(served: Served) -> None:
    client = served.client
    thread = new_thread(client)
    served.model.quirks = LLAMA_CPP_PYTHON  # refuses tool_choice "required"
    try:
        parts = client.runs.stream(
            thread,
            assistant_id(client),
            input=OBJECTIVE,
            context={**PLANNED, "max_retries": 0},
            stream_mode=["custom", "updates"],
        )
        custom = [part.data for part in parts if part.event == "custom"]
    finally:
        served.model.quirks = Quirks()
    fallback = {
        "refused": "tool_required",
        "asked": "tool_choice 'required'",
        "status": 500,
        "fallback": "tool_named",
        "reason": "refused",
    }
    kinds = [event["event"] for event in custom]  # the plan stream, through the server
    assert kinds[:2] == ["node_started", "plan"] and kinds[-1] == "answer"
    (fell_back,) = [event for event in custom if event["event"] == "decision_fallback"]
    assert fell_back["fallback"] == fallback
    assert kinds.count("step_finished") == len(custom[1]["steps"])
    values = client.threads.get_state(thread)["values"]
    assert isinstance(values, dict) and values["response"] == ANSWER
    assert values["decision_mode"] == {"mode": "tool_named", "fallbacks": [fallback]}


def _paused(client: SyncLangGraphClient) -> str:
    """A thread whose run waits for plan approval (the SDK passes the graph's Context)."""
    thread = new_thread(client)
    paused = client.runs.wait(
        thread, assistant_id(client), input=OBJECTIVE, context={**PLANNED, "approve_plan": True}
    )
    assert isinstance(paused, dict)
    (pending,) = paused["__interrupt__"]
    (request,) = pending["value"]["action_requests"]
    assert request["args"]["steps"] == STEPS and "approve" in request["description"].lower()
    assert paused["executed_steps"] == []
    assert client.threads.get(thread)["status"] == "interrupted"
    assert client.threads.get_state(thread)["next"] == ["review_plan"]
    return thread


def _resume(client: SyncLangGraphClient, thread: str, answer: Any) -> dict[str, Any]:
    result = client.runs.wait(thread, assistant_id(client), command={"resume": answer})
    assert isinstance(result, dict) and "__interrupt__" not in result
    return result


def test_approving_the_plan_runs_it(client: SyncLangGraphClient) -> None:
    result = _resume(client, _paused(client), "approve")
    assert result["response"] == ANSWER
    assert [done["step"] for done in result["executed_steps"]] == STEPS


def test_edited_steps_run_instead(client: SyncLangGraphClient) -> None:
    edited = ["Step 1 of 1 [announce it]"]
    result = _resume(client, _paused(client), {"action": "edit", "steps": edited})
    assert [done["step"] for done in result["executed_steps"]] == edited
    assert result["response"] == "All 1 steps of [announce it] are done: RESULT 1/1"


def test_edited_steps_with_dependencies_run_side_by_side(client: SyncLangGraphClient) -> None:
    edited = [
        {"step": "Step 1 of 3 [side by side]", "depends_on": []},
        {"step": "Step 2 of 3 [side by side]", "depends_on": []},
        {"step": "Step 3 of 3 [side by side]", "depends_on": [1, 2]},
    ]
    thread = _paused(client)
    result = _resume(client, thread, {"action": "edit", "steps": edited})
    assert result["response"].startswith("All 3 steps of [side by side] are done")
    assert [done["step"] for done in result["executed_steps"]] == [e["step"] for e in edited]
    history = client.threads.get_history(thread, limit=100)
    waves = [[t["name"] for t in h["tasks"]] for h in history if h["tasks"]]
    assert ["executor", "executor"] in waves  # steps 1 and 2 in one super-step


def test_rejecting_the_plan_ends_the_run_saying_so(client: SyncLangGraphClient) -> None:
    thread = _paused(client)
    result = _resume(client, thread, {"action": "reject", "reason": "too risky"})
    assert "rejected" in result["response"] and "too risky" in result["response"]
    assert result["executed_steps"] == []
    assert client.threads.get(thread)["status"] == "idle"


def test_a_chat_ui_decision_approves_edits_or_rejects_the_plan(client: SyncLangGraphClient) -> None:
    approved = _resume(client, _paused(client), {"decisions": [{"type": "approve"}]})
    assert approved["messages"][-1]["content"] == ANSWER
    edit = {"name": "plan", "args": {"steps": '["Step 1 of 1 [announce it]"]'}}  # a text box's
    edited = _resume(
        client, _paused(client), {"decisions": [{"type": "edit", "edited_action": edit}]}
    )
    assert [done["step"] for done in edited["executed_steps"]] == ["Step 1 of 1 [announce it]"]
    reject = {"decisions": [{"type": "reject", "message": "not now"}]}
    rejected = _resume(client, _paused(client), reject)
    assert (
        rejected["stop_reason"] == "rejected" and "not now" in rejected["messages"][-1]["content"]
    )


def test_a_conversation_gets_each_answer_in_messages_and_follow_ups_on_its_thread(
    client: SyncLangGraphClient,
) -> None:
    thread = new_thread(client)
    first = client.runs.wait(thread, assistant_id(client), input=OBJECTIVE, context=PLANNED)
    follow_up = {"messages": [{"role": "user", "content": "Now announce it in 1 steps"}]}
    second = client.runs.wait(thread, assistant_id(client), input=follow_up)

    assert isinstance(first, dict) and isinstance(second, dict)
    said = [(m["type"], m["content"]) for m in second["messages"]]
    assert said[:2] == [("human", "Ship it in 2 steps"), ("ai", ANSWER)]
    assert said[2:] == [
        ("human", "Now announce it in 1 steps"),
        ("ai", "All 1 steps of [now announce it in 1] are done: RESULT 1/1"),
    ]
    assert second["messages"][-1]["name"] == "replan"
    assert [turn["objective"] for turn in second["turns"]] == ["Ship it in 2 steps"]
    streamed = client.runs.stream(
        thread,
        assistant_id(client),
        input={"messages": [{"role": "user", "content": "Bye in 1 steps"}]},
        stream_mode="messages-tuple",
    )
    replies = [
        part.data[0]["content"]
        for part in streamed
        if part.event == "messages" and part.data[1].get("langgraph_node") == "reply"
    ]
    assert replies == ["All 1 steps of [bye in 1 steps] are done: RESULT 1/1"]


def test_a_fresh_clone_serves_offline_without_an_api_key(tmp_path: Path) -> None:
    """Starting needs no key; a run then fails with ModelUnavailableError, not at startup, and
    the SDK client sees why."""
    with dev_server(tmp_path, {}) as url:
        client = get_sync_client(url=url)
        thread = new_thread(client)
        failed = client.runs.wait(thread, assistant_id(client), input=OBJECTIVE, raise_error=False)
        assert isinstance(failed, dict)
        assert failed["__error__"]["error"] == "ModelUnavailableError"
        assert failed["__error__"]["message"].startswith("OPENAI_API_KEY is not set: export it")
        assert client.threads.get(thread)["status"] == "error"
    assert (tmp_path / "repo" / ".langgraph_api" / "replan-dev.sqlite").exists()


def test_a_taken_port_is_said_with_the_url_to_use(tmp_path: Path) -> None:
    """`langgraph dev` moves to a free port when its own is taken; replan's log line says so,
    with the URL the server's banner shows."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        log = tmp_path / "server.log"
        process = start_dev_server(copy_repo(tmp_path / "repo"), taken, {}, log)
        try:
            deadline = time.monotonic() + 60
            while f"not on port {taken}" not in log.read_text(errors="replace"):
                assert process.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        finally:
            stop_dev_server(process)
    text = re.sub(r"\x1b\[[0-9;]*m", "", log.read_text(errors="replace"))
    (served,) = re.findall(r"API: (http://127\.0\.0\.1:\d+)", text)
    assert served != f"http://127.0.0.1:{taken}"
    assert (
        f"replan: langgraph dev serves on {served}, not on port {taken}, which another process "
        f"holds: point Studio and clients (get_client(url=...)) at {served}"
    ) in text


def test_the_docs_sdk_example_runs(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    graph_doc = doc("graph.md")
    (code,) = python_blocks("LangGraph dev server and Studio", graph_doc)
    code = code.replace("http://127.0.0.1:2024", served.url)
    exec(compile(code, f"{graph_doc}:sdk", "exec", dont_inherit=True), {"__name__": "readme_sdk"})
    lines = capsys.readouterr().out.splitlines()
    topic = "compare three python task queues"
    answer = f"All 3 steps of [{topic}] are done: RESULT 1/3, RESULT 2/3, RESULT 3/3"
    assert lines[1:4] == ["updates ['start_turn']", "updates ['planner']", "updates ['executor']"]
    assert lines[-3:] == [answer, str([script.step_text(i, 3, topic) for i in (1, 2, 3)]), answer]
