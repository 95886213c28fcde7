"""replan served by Aegra (aegra.json) on PostgreSQL with the Redis broker, driven with
langgraph-sdk as a team's clients drive it; the model is the scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from langgraph_sdk import get_sync_client

from replan.cli import main as replan
from replan.graphs.graph_state import reviewed_steps
from replan.state.task_stores.postgres import PostgresTaskStore
from replan.testing import Reply, Responder, ScriptedOpenAIServer, tool_call
from replan.testing import plan_script as script
from replan.testing.aegra import finish_all, free_port, start_runs_at_once
from replan.testing.requests import prompt_text
from tests.server.conftest import SHARED_LIST, Cluster, Served
from tests.server.test_langgraph_dev import PLANNED, TASK, respond_with_a_task
from tests.support.aegra_server import REPO
from tests.support.fake_models import ANSWER_CALLS
from tests.support.readme import python_blocks

pytestmark = pytest.mark.slow  # real Aegra servers

GRAPH = "plan_execute"
SHARED_GRAPH = "plan_execute_shared"
TOPIC = "ship it in 2 steps"
STEPS = [script.step_text(i, 2, TOPIC) for i in (1, 2)]
ANSWER = f"All 2 steps of [{TOPIC}] are done: RESULT 1/2, RESULT 2/2"
HOLD_SECONDS = 60.0
README = REPO / "README.md"
FINISHED_BY_A_WORKER = "Worker finished run"
"""What Aegra logs when one of its workers has finished a run."""


def objective(text: str = "Ship it in 2 steps") -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


@contextmanager
def responding(model: ScriptedOpenAIServer, responder: Responder) -> Iterator[None]:
    """`model` answers with `responder` inside the block."""
    model.responder = responder
    try:
        yield
    finally:
        model.responder = script.respond


def test_a_run_streams_its_updates_and_its_task_list_comes_back(aegra_served: Served) -> None:
    client = aegra_served.client
    thread = client.threads.create()["thread_id"]
    with responding(aegra_served.model, respond_with_a_task):
        parts = client.runs.stream(
            thread, GRAPH, input=objective(), context=PLANNED, stream_mode="updates"
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
    values = client.threads.get_state(thread)["values"]
    assert isinstance(values, dict) and values["response"] == ANSWER
    (task,) = values["tasks_context"]["tasks"]  # a TaskContext, back out of a checkpoint
    assert task["subject"] == TASK["subject"]
    # by replan's serializer: Aegra still attaches its saver through `graph.copy`
    assert "unregistered type" not in aegra_served.log.read_text(errors="replace")


def _paused(aegra_served: Served) -> str:
    """A thread whose run waits for plan approval."""
    client = aegra_served.client
    thread = client.threads.create()["thread_id"]
    paused = client.runs.wait(
        thread, GRAPH, input=objective(), context={**PLANNED, "approve_plan": True}
    )
    assert isinstance(paused, dict)
    (pending,) = paused["__interrupt__"]
    assert reviewed_steps(pending["value"]) == STEPS
    assert client.threads.get(thread)["status"] == "interrupted"
    return str(thread)


def test_an_approved_plan_runs_after_command_resume(aegra_served: Served) -> None:
    thread = _paused(aegra_served)
    done = aegra_served.client.runs.wait(thread, GRAPH, command={"resume": "approve"})
    assert isinstance(done, dict) and done["response"] == ANSWER
    assert [step["step"] for step in done["executed_steps"]] == STEPS


def test_a_run_without_a_model_server_fails_saying_so(aegra_served: Served) -> None:
    client = aegra_served.client
    thread = client.threads.create()["thread_id"]
    nowhere = {"base_url": f"http://127.0.0.1:{free_port()}/v1", "max_retries": 0}
    failed = client.runs.wait(thread, GRAPH, input=objective(), context=nowhere, raise_error=False)
    assert isinstance(failed, dict)
    assert failed["__error__"]["message"].startswith("cannot reach the model server")
    (run,) = client.runs.list(thread)
    assert run["status"] == "error"
    assert client.threads.get(thread)["status"] == "error"


def test_the_cli_lists_and_shows_the_runs_aegra_served(
    aegra_served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    finished = aegra_served.client.threads.create()["thread_id"]
    aegra_served.client.runs.wait(finished, GRAPH, input=objective(), context=PLANNED)
    waiting = _paused(aegra_served)
    capsys.readouterr()

    assert replan(["threads", "--db", aegra_served.database_url, "--json"]) == 0
    listed = {run["thread_id"]: run["status"] for run in json.loads(capsys.readouterr().out)}
    assert listed[finished] == "finished" and listed[waiting] == "waiting_for_approval"

    assert replan(["show", "--db", aegra_served.database_url, "--thread-id", waiting]) == 0
    shown = capsys.readouterr().out
    assert "Status: waiting for approval" in shown and f"1. {STEPS[0]}" in shown


class HoldStep:
    """The scripted model, holding its first answer for step `step` until released; `reached`
    is set when that request has arrived (the run is then inside the step)."""

    def __init__(self, step: int) -> None:
        self.step = step
        self.reached = threading.Event()
        self.release = threading.Event()

    def __call__(self, request: dict[str, Any]) -> Reply:
        call = script.classify(request)
        if call.role == "executor" and call.step == self.step and not self.reached.is_set():
            self.reached.set()
            self.release.wait(HOLD_SECONDS)
        return script.respond(request)


def test_a_killed_server_s_run_is_taken_over_without_running_finished_steps_again(
    cluster: Cluster, model: ScriptedOpenAIServer
) -> None:
    hold = HoldStep(2)
    before = len(model.requests)
    with responding(model, hold):
        with cluster.server("first") as first:
            client = get_sync_client(url=first.url)
            thread = client.threads.create()["thread_id"]
            run = client.runs.create(thread, GRAPH, input=objective(), context=PLANNED)
            assert hold.reached.wait(HOLD_SECONDS), first.log_tail()
            first.kill()  # in step 2: step 1 and the replanner after it are saved
        hold.release.set()
        with cluster.server("second") as second:  # its reaper re-queues the run; it finishes
            client = get_sync_client(url=second.url)
            client.runs.join(thread, run["run_id"])
            finished = client.runs.get(thread, run["run_id"])
            values = client.threads.get_state(thread)["values"]
    assert finished["status"] == "success", second.log_tail()
    assert isinstance(values, dict) and values["response"] == ANSWER
    requests = model.requests[before:]
    roles = [script.classify(r).role for r in requests]
    assert roles.count("planner") == 1
    assert script.executor_steps(requests) == [1, 2, 2]  # step 2 again, step 1 once


class CreateThenHold:
    """Step 1's executor creates a task; the model request after the task tool's result is
    held (a call returned, the next request awaited) until released."""

    def __init__(self) -> None:
        self.reached, self.release = threading.Event(), threading.Event()

    def __call__(self, request: dict[str, Any]) -> Reply:
        call = script.classify(request)
        used_a_tool = any(m.get("role") == "tool" for m in request.get("messages", []))
        if call.role == "executor" and call.step == 1:
            if not used_a_tool:
                return tool_call("TaskCreate", TASK)
            if not self.reached.is_set():
                self.reached.set()
                self.release.wait(HOLD_SECONDS)
        return script.respond(request)


def test_a_killed_server_s_step_goes_on_without_making_its_finished_call_again(
    cluster: Cluster, model: ScriptedOpenAIServer
) -> None:
    hold = CreateThenHold()
    with responding(model, hold):
        with cluster.server("first") as first:
            client = get_sync_client(url=first.url)
            thread = client.threads.create()["thread_id"]
            objective = {"messages": [{"role": "user", "content": "Ship it in 1 steps"}]}
            run = client.runs.create(thread, SHARED_GRAPH, input=objective)
            assert hold.reached.wait(HOLD_SECONDS), first.log_tail()
            first.kill()  # the task is created; the step's next model request is awaited
        hold.release.set()
        with cluster.server("second") as second:  # its reaper re-queues the run; it finishes
            client = get_sync_client(url=second.url)
            client.runs.join(thread, run["run_id"])
            finished = client.runs.get(thread, run["run_id"])
    assert finished["status"] == "success", second.log_tail()
    with PostgresTaskStore(cluster.database_url, list_name=SHARED_LIST) as store:
        subjects = [task.subject for task in store.read().tasks]
    assert subjects == [TASK["subject"]]  # created once: the resumed step did not call again


def test_two_servers_finish_20_runs_started_at_once_each_planned_once(
    cluster: Cluster, model: ScriptedOpenAIServer
) -> None:
    before = len(model.requests)
    topics = [f"run {i} in 2 steps" for i in range(20)]
    with responding(model, script.Clock(latency=0.2)):
        with cluster.server("first") as first, cluster.server("second") as second:
            clients = [get_sync_client(url=first.url), get_sync_client(url=second.url)]
            runs = finish_all(start_runs_at_once(clients, topics, GRAPH, PLANNED))
    assert [run["status"] for run in runs] == ["success"] * 20
    requests = model.requests[before:]
    planned = [script.objective(r) for r in requests if script.classify(r).role == "planner"]
    assert sorted(planned) == sorted(topics)  # every run planned exactly once
    finished = [server.log_count(FINISHED_BY_A_WORKER) for server in (first, second)]
    assert sum(finished) == 20 and min(finished) > 0  # both processes ran some of them


class TaskPerRun:
    """The scripted model, whose step 1 in every run creates a task named after the run's
    topic; the creations wait for each other, so `runs` runs write the list at once."""

    def __init__(self, runs: int) -> None:
        self.together = threading.Barrier(runs, timeout=HOLD_SECONDS)

    def __call__(self, request: dict[str, Any]) -> Reply:
        call = script.classify(request)
        used_a_tool = any(m.get("role") == "tool" for m in request.get("messages", []))
        if call.role == "executor" and call.step == 1 and not used_a_tool:
            topic = prompt_text(request).split("Step 1 of 1 [")[1].split("]")[0]
            self.together.wait()
            return tool_call("TaskCreate", {"subject": f"Report on {topic}", "description": "."})
        return script.respond(request)


def test_runs_of_the_shared_graph_write_one_task_list(aegra_served: Served) -> None:
    topics = ["alpha in 1 steps", "beta in 1 steps"]
    with responding(aegra_served.model, TaskPerRun(len(topics))):
        runs = finish_all(start_runs_at_once([aegra_served.client], topics, SHARED_GRAPH))
    assert [run["status"] for run in runs] == ["success", "success"]
    with PostgresTaskStore(aegra_served.database_url, list_name=SHARED_LIST) as store:
        tasks = store.read().tasks
    assert sorted(task.subject for task in tasks) == [
        "Report on alpha in 1 steps",
        "Report on beta in 1 steps",
    ]
    assert sorted(task.id for task in tasks) == ["1", "2"]  # unique IDs across the two runs


def test_the_docs_sdk_example_runs(
    aegra_served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    (code,) = python_blocks("Serving many users", README)
    code = code.replace("http://127.0.0.1:2026", aegra_served.url)
    exec(compile(code, f"{README}:sdk", "exec", dont_inherit=True), {"__name__": "serving_sdk"})
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[:-2]] == ["metadata", *["updates"] * 4, "end"]
    nodes = ["start_turn", "planner", "answer", "reply"]  # no tools: answered in one request
    assert lines[1:5] == [f"updates [{node!r}]" for node in nodes]
    assert lines[-2:] == [str(STEPS), ANSWER]
