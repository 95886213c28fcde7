"""The file-backed task store: seed layout, shared by processes, crash-safe, loud about damage."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from replan.state import FileTaskStore, Task, TaskContext, TaskError, TaskStoreCorruptError
from replan.state.fileio import LOCK_FILE
from replan.state.task_stores import filesystem
from replan.state.task_stores.filesystem import HIGH_WATERMARK_FILE, JOURNAL_FILE
from replan.tools import task_tools
from tests.support.kill_gates import kill_at_gate

ROOT = Path(__file__).resolve().parents[2]
_MODEL_KEYS = {"activeForm": "active_form", "blockedBy": "blocked_by", "createdAt": "created_at"}


def journal_lines(folder: Path) -> list[Any]:
    return [json.loads(line) for line in (folder / ".journal.json").read_text().splitlines()]


def folder_context(folder: Path) -> TaskContext:
    """The list as the seed's files hold it, read without the store or its log."""
    tasks = [
        Task.model_validate(
            {_MODEL_KEYS.get(k, k): v for k, v in json.loads(p.read_text()).items()}
        )
        for p in folder.glob("[0-9]*.json")
    ]
    watermark_file = folder / ".highwatermark"
    watermark = int(watermark_file.read_text()) if watermark_file.exists() else 0
    return TaskContext(tasks=tasks, high_watermark=watermark)  # type: ignore[arg-type]


def folder_bytes(folder: Path) -> list[tuple[str, bytes]]:
    return sorted((p.name, p.read_bytes()) for p in folder.iterdir() if p.name != LOCK_FILE)


def tool_call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args, "id": f"id-{name}"}


def tools_by_name(folder: Path) -> dict[str, Any]:
    return {t.name: t for t in task_tools(store=folder)}


def worker(*args: str | Path | int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.task_store_worker", *map(str, args)],
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
    assert not list(tmp_path.glob("[0-9]*.json"))
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
    tools = tools_by_name(tmp_path)  # a process that opens the folder after the damage
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


def _edge_on_disk(folder: Path) -> tuple[bool | None, bool | None]:
    """Whether 1.json says task 2 blocks it, and whether 2.json says it blocks task 1 (None:
    the file is not readable JSON)."""
    sides: list[bool | None] = []
    for tid, key, value in (("1", "blockedBy", ["2"]), ("2", "blocks", ["1"])):
        try:
            sides.append(json.loads((folder / f"{tid}.json").read_text())[key] == value)
        except ValueError:
            sides.append(None)
    return sides[0], sides[1]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("when", "file", "at_the_kill"),
    [
        ("after", JOURNAL_FILE, (False, False)),  # the change is recorded and flushed, no file
        ("after", "1.json", (True, False)),  # one side of the edge written
        ("half", "2.json", (True, None)),  # the other side half-written over the old content
    ],
)
def test_a_writer_killed_mid_change_leaves_the_edge_on_both_sides(
    tmp_path: Path, when: str, file: str, at_the_kill: tuple[bool, bool | None]
) -> None:
    folder, gate = tmp_path / "tasks", tmp_path / "gate"
    FileTaskStore(folder).transact(lambda c: (c.create("A"), c.create("B")))
    link = json.dumps({"taskId": "2", "addBlocks": ["1"]})
    kill_at_gate(worker("hold", folder, when, file, gate, "TaskUpdate", link), gate)
    assert _edge_on_disk(folder) == at_the_kill and journal_lines(folder)[-1] != {"applied": 1}

    context = FileTaskStore(folder).read()  # completes the killed writer's record
    assert context.get("2").blocks == ["1"] and context.get("1").blocked_by == ["2"]
    assert _edge_on_disk(folder) == (True, True) and folder_context(folder) == context
    assert journal_lines(folder)[-1] == {"applied": 1}
    assert sorted(p.name for p in folder.iterdir()) == [
        HIGH_WATERMARK_FILE,
        JOURNAL_FILE,
        LOCK_FILE,
        "1.json",
        "2.json",
    ]  # no temporary file of the killed writer


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
    assert context.high_watermark == 2 and folder_context(folder) == context


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


def test_a_wrongly_typed_value_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    store = FileTaskStore(tmp_path)
    store.transact(lambda context: context.create("A"))
    before = folder_bytes(tmp_path)

    def sneak(value: object) -> Any:
        """An operation that gets past TaskContext's own checks."""

        def operation(context: TaskContext) -> None:
            task = context.get("1").model_copy(update={"description": value})
            context.tasks = context.tasks.with_task(task)

        return operation

    with pytest.raises(ValueError):
        store.transact(lambda context: context.update("1", description=5))  # type: ignore[arg-type]
    for value in (5, None, "lone \ud800 surrogate"):
        with pytest.raises(TaskError, match="cannot be stored"):
            store.transact(sneak(value))
    assert folder_bytes(tmp_path) == before
    assert FileTaskStore(tmp_path).read().get("1").description == ""
    assert store.read().get("1").description == ""


@pytest.mark.parametrize("with_header", [False, True])
def test_a_planted_journal_never_touches_files_outside_the_folder(
    tmp_path: Path, with_header: bool
) -> None:
    folder, victim = tmp_path / "tasks", tmp_path / "victim.json"
    victim.write_text("keep me")
    store = FileTaskStore(folder)
    store.transact(lambda context: context.create("A"))
    task = json.loads((folder / "1.json").read_text())
    planted = {"high_watermark": 1, "write": {"../escaped": task}, "delete": ["../victim"]}
    journal = folder / ".journal.json"
    header = journal.read_text().splitlines(keepends=True)[0] if with_header else ""
    journal.write_text(header + json.dumps(planted) + "\n")
    with pytest.raises(TaskStoreCorruptError, match="damaged .journal.json.*not a task ID"):
        FileTaskStore(folder).read()
    with pytest.raises(TaskStoreCorruptError, match="damaged .journal.json"):
        store.read()  # it remembers the list, and reads the log from where it left off
    assert victim.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tasks", "victim.json"]


@pytest.mark.parametrize(
    "line",
    [
        "[]",
        "null",
        '{"write": {}, "delete": []}',
        '{"high_watermark": "x", "write": {}, "delete": []}',
        '{"high_watermark": true, "write": {}, "delete": []}',
        '{"high_watermark": 1e30, "write": {}, "delete": []}',
        '{"high_watermark": 1, "write": [], "delete": []}',
        '{"high_watermark": 1, "write": {}, "delete": "1"}',
        '{"high_watermark": 1, "write": {}, "delete": [3]}',
        '{"high_watermark": 1, "write": {"1": "text"}, "delete": []}',
        '{"high_watermark": 1, "write": {"1": {"id": "2", "subject": "x"}}, "delete": []}',
        '{"high_watermark": 1, "write": {}, "delete": [], "extra": 1}',
        "{not json",
    ],
)
def test_a_damaged_journal_is_reported_as_corrupt(tmp_path: Path, line: str) -> None:
    store = FileTaskStore(tmp_path)
    store.transact(lambda context: context.create("A"))
    with (tmp_path / ".journal.json").open("a") as journal:
        journal.write(line + "\n")
    before = folder_bytes(tmp_path)
    for reader in (FileTaskStore(tmp_path), store):
        with pytest.raises(TaskStoreCorruptError, match="damaged .journal.json"):
            reader.transact(lambda context: context.create("B"))
    assert folder_bytes(tmp_path) == before


@pytest.mark.parametrize("content", ["\u00b2", "9" * 5000, "-1", "1e3", "", "0x10"])
def test_a_watermark_that_is_not_a_small_whole_number_is_corrupt(
    tmp_path: Path, content: str
) -> None:
    FileTaskStore(tmp_path).transact(lambda context: context.create("A"))
    (tmp_path / ".highwatermark").write_text(content)
    before = folder_bytes(tmp_path)
    with pytest.raises(TaskStoreCorruptError, match=".highwatermark"):
        FileTaskStore(tmp_path).read()
    assert folder_bytes(tmp_path) == before


def test_temporary_files_left_by_killed_writers_are_swept(tmp_path: Path) -> None:
    FileTaskStore(tmp_path).transact(lambda context: context.create("A"))
    leftovers = [".1.json.k2j3h4.tmp", ".journal.json.x8y7.tmp", ".highwatermark.abc.tmp"]
    for name in [*leftovers, "notes.tmp"]:
        (tmp_path / name).write_text("partial")
    FileTaskStore(tmp_path).read()
    assert not any((tmp_path / name).exists() for name in leftovers)
    assert (tmp_path / "notes.tmp").exists()  # not ours


def test_a_record_left_without_its_files_is_completed_by_every_kind_of_reader(
    tmp_path: Path,
) -> None:
    """As if a writer died after flushing its record and before writing the task files."""
    store = FileTaskStore(tmp_path)
    store.transact(lambda context: (context.create("A"), context.create("B")))
    other = FileTaskStore(tmp_path)
    other.transact(lambda context: context.add_dependency("1", "2"))
    records = journal_lines(tmp_path)
    assert records[-1] == {"applied": 1}
    # undo the second writer's file writes and its marker, and leave a temp file behind
    edge = records[-2]
    journal = tmp_path / ".journal.json"
    journal.write_text("".join(journal.read_text().splitlines(keepends=True)[:-1]))
    for task_id in edge["write"]:
        data = json.loads((tmp_path / f"{task_id}.json").read_text())
        (tmp_path / f"{task_id}.json").write_text(
            json.dumps({**data, "blocks": [], "blockedBy": []})
        )
    (tmp_path / ".2.json.zz.tmp").write_text("{")
    for reader in (
        store,
        FileTaskStore(tmp_path),
    ):  # one that remembers the list, one that does not
        context = reader.read()
        assert context.get("1").blocks == ["2"] and context.get("2").blocked_by == ["1"]
        assert folder_context(tmp_path) == context
        assert not (tmp_path / ".2.json.zz.tmp").exists()
        assert journal_lines(tmp_path)[-1] == {"applied": 1}


def test_a_torn_last_line_is_dropped_and_never_glued_to_the_next(tmp_path: Path) -> None:
    store = FileTaskStore(tmp_path)
    store.transact(lambda context: context.create("A"))
    with (tmp_path / ".journal.json").open("a") as journal:
        journal.write('{"high_watermark": 9, "wri')  # a writer killed mid-append
    for writer in (store, FileTaskStore(tmp_path)):
        writer.transact(lambda context: context.create("B"))
    lines = journal_lines(tmp_path)  # every line parses
    assert [t.id for t in FileTaskStore(tmp_path).read().tasks] == ["1", "2", "3"]
    assert lines[-1] == {"applied": 1}


def test_hand_edits_are_kept_and_a_log_from_an_earlier_boot_is_replayed(tmp_path: Path) -> None:
    store = FileTaskStore(tmp_path)
    store.transact(lambda context: (context.create("A"), context.create("B")))
    store.transact(lambda context: context.update("2", owner="ann", add_blocked_by=["1"]))
    expected = store.read()
    # Same boot: the files are current, so a file edited by hand is what a new store reads.
    edited = json.loads((tmp_path / "1.json").read_text())
    (tmp_path / "1.json").write_text(json.dumps({**edited, "subject": "Edited by hand"}))
    assert FileTaskStore(tmp_path).read().get("1").subject == "Edited by hand"
    # After a power loss, files written since the last flush may hold old or no content.
    (tmp_path / "1.json").write_text("")
    (tmp_path / "2.json").write_text(json.dumps({**edited, "id": "2", "subject": "B"}))
    (tmp_path / ".highwatermark").write_text("0")
    lines = (tmp_path / ".journal.json").read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    lines[0] = json.dumps({**header, "boot": "an-earlier-boot"}) + "\n"
    (tmp_path / ".journal.json").write_text("".join(lines))
    assert FileTaskStore(tmp_path).read() == expected
    assert folder_context(tmp_path) == expected
    restarted = journal_lines(tmp_path)
    assert len(restarted) == 1 and restarted[0]["journal"] != header["journal"]
    assert restarted[0]["boot"] == header["boot"]


@pytest.mark.parametrize("limit", [filesystem.JOURNAL_LIMIT, 600])
def test_stores_sharing_a_folder_see_each_others_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int
) -> None:
    """Two stores (as two processes would) alternate; a small limit restarts the log often."""
    monkeypatch.setattr(filesystem, "JOURNAL_LIMIT", limit)
    first, second = FileTaskStore(tmp_path), FileTaskStore(tmp_path)
    tokens = set()
    for number in range(1, 13):
        writer, reader = (first, second) if number % 2 else (second, first)
        writer.transact(lambda context, n=number: context.create(f"T{n}"))
        if number > 1:
            writer.transact(lambda context, n=number: context.add_dependency(str(n - 1), str(n)))
        if number % 3 == 0:
            writer.transact(lambda context, n=number: context.delete(str(n - 2)))
        assert reader.read() == writer.read() == folder_context(tmp_path)
        tokens.add(journal_lines(tmp_path)[0]["journal"])
    assert reader.read().high_watermark == 12
    assert (len(tokens) > 3) == (limit < 1000)
