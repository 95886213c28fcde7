"""`replan show` of runs the CLI did not start or could not describe well: a run started by the
library says when it started, a run whose input had no objective says so in its status, and a
plan waiting for approval shows the review's question (why the last answer was refused) and the
commands that answer it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from replan.cli.summary import local_time
from replan.graphs.context import Context
from replan.graphs.errors import InvalidInputError
from replan.graphs.persistence import DEFAULT_DB, open_checkpointer
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.testing import ScriptedOpenAIServer
from replan.testing import plan_script as script
from tests.support.cli_harness import invoke

APPROVE = Context(approve_plan=True, task_tools="compact")
ANSWER_WITH = (
    "Answer with: replan resume --thread-id waiting --approve | --reject [REASON] "
    "| --edit-plan STEP ..."
)


def _config(thread: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread}}


async def _library_runs(db: Path) -> dict[str, str]:
    """Threads started through the library (no start time in their metadata): `library`
    finished, `empty` given no objective, `waiting` for approval after an answer it refused;
    the time each thread's first checkpoint was saved."""
    async with open_checkpointer(db) as saver:
        graph = build_plan_execute_graph(checkpointer=saver)
        await graph.ainvoke(
            {"messages": [("user", "Library in 2 steps")]},
            _config("library"),
            context=Context(task_tools="compact"),
        )
        with pytest.raises(InvalidInputError):
            await graph.ainvoke({"messages": []}, _config("empty"))
        await graph.ainvoke(
            {"messages": [("user", "Wait in 2 steps")]}, _config("waiting"), context=APPROVE
        )
        await graph.ainvoke(Command(resume="maybe"), _config("waiting"), context=APPROVE)
        return {
            thread: [s async for s in graph.aget_state_history(_config(thread))][-1].created_at
            for thread in ("library", "empty", "waiting")
        }


@pytest.fixture
def first_saved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """replan.sqlite in `tmp_path` (the current folder) with the library's runs."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with ScriptedOpenAIServer(script.respond) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        yield asyncio.run(_library_runs(tmp_path / DEFAULT_DB))


def _show(capsys: pytest.CaptureFixture[str], thread: str) -> tuple[str, dict[str, Any]]:
    shown = invoke(capsys, "show", "--thread-id", thread)
    assert shown.code == 0, shown.err
    document = invoke(capsys, "show", "--thread-id", thread, "--json")
    return shown.out, json.loads(document.out)


def test_a_run_started_by_the_library_started_with_its_first_checkpoint(
    first_saved: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    for thread, started in first_saved.items():
        text, document = _show(capsys, thread)
        assert f"\nStarted: {local_time(started)}\n" in text, thread
        assert document["started_at"] == started
    threads = json.loads(invoke(capsys, "threads", "--json").out)
    assert {run["thread_id"]: run["started_at"] for run in threads} == first_saved


def test_a_run_given_no_objective_failed_for_its_input(
    first_saved: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    text, document = _show(capsys, "empty")
    assert "\nStatus: failed: the input has no objective\n" in text
    assert "\nError: the input has no objective: give at least one user message" in text
    assert (document["status"], document["nodes"]) == ("failed", ["planner"])
    assert document["error"]["type"] == "InvalidInputError"
    assert document["error"]["message"].startswith("the input has no objective: give")
    (row,) = [r for r in invoke(capsys, "threads").out.splitlines() if r.startswith("empty ")]
    assert "failed: the input has no objective" in row


def test_a_plan_waiting_for_approval_shows_the_question_and_the_answers(
    first_saved: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    text, document = _show(capsys, "waiting")
    question = document["review"]["question"]
    assert '"maybe"' in question  # the refused answer, and why
    indented = "\n".join(f"  {line}" for line in question.splitlines())
    assert text.endswith(f"\nReview question:\n{indented}\n{ANSWER_WITH}\n")
    finished, _ = _show(capsys, "library")
    assert "Review question:" not in finished and "Answer with:" not in finished
