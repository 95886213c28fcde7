"""`replan show` and `--json` report the model's corrected mistakes (`corrected_mistakes`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replan.testing import ScriptedOpenAIServer, text, tool_call
from replan.testing import plan_script as script
from tests.support.cli_harness import PLANNED, invoke
from tests.support.mistaken_replies import mistaken

SHOWN = "Model mistakes corrected:"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test")


def test_show_and_json_count_corrected_mistakes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    replies = {"planner": text("Let me think."), "executor": tool_call("TaskList", '{"')}
    with ScriptedOpenAIServer(mistaken(replies)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        done = invoke(
            capsys,
            "run",
            *PLANNED,
            "Ship it in 1 steps",
            "--thread-id",
            "t",
            "--json",
        )
        shown = invoke(capsys, "show", "--thread-id", "t")
    assert done.code == 0, done.err
    assert json.loads(done.out)["corrected_mistakes"] == 2  # the planner's, the step's
    assert f"{SHOWN} 2" in shown.out.splitlines()


def test_a_run_without_mistakes_shows_no_line_and_counts_0(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedOpenAIServer(script.respond) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        assert invoke(capsys, "run", *PLANNED, "Ship it in 1 steps", "--thread-id", "t").code == 0
        shown = invoke(capsys, "show", "--thread-id", "t")
        document = json.loads(invoke(capsys, "show", "--thread-id", "t", "--json").out)
    assert document["corrected_mistakes"] == 0
    assert SHOWN not in shown.out
