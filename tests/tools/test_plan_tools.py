"""The eight plan tools as a model sees them: JSON results, error ToolMessages, confinement."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from replan.state.plans import FilesystemPlanStorage, InMemoryPlanStorage, PlanStorage
from replan.tools import plan_tools
from replan.tools.plan_descriptions import FIELD_DESCRIPTIONS, TOOL_DESCRIPTIONS
from tests.support.plan_backends import BACKENDS, Backend, corrupt

TOOL_NAMES = [
    "write_plan",
    "read_plan",
    "list_plans",
    "delete_plan",
    "update_plan_from_file",
    "export_plan_to_file",
    "set_plan_status",
    "get_plan_status",
]


class Agent:
    """One agent's plan toolset, called the way a graph calls it (a full tool call dict)."""

    def __init__(self, storage: PlanStorage, workspace: Path) -> None:
        self.tools = {tool.name: tool for tool in plan_tools(storage, workspace=workspace)}
        self.calls = 0

    def call(self, tool: str, /, **args: Any) -> ToolMessage:
        self.calls += 1
        call = {"type": "tool_call", "name": tool, "args": args, "id": f"call-{self.calls}"}
        message = self.tools[tool].invoke(call)
        assert isinstance(message, ToolMessage) and message.tool_call_id == call["id"]
        return message

    def ok(self, tool: str, /, **args: Any) -> Any:
        message = self.call(tool, **args)
        assert message.status == "success", message.content
        return json.loads(str(message.content))

    def error(self, tool: str, /, **args: Any) -> str:
        message = self.call(tool, **args)
        assert message.status == "error", message.content
        return str(message.content)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


@pytest.fixture
def storage() -> InMemoryPlanStorage:
    return InMemoryPlanStorage()


@pytest.fixture
def agent(storage: PlanStorage, workspace: Path) -> Agent:
    return Agent(storage, workspace)


def test_the_toolset_has_eight_described_tools(agent: Agent) -> None:
    assert list(agent.tools) == TOOL_NAMES
    for tool in agent.tools.values():
        assert isinstance(tool, BaseTool) and len(tool.description) > 40
        schema = tool.tool_call_schema.model_json_schema()  # type: ignore[union-attr]
        for field, spec in schema.get("properties", {}).items():
            assert spec.get("description"), f"{tool.name}.{field} has no description"
    export_args = agent.tools["export_plan_to_file"].args
    assert set(export_args) == {"name", "path", "overwrite"}
    write_args = agent.tools["write_plan"].args
    assert set(write_args) == {
        "name",
        "content",
        "title",
        "author",
        "status",
        "last_known_revision",
    }


def test_write_read_and_revisions(agent: Agent) -> None:
    created = agent.ok("write_plan", name="release", content="# v1", title="Release", author="a")
    assert created["revision"] == 1 and "content" not in created
    updated = agent.ok("write_plan", name="release", content="# v2", last_known_revision=1)
    assert updated["revision"] == 2 and updated["title"] == "Release"
    read = agent.ok("read_plan", name="release")
    assert (read["content"], read["revision"], read["author"]) == ("# v2", 2, "a")


def test_a_stale_write_is_refused_with_advice_and_changes_nothing(agent: Agent) -> None:
    agent.ok("write_plan", name="release", content="# v1")
    agent.ok("write_plan", name="release", content="# v2", last_known_revision=1)
    message = agent.error("write_plan", name="release", content="# lost", last_known_revision=1)
    assert "revision 2" in message and "read_plan" in message and "last_known_revision=2" in message
    assert agent.ok("read_plan", name="release")["content"] == "# v2"


def test_create_only_refuses_an_existing_name(agent: Agent) -> None:
    agent.ok("write_plan", name="release", content="mine", last_known_revision=0)
    message = agent.error("write_plan", name="release", content="theirs", last_known_revision=0)
    assert "already exists" in message
    assert agent.ok("read_plan", name="release")["content"] == "mine"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"name": "Bad Name", "content": "x"}, "invalid plan name"),
        ({"name": "a/b", "content": "x"}, "invalid plan name"),
        ({"name": "ok", "content": "   "}, "empty"),
        ({"name": "ok"}, "content"),
        ({"name": "ok", "content": "x", "last_known_revision": -1}, "last_known_revision"),
    ],
)
def test_bad_arguments_are_error_messages(
    agent: Agent, args: dict[str, Any], expected: str
) -> None:
    assert expected in agent.error("write_plan", **args)
    assert agent.ok("list_plans")["plans"] == []


def test_missing_plans_are_errors_that_point_to_list_plans(agent: Agent) -> None:
    for tool, args in [
        ("read_plan", {}),
        ("get_plan_status", {}),
        ("set_plan_status", {"status": "done"}),
        ("delete_plan", {}),
        ("export_plan_to_file", {"path": "out.md"}),
    ]:
        assert "list_plans" in agent.error(tool, name="ghost", **args)
    assert agent.ok("list_plans")["plans"] == []  # set_plan_status did not create it


def test_expecting_a_revision_of_a_missing_plan_says_it_does_not_exist(agent: Agent) -> None:
    message = agent.error("write_plan", name="ghost", content="x", last_known_revision=3)
    assert "does not exist" in message and "last_known_revision=0" in message
    assert agent.ok("list_plans")["plans"] == []


def test_status_tools_never_return_the_body(agent: Agent) -> None:
    agent.ok("write_plan", name="release", content="SECRET BODY", status="draft")
    assert agent.ok("get_plan_status", name="release") == {
        "name": "release",
        "status": "draft",
        "revision": 1,
    }
    stale = agent.error("set_plan_status", name="release", status="done", last_known_revision=5)
    assert "revision 1" in stale
    assert agent.ok("set_plan_status", name="release", status="done", last_known_revision=1) == {
        "name": "release",
        "status": "done",
        "revision": 2,
    }
    assert agent.ok("read_plan", name="release")["content"] == "SECRET BODY"


def test_list_and_delete(agent: Agent) -> None:
    for name in ("b-plan", "a-plan"):
        agent.ok("write_plan", name=name, content=f"body {name}")
    listing = agent.ok("list_plans")
    assert [plan["name"] for plan in listing["plans"]] == ["a-plan", "b-plan"]
    assert "warnings" not in listing and "body" not in json.dumps(listing)
    assert "revision 1" in agent.error("delete_plan", name="a-plan", last_known_revision=3)
    assert agent.ok("delete_plan", name="a-plan", last_known_revision=1)["deleted"] is True
    assert [plan["name"] for plan in agent.ok("list_plans")["plans"]] == ["b-plan"]


def test_export_writes_the_file_but_never_returns_the_body(agent: Agent, workspace: Path) -> None:
    agent.ok("write_plan", name="release", content="SECRET BODY ünïcode", title="R")
    result = agent.ok("export_plan_to_file", name="release", path="plans/release.md")
    assert "SECRET" not in json.dumps(result)
    assert result == {
        "name": "release",
        "path": "plans/release.md",
        "title": "R",
        "status": "",
        "revision": 1,
        "bytes_written": len("SECRET BODY ünïcode".encode()),
    }
    assert (workspace / "plans" / "release.md").read_text() == "SECRET BODY ünïcode"
    refusal = agent.error("export_plan_to_file", name="release", path="plans/release.md")
    assert "overwrite" in refusal
    again = agent.ok("export_plan_to_file", name="release", path="plans/release.md", overwrite=True)
    assert again["revision"] == 1


def test_import_replaces_the_body_and_keeps_other_fields(agent: Agent, workspace: Path) -> None:
    agent.ok("write_plan", name="release", content="old", title="R", status="draft")
    agent.ok("export_plan_to_file", name="release", path="release.md")
    (workspace / "release.md").write_text("edited on disk")
    result = agent.ok(
        "update_plan_from_file", name="release", path="release.md", last_known_revision=1
    )
    assert (result["revision"], result["title"], result["status"]) == (2, "R", "draft")
    assert agent.ok("read_plan", name="release")["content"] == "edited on disk"
    stale = agent.error(
        "update_plan_from_file", name="release", path="release.md", last_known_revision=1
    )
    assert "revision 2" in stale
    (workspace / "empty.md").write_text("")
    assert "empty" in agent.error("update_plan_from_file", name="release", path="empty.md")


def test_file_tools_cannot_leave_the_workspace(agent: Agent, workspace: Path) -> None:
    outside = workspace.parent / "outside.md"
    outside.write_text("do not touch")
    (workspace / "escape.md").symlink_to(outside)
    os.mkfifo(workspace / "pipe")
    agent.ok("write_plan", name="release", content="body")
    for path in ("../outside.md", str(outside), "escape.md", "sub/../../outside.md"):
        assert "outside the workspace" in agent.error(
            "update_plan_from_file", name="release", path=path
        )
        assert "outside the workspace" in agent.error(
            "export_plan_to_file", name="release", path=path, overwrite=True
        )
    assert "not a regular file" in agent.error("update_plan_from_file", name="release", path="pipe")
    assert outside.read_text() == "do not touch"
    assert agent.ok("read_plan", name="release")["content"] == "body"


def test_a_damaged_plan_is_reported_as_damaged_not_missing(workspace: Path, tmp_path: Path) -> None:
    storage = FilesystemPlanStorage(tmp_path / "plans")
    agent = Agent(storage, workspace)
    agent.ok("write_plan", name="good", content="fine")
    agent.ok("write_plan", name="broken", content="soon damaged")
    corrupt(storage, "broken")
    message = agent.error("read_plan", name="broken")
    assert "unreadable" in message and "No plan" not in message
    assert "unreadable" in agent.error("write_plan", name="broken", content="clobber")
    listing = agent.ok("list_plans")
    assert [plan["name"] for plan in listing["plans"]] == ["good"]
    assert len(listing["warnings"]) == 1 and "broken" in listing["warnings"][0]


def test_a_failing_disk_is_an_error_message(workspace: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    agent = Agent(FilesystemPlanStorage(blocker / "plans"), workspace)
    assert "storage failed" in agent.error("write_plan", name="p", content="x")


def test_defaults_use_the_env_folder_and_the_working_directory(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPLAN_PLANS_DIR", str(tmp_path / "env-plans"))
    monkeypatch.chdir(workspace)
    tools = {tool.name: tool for tool in plan_tools()}
    monkeypatch.chdir(tmp_path)
    tools["write_plan"].invoke({"name": "p", "content": "x"})
    tools["export_plan_to_file"].invoke({"name": "p", "path": "p.md"})
    assert (tmp_path / "env-plans" / "p.json").is_file()
    assert (workspace / "p.md").read_text() == "x"


def test_agents_sharing_one_storage_collaborate(storage: PlanStorage, workspace: Path) -> None:
    planner, reviewer = Agent(storage, workspace), Agent(storage, workspace)
    planner.ok("write_plan", name="launch", content="1. build", author="planner")
    seen = reviewer.ok("read_plan", name="launch")
    reviewer.ok(
        "write_plan",
        name="launch",
        content=seen["content"] + "\n2. test",
        author="reviewer",
        last_known_revision=seen["revision"],
    )
    assert "revision 2" in planner.error(
        "write_plan", name="launch", content="1. build fast", last_known_revision=1
    )
    final = planner.ok("read_plan", name="launch")
    assert (final["author"], final["content"], final["revision"]) == (
        "reviewer",
        "1. build\n2. test",
        2,
    )


def test_a_graph_tool_node_turns_every_failure_into_an_error_message(agent: Agent) -> None:
    graph = (
        StateGraph(MessagesState)
        .add_node("tools", ToolNode(list(agent.tools.values())))
        .add_edge(START, "tools")
        .compile()
    )
    calls = [
        ("write_plan", {"name": "release", "content": "# v1"}),
        ("read_plan", {"name": "ghost"}),
        ("write_plan", {"name": "Bad/Name", "content": "x"}),
        ("export_plan_to_file", {"name": "release", "path": "../../x.md"}),
        ("set_plan_status", {"name": "release"}),
        ("list_plans", {}),
    ]
    message = AIMessage(
        content="",
        tool_calls=[
            {"name": name, "args": args, "id": f"c{i}", "type": "tool_call"}
            for i, (name, args) in enumerate(calls)
        ],
    )
    replies = graph.invoke({"messages": [message]})["messages"][1:]
    assert [reply.tool_call_id for reply in replies] == [f"c{i}" for i in range(len(calls))]
    assert [reply.status for reply in replies] == [
        "success",
        "error",
        "error",
        "error",
        "error",
        "success",
    ]
    assert json.loads(replies[0].content)["revision"] == 1
    assert "list_plans" in replies[1].content


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "args",
    [
        {"content": "step \ud800 one"},
        {"content": "# ok", "title": "lone \udfff"},
        {"content": "# ok", "author": "\ud83d"},
        {"content": "# ok", "status": "draft\udc00"},
    ],
)
def test_a_lone_surrogate_is_refused_alike_by_every_storage(
    backend: str,
    args: dict[str, Any],
    workspace: Path,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    """A model's JSON can carry "\\ud800"; no storage may keep it or fail on it."""
    storages = Backend.for_test(backend, request, tmp_path)
    request.addfinalizer(storages.close)
    agent = Agent(storages.open(), workspace)
    message = agent.error("write_plan", name="notes", **args)
    assert "surrogate" in message and "call again" in message
    assert agent.ok("list_plans")["plans"] == []
    agent.ok("write_plan", name="notes", content="# fine")
    assert "surrogate" in agent.error("set_plan_status", name="notes", status="\ud800")
    assert agent.ok("read_plan", name="notes")["status"] == ""


@pytest.mark.parametrize("status", ["", "   "])
def test_set_plan_status_refuses_an_empty_status(agent: Agent, status: str) -> None:
    agent.ok("write_plan", name="release", content="# v1", status="draft")
    assert "status must not be empty" in agent.error(
        "set_plan_status", name="release", status=status
    )
    assert agent.ok("get_plan_status", name="release") == {
        "name": "release",
        "status": "draft",
        "revision": 1,
    }


@pytest.mark.parametrize("language", ["en", "zh"])
def test_descriptions_come_in_the_task_tools_languages(language: str, workspace: Path) -> None:
    tools = plan_tools(InMemoryPlanStorage(), workspace=workspace, language=language)  # type: ignore[arg-type]
    assert [tool.name for tool in tools] == TOOL_NAMES
    assert [tool.description for tool in tools] == list(TOOL_DESCRIPTIONS[language].values())  # type: ignore[index]
    properties = tools[0].tool_call_schema.model_json_schema()["properties"]  # type: ignore[union-attr]
    described = {field: spec["description"] for field, spec in properties.items()}
    assert described == {
        field: FIELD_DESCRIPTIONS[language][field]  # type: ignore[index]
        for field in ("name", "content", "title", "author", "status", "last_known_revision")
    }
    chinese = [tool.description for tool in tools if re.search("[\u4e00-\u9fff]", tool.description)]
    assert len(chinese) == (8 if language == "zh" else 0)


def test_plan_tools_refuse_an_unknown_language(workspace: Path) -> None:
    with pytest.raises(ValueError, match="en, zh"):
        plan_tools(InMemoryPlanStorage(), workspace=workspace, language="fr")  # type: ignore[arg-type]
