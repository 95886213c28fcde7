"""`replan run --tools REF`: the executor gets the user's tools, `resume` loads the same ones
from any folder, and a reference that does not load is a usage error in one line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from replan.cli.output import ExitCode
from replan.testing import ScriptedOpenAIServer
from replan.testing import plan_script as script
from tests.support.cli_harness import PRICE_TOOLS, invoke, looks_up_a_price, serving_tools


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[ScriptedOpenAIServer]:
    """The scripted server; the CLI runs in `tmp_path/work`, whose `shop_tools.py` has TOOLS."""
    tools = {"shop_tools.py": PRICE_TOOLS}
    with serving_tools(monkeypatch, tmp_path, tools, looks_up_a_price) as srv:
        yield srv


def _executor_tools(server: ScriptedOpenAIServer) -> list[list[str]]:
    return [
        script.tool_names(request)
        for request in server.requests
        if script.classify(request).role == "executor"
    ]


def _tool_results(server: ScriptedOpenAIServer) -> list[str]:
    return [
        str(message.get("content"))
        for request in server.requests
        for message in request.get("messages", [])
        if message.get("role") == "tool"
    ]


def test_a_run_calls_the_tools_it_was_given(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    done = invoke(
        capsys, "run", "Ship it in 2 steps", "--thread-id", "t", "--tools", "./shop_tools.py:TOOLS"
    )
    assert done.code == 0, done.err
    assert all("price" in names for names in _executor_tools(server))
    assert "A costs 4.20" in _tool_results(server)
    assert '→ price(item="A")' in done.err
    settings = json.loads(invoke(capsys, "show", "--thread-id", "t", "--json").out)["settings"]
    assert settings["tools"] == f"{tmp_path / 'work' / 'shop_tools.py'}:TOOLS"


def test_resume_loads_the_run_s_tools_from_any_folder(
    server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    args = ["--thread-id", "w", "--approve-plan", "--tools", "shop_tools.py:TOOLS"]
    assert invoke(capsys, "run", "Ship it in 2 steps", *args).code == ExitCode.AWAITING_APPROVAL
    monkeypatch.chdir(tmp_path)  # shop_tools.py is not here
    approved = invoke(capsys, "resume", "--thread-id", "w", "--approve")
    assert approved.code == 0, approved.err
    assert _executor_tools(server) and all("price" in n for n in _executor_tools(server))
    assert "A costs 4.20" in _tool_results(server)


def test_a_run_without_tools_offers_none_of_its_own(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.responder = script.respond
    assert invoke(capsys, "run", "Ship it in 2 steps", "--thread-id", "n").code == 0
    assert not any("price" in names for names in _executor_tools(server))
    settings = json.loads(invoke(capsys, "show", "--thread-id", "n", "--json").out)["settings"]
    assert "tools" not in settings


@pytest.mark.parametrize(
    ("reference", "problem"),
    [
        ("shop_tools.py", "expected PATH.py:NAME or package.module:NAME"),
        ("nothing.py:TOOLS", "no file {work}/nothing.py"),
        ("shop_tools.py:MISSING", "{work}/shop_tools.py has no MISSING"),
        ("no_such_package.tools:TOOLS", "no module named no_such_package.tools"),
    ],
)
def test_a_reference_that_does_not_load_is_a_usage_error(
    server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    reference: str,
    problem: str,
) -> None:
    refused = invoke(capsys, "run", "Ship it", "--tools", reference)
    line = f"replan: --tools {reference}: {problem.format(work=tmp_path / 'work')}\n"
    assert (refused.code, refused.out, refused.err) == (ExitCode.USAGE, "", line)
    assert server.requests == [] and not (tmp_path / "runs.sqlite").exists()


def test_a_run_s_tools_that_no_longer_load_stop_its_resume_in_one_line(
    server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    args = ["--thread-id", "g", "--approve-plan", "--tools", "shop_tools.py:TOOLS"]
    assert invoke(capsys, "run", "Ship it in 2 steps", *args).code == ExitCode.AWAITING_APPROVAL
    (tmp_path / "work" / "shop_tools.py").write_text("def broken(:\n")
    refused = invoke(capsys, "resume", "--thread-id", "g", "--approve")
    path = tmp_path / "work" / "shop_tools.py"
    assert (refused.code, refused.err) == (
        ExitCode.USAGE,
        f"replan: --tools {path}:TOOLS: {path} line 1: SyntaxError: invalid syntax\n",
    )
    waiting = json.loads(invoke(capsys, "show", "--thread-id", "g", "--json").out)
    assert waiting["status"] == "waiting_for_approval"
