"""The README's task-tools examples run as written, against the scripted OpenAI server."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.readme import README, python_blocks
from tests.scripted_openai import ScriptedOpenAIServer, text, tool_calls


def test_the_readme_agent_plans_with_parallel_task_calls(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    agent_example, _ = python_blocks("Task tools")
    creates = [
        ("TaskCreate", {"subject": subject, "description": "release step"})
        for subject in ("Run the test suite", "Write the changelog", "Tag the release")
    ]
    with ScriptedOpenAIServer() as server:
        server.push(tool_calls(creates), text("The release is planned."))
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        exec(compile(agent_example, f"{README}:task-tools", "exec"), {"__name__": "readme"})
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


def test_the_readme_shared_store_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, store_example = python_blocks("Task tools")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "readme"}
    exec(compile(store_example, f"{README}:task-store", "exec"), namespace)
    create = namespace["shared_tools"][0]  # type: ignore[index]
    assert create.invoke({"subject": "Shared", "description": ""}).startswith("Task #1")
    assert (tmp_path / "team-tasks" / "1.json").exists()
