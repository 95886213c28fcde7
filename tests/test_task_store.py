"""The file-backed task store: seed layout, shared by processes, crash-safe, loud about damage."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from replan.state import FileTaskStore, TaskStoreCorruptError
from replan.state.fileio import LOCK_FILE
from replan.state.task_store import HIGH_WATERMARK_FILE, JOURNAL_FILE
from replan.tools import task_tools
from tests.kill_gates import kill_at_gate

ROOT = Path(__file__).resolve().parent.parent


def tool_call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args, "id": f"id-{name}"}


def tools_by_name(folder: Path) -> dict[str, Any]:
    return {t.name: t for t in task_tools(store=folder)}


def worker(*args: str | Path | int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.task_store_worker", *map(str, args)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_layout_matches_the_seed(tmp_path: Path) -> None:
    tools = tools_by_name(tmp_path)
    tools["TaskCreate"].invoke({"subject": "One", "description": "first", "activeForm": "Doing"})
    tools["TaskCreate"].invoke({"subject": "Two", "description": "second"})
    tools["TaskUpdate"].invoke({"taskId": "2", "addBlockedBy": ["1"]})
    assert (tmp_path / ".highwatermark").read_text() == "2"
    one = json.loads((tmp_path / "1.json").read_text())
    two = json.loads((tmp_path / "2.json").read_text())
    assert one["id"] == "1" and one["activeForm"] == "Doing" and one["blocks"] == ["2"]
    assert two["blockedBy"] == ["1"] and two["status"] == "pending"
    assert oct((tmp_path / "1.json").stat().st_mode & 0o777) == "0o600"


def test_same_messages_as_the_state_tools(tmp_path: Path) -> None:
    tools = tools_by_name(tmp_path)
    created = tools["TaskCreate"].invoke(tool_call("TaskCreate", subject="A", description="a"))
    assert created.content == "Task #1 created successfully: A"
    refused = tools["TaskUpdate"].invoke(tool_call("TaskUpdate", taskId="1", addBlocks=["1"]))
    assert refused.status == "error" and "itself" in refused.content
    listed = tools["TaskList"].invoke(tool_call("TaskList"))
    assert listed.content == "#1 [pending] A"


def test_delete_clear_and_watermark_survive_on_disk(tmp_path: Path) -> None:
    tools = tools_by_name(tmp_path)
    for subject in ("A", "B"):
        tools["TaskCreate"].invoke({"subject": subject, "description": ""})
    tools["TaskUpdate"].invoke({"taskId": "1", "addBlocks": ["2"]})
    tools["TaskUpdate"].invoke({"taskId": "2", "status": "deleted"})
    assert not (tmp_path / "2.json").exists()
    assert json.loads((tmp_path / "1.json").read_text())["blocks"] == []
    tools["TaskUpdate"].invoke({"taskId": "1", "status": "completed"})
    assert not list(tmp_path.glob("*.json"))
    assert "#3" in tools["TaskCreate"].invoke({"subject": "C", "description": ""})


@pytest.mark.parametrize(
    ("file_name", "content"),
    [("2.json", "{not json"), ("2.json", '{"id": "7", "subject": "x"}'), (".highwatermark", "x")],
)
def test_corrupt_files_are_reported_not_skipped(
    tmp_path: Path, file_name: str, content: str
) -> None:
    tools = tools_by_name(tmp_path)
    tools["TaskCreate"].invoke({"subject": "A", "description": ""})
    tools["TaskCreate"].invoke({"subject": "B", "description": ""})
    (tmp_path / file_name).write_text(content)
    before = sorted((p.name, p.read_bytes()) for p in tmp_path.iterdir() if p.name != LOCK_FILE)
    reply = tools["TaskList"].invoke(tool_call("TaskList"))
    assert reply.status == "error" and file_name in reply.content and "Repair" in reply.content
    reply = tools["TaskCreate"].invoke(tool_call("TaskCreate", subject="C", description=""))
    assert reply.status == "error"
    after = sorted((p.name, p.read_bytes()) for p in tmp_path.iterdir() if p.name != LOCK_FILE)
    assert after == before
    with pytest.raises(TaskStoreCorruptError):
        FileTaskStore(tmp_path).read()


@pytest.mark.slow
def test_processes_sharing_a_folder_never_lose_or_reuse_ids(tmp_path: Path) -> None:
    per_worker, names = 15, ["alpha", "beta", "gamma", "delta"]
    workers = [worker("hammer", tmp_path, name, per_worker) for name in names]
    outputs = [w.communicate(timeout=120) for w in workers]
    assert all(w.returncode == 0 for w in workers), [err for _, err in outputs]
    printed = [line for out, _ in outputs for line in out.split()]
    total = per_worker * len(names)
    assert sorted(printed, key=int) == [str(n) for n in range(1, total + 1)]
    context = FileTaskStore(tmp_path).read()
    assert len(context.tasks) == total and context.high_watermark == total
    for task in context.tasks:  # each worker's owner update hit its own task
        assert task.owner == task.description


def _edge_on_disk(folder: Path) -> tuple[bool, bool]:
    """Whether 1.json says task 2 blocks it, and whether 2.json says it blocks task 1."""
    one, two = (json.loads((folder / f"{tid}.json").read_text()) for tid in ("1", "2"))
    return one["blockedBy"] == ["2"], two["blocks"] == ["1"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("when", "file", "at_the_kill"),
    [
        ("after", JOURNAL_FILE, (False, False)),  # the change is recorded, nothing applied
        ("after", "1.json", (True, False)),  # one side of the edge written
        ("before", "2.json", (True, False)),  # the other side written out, not renamed yet
    ],
)
def test_a_writer_killed_mid_change_leaves_the_edge_on_both_sides(
    tmp_path: Path, when: str, file: str, at_the_kill: tuple[bool, bool]
) -> None:
    folder, gate = tmp_path / "tasks", tmp_path / "gate"
    FileTaskStore(folder).transact(lambda c: (c.create("A"), c.create("B")))
    link = json.dumps({"taskId": "2", "addBlocks": ["1"]})
    kill_at_gate(worker("hold", folder, when, file, gate, "TaskUpdate", link), gate)
    assert (folder / JOURNAL_FILE).exists() and _edge_on_disk(folder) == at_the_kill

    context = FileTaskStore(folder).read()  # replays the interrupted journal
    assert context.get("2").blocks == ["1"] and context.get("1").blocked_by == ["2"]
    assert _edge_on_disk(folder) == (True, True)
    assert sorted(p.name for p in folder.iterdir()) == [
        HIGH_WATERMARK_FILE,
        LOCK_FILE,
        "1.json",
        "2.json",
    ]  # no journal, no temporary file of the killed writer


@pytest.mark.slow
def test_a_creator_killed_after_the_watermark_still_gets_its_task(tmp_path: Path) -> None:
    folder, gate = tmp_path / "tasks", tmp_path / "gate"
    FileTaskStore(folder).transact(lambda c: c.create("A"))
    create = json.dumps({"subject": "B", "description": "second"})
    kill_at_gate(
        worker("hold", folder, "after", HIGH_WATERMARK_FILE, gate, "TaskCreate", create), gate
    )
    assert (folder / HIGH_WATERMARK_FILE).read_text() == "2" and not (folder / "2.json").exists()

    context = FileTaskStore(folder).read()
    assert [(t.id, t.subject) for t in context.tasks] == [("1", "A"), ("2", "B")]
    assert context.high_watermark == 2


def test_an_interrupted_journal_is_completed_by_the_next_operation(tmp_path: Path) -> None:
    store = FileTaskStore(tmp_path)
    store.transact(lambda c: (c.create("A"), c.create("B")))
    journal = {
        "high_watermark": 2,
        "write": {
            "1": {**json.loads((tmp_path / "1.json").read_text()), "blocks": ["2"]},
            "2": {**json.loads((tmp_path / "2.json").read_text()), "blockedBy": ["1"]},
        },
        "delete": [],
    }
    # as if the process died after writing the journal and only the first file
    (tmp_path / ".journal.json").write_text(json.dumps(journal))
    context = store.read()
    assert context.get("1").blocks == ["2"] and context.get("2").blocked_by == ["1"]


def test_an_unusable_folder_is_an_error_message_not_an_exception(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the task folder should be")
    reply = task_tools(store=blocker)[3].invoke(tool_call("TaskList"))
    assert reply.status == "error" and str(blocker) in reply.content
