"""A model server that cannot be reached: said once, retried quietly, and the thread stays open
for a follow-up."""

from __future__ import annotations

from pathlib import Path

import pytest

from replan.cli.output import ExitCode
from replan.testing import ScriptedOpenAIServer
from replan.testing import plan_script as script
from replan.testing.aegra import free_port
from tests.support.cli_harness import PLANNED, invoke


def test_an_unreachable_model_is_said_once_and_a_follow_up_may_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    nowhere = f"http://127.0.0.1:{free_port()}/v1"
    failed = invoke(capsys, "run", *PLANNED, "Ship it", "--thread-id", "t",
                    "--base-url", nowhere, "--max-retries", "3")  # fmt: skip

    assert failed.code == ExitCode.MODEL_UNAVAILABLE
    lines = failed.err.splitlines()
    retries = [line for line in lines if "retrying in" in line]
    assert len(retries) == 1 and retries[0].endswith("(retry 1 of 3)")
    assert sum("cannot reach the model server" in line for line in lines) == 1
    assert "Planner failed after " in failed.err

    with ScriptedOpenAIServer(script.respond) as server:
        again = invoke(capsys, "run", "Ship it in 1 steps", "--thread-id", "t",
                       "--base-url", server.base_url)  # fmt: skip
    assert again.code == ExitCode.OK, again.err
    assert "RESULT 1/1" in again.out
