"""`replan` against servers that refuse a way of asking for decisions: the fallback is shown
while the run goes on, stored with the run, kept on resume; a server failing every way is
still "model unavailable"."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from replan.cli.output import ExitCode
from replan.testing import LLAMA_CPP_PYTHON, Quirks, Reply, ScriptedOpenAIServer, http_error
from replan.testing import plan_script as script
from tests.support.cli_harness import PLANNED, invoke, run_cli

FALLBACK_LINE = (
    "model server refused tool_choice 'required' (HTTP 500); asking for decisions as "
    "tool_named from now on"
)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[ScriptedOpenAIServer]:
    """A llama-cpp-python-like server; the working folder holds the runs database."""
    with ScriptedOpenAIServer(script.respond, quirks=LLAMA_CPP_PYTHON) as scripted:
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_BASE_URL", scripted.base_url)
        yield scripted


def _show(capsys: pytest.CaptureFixture[str], thread_id: str) -> dict[str, Any]:
    outcome = invoke(capsys, "show", "--thread-id", thread_id, "--json")
    assert outcome.code == ExitCode.OK, outcome.err
    shown: dict[str, Any] = json.loads(outcome.out)
    return shown


def test_a_refusal_is_shown_stored_and_kept_on_resume(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    busy = {"step": 2}

    def respond(request: dict[str, Any]) -> Reply:
        if script.classify(request) == script.Call("executor", busy.get("step")):
            return http_error(503, "busy")
        return script.respond(request)

    server.responder = respond
    args = ["--thread-id", "t1", "--max-retries", "0"]
    first = invoke(capsys, "run", *PLANNED, "Compare task queues in 2 steps", *args)

    assert first.code == ExitCode.MODEL_UNAVAILABLE, first.err
    assert FALLBACK_LINE in first.err.splitlines()
    shown = _show(capsys, "t1")
    assert shown["settings"]["decision_mode"] == "tool_named"
    assert shown["decision_mode"]["mode"] == "tool_named"
    assert [f["refused"] for f in shown["decision_mode"]["fallbacks"]] == ["tool_required"]
    text = invoke(capsys, "show", "--thread-id", "t1").out
    assert "decision_mode: tool_named" in text
    assert f"Decisions asked as tool_named:\n  {FALLBACK_LINE}" in text

    busy.clear()
    before = len(server.requests)
    second = invoke(capsys, "resume", "--thread-id", "t1", "--json")

    assert second.code == ExitCode.OK, second.err
    assert "refused" not in second.err
    resumed = json.loads(second.out)
    assert resumed["settings"]["decision_mode"] == "tool_named"
    choices = [r.get("tool_choice") for r in server.requests[before:]]
    assert {"type": "function", "function": {"name": "decide"}} in choices
    assert "required" not in choices


def test_an_explicit_mode_is_stored_and_used(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = invoke(
        capsys,
        "run",
        *PLANNED,
        "Sum up in 1 steps",
        "--thread-id",
        "t2",
        "--decision-mode",
        "json_object",
    )

    assert outcome.code == ExitCode.OK, outcome.err
    assert "refused" not in outcome.err
    assert _show(capsys, "t2")["settings"]["decision_mode"] == "json_object"
    formats = [(r.get("response_format") or {}).get("type") for r in server.requests]
    assert formats.count("json_object") == 2  # the planner and the replanner


def test_a_bad_decision_mode_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        invoke(capsys, "run", *PLANNED, "x", "--decision-mode", "grammar")
    assert stopped.value.code == ExitCode.USAGE
    assert "argument --decision-mode: invalid choice: 'grammar'" in capsys.readouterr().err


@pytest.mark.slow  # a real process
def test_a_server_failing_every_way_is_still_model_unavailable(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    server.quirks = Quirks()  # a server that takes every way, but is broken
    server.responder = lambda request: (
        http_error(500, "out of memory")
        if script.classify(request).role == "replanner"
        else script.respond(request)
    )
    outcome = run_cli(
        server,
        tmp_path,
        "run",
        *PLANNED,
        "Sum up in 1 steps",
        "--max-retries",
        "0",
    )

    assert outcome.code == ExitCode.MODEL_UNAVAILABLE, outcome.err
    assert "replan: the model server answered HTTP 500: out of memory" in outcome.err
    assert "refused" not in outcome.err
    assert "Traceback" not in outcome.err
