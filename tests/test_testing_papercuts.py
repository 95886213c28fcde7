"""`replan.testing` as a user meets it: a taken port said in one line, only the paths a real
server serves, and the default responder running edited plans and replan inside an agent."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from replan.cli.output import ExitCode
from replan.testing import ScriptedOpenAIServer, command, cooperative, tool_call
from replan.testing import plan_script as script
from replan.testing.requests import executor_step, planned_steps
from tests.support.cli_harness import PLANNED, invoke
from tests.support.readme import doc, python_blocks


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[ScriptedOpenAIServer]:
    """The default responder of `python -m replan.testing`, reached through the environment;
    the in-process CLI runs in `tmp_path`."""
    with ScriptedOpenAIServer(cooperative.respond) as server:
        monkeypatch.chdir(tmp_path)
        monkeypatch.delenv("REPLAN_DB", raising=False)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        yield server


# --- a taken port ---------------------------------------------------------------------------


def test_a_taken_port_is_a_usage_error_said_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(SystemExit) as exited:
            command.main(["--port", str(port)])
    assert exited.value.code == command.USAGE_ERROR == 2
    said = capsys.readouterr()
    assert said.err == f"python -m replan.testing: port {port} is taken: Address already in use\n"
    assert said.out == ""


@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_a_port_out_of_range_is_a_usage_error(
    port: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        command.main(["--port", port])
    assert exited.value.code == 2
    said = capsys.readouterr().err.splitlines()[-1]
    assert said.endswith(f"error: argument --port: {port!r} is not a port (0 to 65535)")


# --- only the paths a real server serves ----------------------------------------------------


def _status_and_body(url: str, method: str) -> tuple[int, Any]:
    data = json.dumps({"model": "m", "messages": []}).encode() if method == "POST" else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/chat/completions"),  # a base URL without /v1
        ("GET", "/models"),
        ("POST", "/v1/chat/completions/"),
        ("POST", "/api/v1/chat/completions"),
        ("GET", "/v1/chat/completions"),
        ("POST", "/v1/models"),
        ("GET", "/v1/model"),
    ],
)
def test_other_paths_are_not_found_as_on_a_real_server(method: str, path: str) -> None:
    with ScriptedOpenAIServer(script.respond) as server:
        root = server.base_url.removesuffix("/v1")
        status, body = _status_and_body(root + path, method)
        assert server.requests == []
    assert status == 404
    assert body == {
        "error": {
            "message": f"Invalid URL ({method} {path})",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }


def test_the_v1_paths_are_served() -> None:
    with ScriptedOpenAIServer(script.respond) as server:
        models = _status_and_body(f"{server.base_url}/models?limit=5", "GET")
        chat = _status_and_body(f"{server.base_url}/chat/completions", "POST")
    assert models[0] == 200 and models[1]["data"][0]["id"] == "scripted-model"
    assert chat[0] == 200 and chat[1]["object"] == "chat.completion"


def test_replan_reports_a_base_url_without_v1_as_for_a_real_server(
    served: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    root = served.base_url.removesuffix("/v1")
    ran = invoke(capsys, "run", "Ship it in 2 steps", *PLANNED, "--base-url", root, "--quiet")
    assert ran.code == ExitCode.MODEL_UNAVAILABLE
    said = "the model server answered HTTP 404: Invalid URL (POST /chat/completions)"
    assert ran.err.splitlines()[0] == f"replan: {said}"
    checked = invoke(capsys, "check", "--base-url", root, "--model", "scripted-model")
    assert checked.code == ExitCode.FAILED
    assert checked.err.splitlines()[-1] == (
        f"replan check: not usable: a plain chat completion failed: {said}"
    )
    assert served.requests == []


# --- the default responder: edited plans, replan inside an agent ----------------------------

OBJECTIVE = "Ship it in 3 steps"
SCRIPTED = [script.step_text(i, 3, "ship it in 3 steps") for i in (1, 2, 3)]


def _edited(capsys: pytest.CaptureFixture[str], thread: str, *steps: str) -> str:
    """The answer of a run whose plan was edited to `steps` at approval (it must succeed)."""
    waiting = invoke(capsys, "run", OBJECTIVE, *PLANNED, "--thread-id", thread, "--approve-plan")
    assert waiting.code == 4
    edited = invoke(capsys, "resume", "--thread-id", thread, "--edit-plan", *steps)
    assert edited.code == 0, edited.err
    return edited.out.strip()


def test_an_edited_plan_of_free_text_steps_runs_to_its_answer(
    served: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    steps = (
        "Write the release notes",
        '{"step": "Tag the release", "depends_on": []}',
        '{"step": "Announce it", "depends_on": [1, 2]}',
    )
    assert _edited(capsys, "free", *steps) == (
        "Results: Carried out: Write the release notes; Carried out: Tag the release; "
        "Carried out: Announce it"
    )
    executors = [r for r in served.requests if script.classify(r).role == "executor"]
    done = ["Write the release notes", "Tag the release", "Announce it"]
    assert [executor_step(r) for r in executors] == done
    assert script.executor_steps(served.requests) == [None, None, None]
    replanners = [r for r in served.requests if script.classify(r).role == "replanner"]
    assert [planned_steps(r) for r in replanners] == [
        [{"step": "Announce it", "depends_on": [1, 2]}],
        [],
    ]


@pytest.mark.parametrize(
    ("steps", "answer"),
    [
        (
            ["Write the release notes", SCRIPTED[1], SCRIPTED[2]],
            "Results: Carried out: Write the release notes; Executed step 2: RESULT 2/3; "
            "Executed step 3: RESULT 3/3",
        ),
        (
            [SCRIPTED[0], "Announce it"],
            "Results: Executed step 1: RESULT 1/3; Carried out: Announce it",
        ),
    ],
)
def test_an_edit_of_some_steps_runs_the_edited_plan(
    served: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    steps: list[str],
    answer: str,
) -> None:
    assert _edited(capsys, "some", *steps) == answer


def test_an_edit_keeping_the_scripted_steps_still_answers_with_their_markers(
    served: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = [script.step_text(i, 2, "mine") for i in (1, 2)]
    assert _edited(capsys, "kept", *mine) == script.final_answer(2, "mine", {1, 2})
    assert script.executor_steps(served.requests) == [1, 2]


def test_the_create_agent_example_runs_on_the_default_responder(
    served: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    graph_md = doc("graph.md")
    code = python_blocks("Inside other agents", graph_md)[0]
    exec(compile(code, f"{graph_md}:subagent", "exec", dont_inherit=True), {"__name__": "agent"})

    inner = script.final_answer(3, "get the 2 0 release", {1, 2, 3})
    assert capsys.readouterr().out.strip() == f"{script.DONE} {inner}"
    outer = [r for r in served.requests if "plan_and_execute" in json.dumps(r.get("tools"))]
    assert len(outer) == 2
    (call,) = script.respond(outer[0]).calls
    assert (call.name, json.loads(call.arguments)) == (
        "plan_and_execute",
        {"task": "Get the 2.0 release out"},
    )
    assert script.executor_steps([r for r in served.requests if r not in outer]) == [1, 2, 3]


def test_an_agent_s_request_is_answered_at_once_without_tools() -> None:
    asked = {"messages": [{"role": "user", "content": "What is the capital of France?"}]}
    assert script.respond(asked).content == f"{script.DIRECT_ANSWER} What is the capital of France?"
    assert script.classify(asked) == script.Call("executor")  # the roles are as they were


def test_an_agent_s_tool_without_parameters_is_called_without_arguments() -> None:
    tool = {"type": "function", "function": {"name": "ping", "parameters": {}}}
    asked = {"messages": [{"role": "user", "content": "Ping it"}], "tools": [tool]}
    assert script.respond(asked) == tool_call("ping", {})
