"""The README's main job, with defaults, on a server that imitates the small local model it was
tried on (numbered step texts, any offered tool called): what needs no tool is answered in one
plain request, the task tools come only when asked for, and a step's text carries no number of
its own."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import tool

from replan import Context, FileTaskStore, build_plan_execute_graph
from replan.graphs.prompts import DEFAULT_PROMPTS
from replan.testing import LLAMA_CPP, MODEL_ID, ScriptedOpenAIServer
from replan.testing import plan_script as script
from replan.testing.requests import prompt_text, tool_names
from tests.support.cli_harness import invoke
from tests.support.readme import README

MAIN_JOB = "Compare three Python task queues and recommend one"
SMALL_MODEL = replace(LLAMA_CPP, numbers_steps=True, calls_offered_tool="TaskList")
"""llama-server with the small model's habits seen on the main job: plans whose steps carry
their numbers, and a task-list call in any step offered one."""


@tool
def word_count(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[ScriptedOpenAIServer]:
    """The scripted server with the small model's quirks; the CLI runs in `tmp_path`."""
    with ScriptedOpenAIServer(script.respond, quirks=SMALL_MODEL) as server:
        monkeypatch.chdir(tmp_path)
        monkeypatch.delenv("REPLAN_DB", raising=False)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        yield server


def test_the_readme_main_job_is_one_plain_request_with_defaults(
    small: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert MAIN_JOB in README.read_text()  # its first command
    done = invoke(capsys, "run", MAIN_JOB, "--thread-id", "job")

    assert done.code == 0, done.err
    (only,) = small.requests
    assert not {"tools", "tool_choice", "response_format"} & only.keys()
    system, user = only["messages"]
    assert system["role"] == "system" and user["role"] == "user"
    assert user["content"] == f"{MAIN_JOB}\n\n{DEFAULT_PROMPTS.answer_direct}"
    assert done.out.strip() == f"{script.DIRECT_ANSWER} {MAIN_JOB}"
    assert "Nothing to carry out (the run has no tools): answering directly." in done.err
    assert done.err.splitlines()[-1].startswith("Objective done in ")
    shown = invoke(capsys, "show", "--thread-id", "job", "--json").out
    assert '"executed_steps": []' in shown and '"task_tools": null' in shown


def test_a_follow_up_on_a_thread_with_no_tools_answers_the_conversation(
    small: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    invoke(capsys, "run", MAIN_JOB, "--thread-id", "chat")
    follow_up = invoke(capsys, "run", "Now pick one for us", "--thread-id", "chat")

    assert follow_up.code == 0, follow_up.err
    first, second = small.requests
    said = [(m["role"], m["content"]) for m in second["messages"][1:]]
    assert said[:2] == [
        ("user", MAIN_JOB),
        ("assistant", f"{script.DIRECT_ANSWER} {MAIN_JOB}"),
    ]
    assert said[2][1].startswith("Now pick one for us\n\n")


def test_the_task_tools_come_only_when_asked_for_or_shared(
    small: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    context = Context(model=MODEL_ID, base_url=small.base_url)
    offered: dict[str, list[str]] = {}
    graphs: dict[str, Any] = {
        "default": (build_plan_execute_graph(tools=[word_count]), context),
        "asked": (
            build_plan_execute_graph(tools=[word_count]),
            replace(context, task_tools="compact"),
        ),
        "graph": (build_plan_execute_graph(tools=[word_count], task_tools="full"), context),
        "shared": (
            build_plan_execute_graph(tools=[word_count], task_store=FileTaskStore(tmp_path)),
            context,
        ),
    }
    for name, (graph, run_context) in graphs.items():
        seen = len(small.requests)
        graph.invoke({"messages": [("user", "Ship it in 2 steps")]}, context=run_context)
        executor = next(r for r in small.requests[seen:] if script.classify(r).role == "executor")
        offered[name] = tool_names(executor)
    tasks = ["TaskCreate", "TaskGet", "TaskUpdate", "TaskList"]
    assert offered == {
        "default": ["word_count"],  # so the small model's habit has no task list to call
        "asked": ["word_count", *tasks],
        "graph": ["word_count", *tasks],
        "shared": ["word_count", *tasks],
    }


def test_a_step_text_keeps_no_number_of_its_own(
    small: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    done = invoke(
        capsys, "run", "Ship it in 3 steps", "--task-tools", "compact", "--thread-id", "n"
    )

    assert done.code == 0, done.err
    planned = [prompt_text(r) for r in small.requests if script.classify(r).role == "planner"]
    assert planned  # the model numbered its steps (the quirk): they are kept without
    shown = invoke(capsys, "show", "--thread-id", "n").out
    step = script.step_text(1, 3, "ship it in 3 steps")
    assert f"1. {step}" in done.err and f"1. 1. {step}" not in done.err
    assert f"1. 1. {step}" not in shown
    listed = invoke(capsys, "show", "--thread-id", "n", "--json").out
    assert f'"step": "{step}"' in listed
