"""Model servers that fail now and then, or stay down, do not lose a run."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from replan.testing import BROKEN_REPLIES, Reply, ScriptedOpenAIServer, http_error
from replan.testing import plan_script as script
from tests.support.cli_harness import PLANNED, invoke
from tests.support.fake_models import ANSWER_CALLS

ANSWER = "All 3 steps of [flaky in 3 steps] are done: RESULT 1/3, RESULT 2/3, RESULT 3/3"


@pytest.fixture(autouse=True)
def _cli_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    yield


def test_intermittent_500_and_429_are_retried(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every other request fails (500, then 429) and the first turn fails twice: retries of
    the model client, set per run (`--max-retries`, `Context.max_retries`), absorb it all."""
    counter = itertools.count()
    errors = itertools.cycle(
        [http_error(500, "hiccup", retry_after_ms=5), http_error(429, retry_after_ms=5)]
    )

    def flaky(request: dict[str, Any]) -> Reply:
        return next(errors) if next(counter) % 2 == 0 else script.respond(request)

    with ScriptedOpenAIServer(flaky) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        server.push(http_error(429, "slow down", retry_after_ms=5))
        done = invoke(capsys, "run", *PLANNED, "Flaky in 3 steps", "--max-retries", "2")
        assert (done.code, done.out.strip()) == (0, ANSWER), done.err
        # 7 model turns (and the answer), each failing once first, plus the queued 429.
        assert len(server.requests) == 2 * (7 + ANSWER_CALLS) + 1


def test_server_down_for_the_executor_then_healthy_resumes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    down = True

    def executor_down(request: dict[str, Any]) -> Reply:
        if down and script.classify(request).role == "executor":
            return http_error(500, "executor backend down", retry_after_ms=5)
        return script.respond(request)

    with ScriptedOpenAIServer(executor_down) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        failed = invoke(
            capsys,
            "run",
            *PLANNED,
            "Flaky in 3 steps",
            "--thread-id",
            "d",
            "--max-retries",
            "2",
        )
        assert failed.code == 3
        assert "Traceback" not in failed.err and failed.out == ""
        assert failed.err.splitlines()[-2:] == [
            "replan: the model server answered HTTP 500: executor backend down",
            "The run is saved; continue it with: replan resume --thread-id d",
        ]
        assert script.executor_steps(server.requests) == [1, 1, 1]
        shown = invoke(capsys, "show", "--thread-id", "d")
        assert "Status: failed at executor" in shown.out

        down = False
        resumed = invoke(capsys, "resume", "--thread-id", "d")
        assert (resumed.code, resumed.out.strip()) == (0, ANSWER), resumed.err
        roles = [script.classify(r).role for r in server.requests]
        assert roles.count("planner") == 1
        assert script.executor_steps(server.requests) == [1, 1, 1, 1, 2, 3]


@pytest.mark.parametrize("kind", list(BROKEN_REPLIES))
def test_a_server_sending_no_chat_completion_stops_with_one_line_and_resumes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    broken = True

    def replanner_broken(request: dict[str, Any]) -> Reply:
        if broken and script.classify(request).role == "replanner":
            return BROKEN_REPLIES[kind]
        return script.respond(request)

    with ScriptedOpenAIServer(replanner_broken) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        failed = invoke(
            capsys,
            "run",
            *PLANNED,
            "Flaky in 3 steps",
            "--thread-id",
            "b",
            "--max-retries",
            "0",
        )
        assert failed.code == 3 and failed.out == ""
        assert "Traceback" not in failed.err
        error, hint = failed.err.splitlines()[-2:]
        assert error.startswith("replan: replanner: the model server sent ")
        assert " ".join((BROKEN_REPLIES[kind].body or "").split())[:30] in error
        assert hint == "The run is saved; continue it with: replan resume --thread-id b"

        broken = False
        resumed = invoke(capsys, "resume", "--thread-id", "b")
        assert (resumed.code, resumed.out.strip()) == (0, ANSWER), resumed.err
        roles = [script.classify(r).role for r in server.requests]
        assert roles.count("planner") == 1 and script.executor_steps(server.requests) == [1, 2, 3]
