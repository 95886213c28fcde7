"""A run's own tool that raises (`Context.tool_errors`): by default its call's result is the
error, in one line, which the model reads (a tool step fails with it) and the replanner can work
around; with "raise" the run ends with the exception. A user's tool failing with an OpenAI
client error is the tool's failure, not the model's: only model calls are mapped to
`ModelUnavailableError` (and the CLI's exit code 3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import ToolException, tool
from langgraph.errors import GraphInterrupt

from replan.cli import output
from replan.graphs.context import Context
from replan.graphs.errors import ModelUnavailableError
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.graphs.tool_errors import MAX_ERROR_CHARS, reports, tool_error_text
from replan.state.task_stores import FileTaskStore, TaskStoreUnavailableError
from replan.testing import Reply, ScriptedOpenAIServer, tool_call
from replan.testing import plan_script as script
from tests.support.cli_harness import invoke
from tests.support.fake_models import (
    FakeChatModel,
    Mode,
    Request,
    both_modes,
    call,
    plan,
    respond,
    run,
    text,
)

DOWN = "Error: the tool `lookup` failed: RuntimeError: catalogue database is down"
RAISE = Context(tool_errors="raise")
CONNECTION = "APIConnectionError: Connection error."


@tool
def lookup(item: str) -> str:
    """Look an item up in the catalogue (whose database is down)."""
    raise RuntimeError("catalogue database is down")


@tool
def fetch_page(url: str) -> str:
    """Fetch a web page (through a service that is down)."""
    with openai.DefaultHttpxClient() as client:  # the HTTP library of this openai version
        raise openai.APIConnectionError(request=client.build_request("GET", url))


def _tool_reply(request: Request) -> ToolMessage:
    (reply,) = [m for m in request.messages if isinstance(m, ToolMessage)]
    return reply


def _says_what_it_read(request: Request) -> Any:
    return text(f"could not look it up: {_tool_reply(request).content}")


def test_the_error_result_names_the_tool_and_the_error_in_one_line() -> None:
    assert tool_error_text("lookup", RuntimeError("catalogue database is down")) == DOWN
    folded = tool_error_text("lookup", OSError("line one\n  line two"))
    assert folded == "Error: the tool `lookup` failed: OSError: line one line two"
    assert tool_error_text("lookup", ValueError()) == "Error: the tool `lookup` failed: ValueError"
    long = tool_error_text("lookup", RuntimeError("x" * 10_000))
    assert long.endswith("x…") and len(long) < MAX_ERROR_CHARS + 60
    # A ToolException is a message its tool wrote for the model: kept as it is.
    assert tool_error_text("flaky", ToolException("Error: busy, try again")) == (
        "Error: busy, try again"
    )
    assert tool_error_text("flaky", ToolException("busy")) == "Error: busy"


def test_an_interrupt_is_never_a_result() -> None:
    assert reports(RuntimeError("down"), "report")
    assert not reports(RuntimeError("down"), "raise")
    assert not reports(GraphInterrupt(), "report")


@both_modes
def test_the_model_reads_the_error_and_the_replanner_sees_the_step(mode: Mode) -> None:
    model = FakeChatModel(
        planner=[plan("look up item A")],
        executor=[call("lookup", item="A"), _says_what_it_read],
        replanner=[respond("The catalogue is down; try later.")],
    )
    result = run(build_plan_execute_graph(model, [lookup]), "Price of A", mode)

    reply = _tool_reply(model.requests_of("executor")[1])
    assert (reply.status, reply.content) == ("error", DOWN)
    assert result["executed_steps"][0]["result"] == f"could not look it up: {DOWN}"
    assert DOWN in model.requests_of("replanner")[0].prompt
    assert result["response"] == "The catalogue is down; try later."


@both_modes
def test_with_raise_the_exception_ends_the_run(mode: Mode) -> None:
    model = FakeChatModel(planner=[plan("look up item A")], executor=[call("lookup", item="A")])
    graph = build_plan_execute_graph(model, [lookup])
    with pytest.raises(RuntimeError, match="catalogue database is down"):
        run(graph, "Price of A", mode, context=RAISE)
    assert len(model.requests_of("executor")) == 1


@both_modes
def test_a_tool_step_whose_tool_raises_fails_with_the_error(mode: Mode) -> None:
    step = call("plan", steps=[{"tool": "lookup", "args": {"item": "A"}}])
    model = FakeChatModel(planner=[step], replanner=[respond("The catalogue is down."), step])
    result = run(build_plan_execute_graph(model, [lookup]), "Price of A", mode)

    (failed,) = result["executed_steps"]
    assert (failed["status"], failed["result"]) == ("failed", DOWN)
    assert f'lookup(item="A") → {DOWN} [failed]' in model.requests_of("replanner")[0].prompt

    graph = build_plan_execute_graph(FakeChatModel(planner=[step]), [lookup])
    with pytest.raises(RuntimeError, match="catalogue database is down"):
        run(graph, "Price of A", mode, context=RAISE)


def test_a_task_tool_s_error_still_ends_the_run(tmp_path: Path) -> None:
    class LostStore(FileTaskStore):
        def transact(self, change: Any) -> Any:
            raise TaskStoreUnavailableError("the task list cannot be reached")

    model = FakeChatModel(
        planner=[plan("make a task")], executor=[call("TaskCreate", subject="A", description="a")]
    )
    graph = build_plan_execute_graph(model, [lookup], task_store=LostStore(tmp_path / "tasks"))
    with pytest.raises(TaskStoreUnavailableError):
        run(graph, "Make a task")


URL = "http://127.0.0.1:9/page"
"""A page no server answers for."""


@both_modes
def test_a_tool_raising_a_connection_error_is_not_a_model_outage(mode: Mode) -> None:
    model = FakeChatModel(
        planner=[plan("read the page")],
        executor=[call("fetch_page", url=URL), _says_what_it_read],
        replanner=[respond("The page cannot be fetched.")],
    )
    result = run(build_plan_execute_graph(model, [fetch_page]), f"Summarise the page {URL}", mode)
    reply = _tool_reply(model.requests_of("executor")[1])
    assert reply.content == f"Error: the tool `fetch_page` failed: {CONNECTION}"
    assert result["response"] == "The page cannot be fetched."

    model = FakeChatModel(
        planner=[plan("read the page")],
        executor=[call("fetch_page", url=URL)],
    )
    graph = build_plan_execute_graph(model, [fetch_page])
    with pytest.raises(openai.APIConnectionError) as caught:
        run(graph, f"Summarise the page {URL}", mode, context=RAISE)
    assert not isinstance(caught.value, ModelUnavailableError)


def _executor_looks_up(request: dict[str, Any]) -> Reply:
    if script.classify(request).role == "executor" and request["messages"][-1]["role"] != "tool":
        return tool_call("lookup", {"item": "A"})
    return script.respond(request)


def test_the_cli_goes_on_by_default_and_fails_fast_with_tool_errors_raise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    tools = ["--tools", f"{__name__}:lookup"]  # this module's tool
    with ScriptedOpenAIServer(_executor_looks_up) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        went_on = invoke(capsys, "run", "Look A up in 1 steps", "--thread-id", "a", *tools)
        failed = invoke(
            capsys, "run", "Look A up in 1 steps", "--thread-id", "b", "--tool-errors", "raise",
            *tools,
        )  # fmt: skip
        tool_results = [m for r in server.requests for m in r["messages"] if m["role"] == "tool"]

    assert went_on.code == output.ExitCode.OK, went_on.err
    assert "All 1 steps of [look a up in 1] are done" in went_on.out
    assert tool_results[0]["content"] == DOWN
    assert failed.code == output.ExitCode.FAILED, failed.err
    assert failed.err.splitlines()[-2:] == [
        "replan: unexpected error: RuntimeError: catalogue database is down",
        "The run is saved; continue it with: replan resume --thread-id b",
    ]
