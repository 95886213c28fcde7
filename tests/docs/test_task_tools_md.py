"""docs/task-tools.md's examples run as written, against the scripted OpenAI server."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from replan.testing import ScriptedOpenAIServer, text, tool_call, tool_calls
from tests.support.readme import doc, python_blocks, run_example, section_text

TASK_TOOLS = doc("task-tools.md")


def test_the_doc_s_agent_plans_with_parallel_task_calls(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (agent_example,) = python_blocks("The tools in your own graph", TASK_TOOLS)
    creates = [
        ("TaskCreate", {"subject": subject, "description": "release step"})
        for subject in ("Run the test suite", "Write the changelog", "Tag the release")
    ]
    with ScriptedOpenAIServer() as server:
        server.push(tool_calls(creates), text("The release is planned."))
        run_example(agent_example, f"{TASK_TOOLS}:task-tools", server.base_url, monkeypatch)
        requests = server.requests
    assert capsys.readouterr().out.splitlines() == [
        "#1 [pending] Collect the changes",
        "#2 [pending] Run the test suite",
        "#3 [pending] Write the changelog",
        "#4 [pending] Tag the release",
    ]
    offered = {tool["function"]["name"] for tool in requests[0]["tools"]}
    assert offered == {"TaskCreate", "TaskGet", "TaskUpdate", "TaskList"}
    # the second request carries the three tool results back to the model
    replies = [m for m in requests[1]["messages"] if m["role"] == "tool"]
    assert [r["content"].split(":")[0] for r in replies] == [
        "Task #2 created successfully",
        "Task #3 created successfully",
        "Task #4 created successfully",
    ]


def test_the_doc_s_shared_store_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store_example, _ = python_blocks("Shared task stores", TASK_TOOLS)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "readme"}
    exec(compile(store_example, f"{TASK_TOOLS}:task-store", "exec"), namespace)
    create = namespace["shared_tools"][0]  # type: ignore[index]
    assert create.invoke({"subject": "Shared", "description": ""}).startswith("Task #1")
    assert (tmp_path / "team-tasks" / "1.json").exists()


def test_the_doc_s_create_agent_example_shows_the_list_in_state_and_prompt(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (example,) = python_blocks("In LangChain agents: TaskToolsMiddleware", TASK_TOOLS)
    creates = [
        ("TaskCreate", {"subject": subject, "description": "release step"})
        for subject in ("Run the test suite", "Write the changelog", "Tag the release")
    ]
    with ScriptedOpenAIServer() as server:
        server.push(
            tool_calls(creates),
            tool_call("TaskUpdate", {"taskId": "1", "status": "in_progress"}),
            text("The tests are running."),
        )
        run_example(example, f"{TASK_TOOLS}:create-agent", server.base_url, monkeypatch)
        requests = server.requests
    listing = [
        "#1 [in_progress] Run the test suite",
        "#2 [pending] Write the changelog",
        "#3 [pending] Tag the release",
    ]
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == listing
    assert out[3] == "## Task list" and out[-4:] == [
        "3 tasks: 1 in progress, 2 pending, 0 completed.",
        *listing,
    ]
    offered = {tool["function"]["name"] for tool in requests[0]["tools"]}
    assert offered == {"TaskCreate", "TaskGet", "TaskUpdate", "TaskList"}
    system = requests[-1]["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith("You prepare software releases.\n\n## Task list")
    assert system["content"].endswith("\n".join(listing))


def test_every_test_the_comparison_table_names_exists() -> None:
    section = section_text("In LangChain agents: TaskToolsMiddleware", TASK_TOOLS)
    named = set(re.findall(r"`(test_\w+)`", section))
    source = (Path(__file__).parents[1] / "tools" / "test_task_middleware.py").read_text(
        encoding="utf-8"
    )
    defined = set(re.findall(r"^def (test_\w+)", source, re.M))
    assert len(named) == 10 and named <= defined


def test_the_doc_s_postgres_store_example(postgres_url: str) -> None:
    _, postgres_example = python_blocks("Shared task stores", TASK_TOOLS)
    example_url = "postgresql://agents@db.internal/replan"
    assert example_url in postgres_example
    namespace: dict[str, object] = {"__name__": "readme"}
    code = postgres_example.replace(example_url, postgres_url)
    exec(compile(code, f"{TASK_TOOLS}:task-store-postgres", "exec"), namespace)
    create = namespace["shared_tools"][0]  # type: ignore[index]
    assert create.invoke({"subject": "Shared", "description": ""}).startswith("Task #1")
    store = namespace["store"]
    assert [t.subject for t in store.read().tasks] == ["Shared"]  # type: ignore[attr-defined]
    assert store.list_name == "release-2.0"  # type: ignore[attr-defined]
    store.close()  # type: ignore[attr-defined]
