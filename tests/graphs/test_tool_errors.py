"""A user's tool failing with an OpenAI client error is the tool's failure, not the model's:
only model calls are mapped to `ModelUnavailableError` (and the CLI's exit code 3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest
from langchain_core.tools import tool

from replan.cli import output
from replan.graphs.errors import ModelUnavailableError
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.testing import Reply, ScriptedOpenAIServer, tool_call
from replan.testing import plan_script as script
from tests.support.cli_harness import invoke
from tests.support.fake_models import FakeChatModel, Mode, both_modes, call, plan, run


@tool
def fetch_page(url: str) -> str:
    """Fetch a web page (through a service that is down)."""
    with openai.DefaultHttpxClient() as client:  # the HTTP library of this openai version
        raise openai.APIConnectionError(request=client.build_request("GET", url))


@both_modes
def test_a_tool_raising_a_connection_error_is_not_a_model_outage(mode: Mode) -> None:
    model = FakeChatModel(
        planner=[plan("read the page")],
        executor=[call("fetch_page", url="http://127.0.0.1:9/page")],
    )
    graph = build_plan_execute_graph(model, [fetch_page])
    with pytest.raises(openai.APIConnectionError) as caught:
        run(graph, "Summarise the page", mode)
    assert not isinstance(caught.value, ModelUnavailableError)


def test_the_cli_reports_it_as_a_failed_run_not_exit_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def executor_fetches(request: dict[str, Any]) -> Reply:
        if script.classify(request).role == "executor":
            return tool_call("fetch_page", {"url": "http://127.0.0.1:9/page"})
        return script.respond(request)

    monkeypatch.chdir(tmp_path)
    with ScriptedOpenAIServer(executor_fetches) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        tools = ["--tools", f"{__name__}:fetch_page"]  # this module's tool
        failed = invoke(capsys, "run", "Read a page in 1 steps", "--thread-id", "t", *tools)

    assert failed.code == output.ExitCode.FAILED, failed.err
    assert "Traceback" not in failed.err and "model" not in failed.err.splitlines()[-2]
    assert failed.err.splitlines()[-1].endswith("replan resume --thread-id t")
