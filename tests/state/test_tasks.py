"""TaskContext operations: plain Python, no model, no LangGraph."""

from __future__ import annotations

import ast
import copy
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from replan.state import (
    Task,
    TaskContext,
    TaskError,
    find_cycle,
    format_task_details,
    format_task_list,
)
from replan.state.plans import InMemoryPlanStorage, PlanUpdate


def make(count: int) -> TaskContext:
    context = TaskContext()
    for number in range(1, count + 1):
        context.create(f"Task {number}", f"do {number}")
    return context


def test_create_numbers_tasks_in_order_and_starts_pending() -> None:
    context = make(3)
    assert [(t.id, t.status) for t in context.tasks] == [
        ("1", "pending"),
        ("2", "pending"),
        ("3", "pending"),
    ]
    assert context.high_watermark == 3


def test_tasks_and_plans_stamp_the_same_utc_format() -> None:
    before = datetime.now(UTC)
    task = TaskContext().create("A")
    plan = InMemoryPlanStorage().upsert(PlanUpdate(name="p", content="body"))
    for stamp in (task.created_at, plan.updated_at):
        moment = datetime.fromisoformat(stamp)
        assert moment.utcoffset() == timedelta(0)
        assert before - timedelta(seconds=1) <= moment <= datetime.now(UTC)
    assert len(task.created_at) == len(plan.updated_at)  # one format, e.g. both milliseconds


@pytest.mark.parametrize("subject", ["", "   "])
def test_create_refuses_an_empty_subject(subject: str) -> None:
    context = make(1)
    with pytest.raises(TaskError, match="subject"):
        context.create(subject)
    assert len(context.tasks) == 1 and context.high_watermark == 1


def test_ids_are_never_reused_after_deleting_the_newest_task() -> None:
    context = make(2)
    context.delete("2")
    assert context.create("again").id == "3"


def test_next_id_respects_seeded_tasks_above_the_watermark() -> None:
    context = TaskContext(tasks=[Task(id="7", subject="seeded")])
    assert context.create("next").id == "8"


def test_list_is_numeric_order_and_shows_owner_and_open_blockers_only() -> None:
    context = make(10)
    context.update("2", owner="alice", add_blocked_by=["1", "10"])
    context.update("10", status="completed")
    lines = format_task_list(context).splitlines()
    assert lines[1] == "#2 [pending] Task 2 [owner: alice] [blocked by #1]"
    assert lines[9] == "#10 [completed] Task 10"
    assert [line.split()[0] for line in lines] == [f"#{n}" for n in range(1, 11)]


def test_empty_list_says_so() -> None:
    assert "No tasks" in format_task_list(TaskContext())


def test_get_shows_every_field() -> None:
    context = make(2)
    context.update(
        "1", active_form="Doing one", owner="bob", add_blocks=["2"], metadata={"prio": 1}
    )
    details = format_task_details(context.get("1"))
    for expected in (
        "Task #1: Task 1",
        "Status: pending",
        "Description: do 1",
        "Active form: Doing one",
        "Owner: bob",
        "Blocks: #2",
        "Blocked by: none",
        'Metadata: {"prio": 1}',
    ):
        assert expected in details


def test_metadata_merges_and_null_removes_a_key() -> None:
    context = TaskContext()
    context.create("x", metadata={"a": 1, "b": 2})
    context.update("1", metadata={"b": None, "c": 3})
    assert context.get("1").metadata == {"a": 1, "c": 3}


def test_edges_are_written_on_both_sides_without_duplicates() -> None:
    context = make(3)
    context.update("1", add_blocks=["2", "2", "3"])
    context.update("3", add_blocked_by=["1"])
    assert context.get("1").blocks == ["2", "3"]
    assert context.get("2").blocked_by == ["1"]
    assert context.get("3").blocked_by == ["1"]


@pytest.mark.parametrize("written", ["#1", "Task #1", "task1", " TASK # 1 ", 1])
def test_ids_as_small_models_write_them_name_the_task(written: str | int) -> None:
    context = make(1)
    context.update(written, subject="renamed")  # type: ignore[arg-type]
    assert context.get("1").subject == "renamed"


@pytest.mark.parametrize(
    "bad", ["abc", "1.5", "../x", "0", "-1", "", "Task #", "Create README.md", "task 1 2", "#01"]
)
def test_malformed_ids_are_errors(bad: str) -> None:
    context = make(1)
    with pytest.raises(TaskError, match="not a task ID"):
        context.update(bad, subject="x")
    with pytest.raises(TaskError, match="not a task ID"):
        context.update("1", add_blocks=[bad])


def test_unknown_ids_are_errors() -> None:
    context = make(1)
    with pytest.raises(TaskError, match="#9 does not exist"):
        context.get("9")
    with pytest.raises(TaskError, match="#9 does not exist"):
        context.update("1", add_blocked_by=["9"])
    with pytest.raises(TaskError, match="#9 does not exist"):
        context.update("9", status="deleted")


def test_self_dependency_is_an_error() -> None:
    with pytest.raises(TaskError, match="itself"):
        make(1).update("1", add_blocks=["1"])


def test_status_outside_the_allowed_values_names_them() -> None:
    with pytest.raises(TaskError) as error:
        make(1).update("1", status="done")
    assert all(
        word in str(error.value) for word in ("pending", "in_progress", "completed", "deleted")
    )


def test_a_cycle_across_three_tasks_is_refused() -> None:
    context = make(3)
    context.update("2", add_blocked_by=["1"])
    context.update("3", add_blocked_by=["2"])
    with pytest.raises(TaskError, match="cycle"):
        context.update("1", add_blocked_by=["3"])


def test_one_call_cannot_create_a_two_task_cycle() -> None:
    """The seed checks addBlocks and addBlockedBy separately; we check them together."""
    context = make(2)
    before = context.model_dump()
    with pytest.raises(TaskError, match="cycle"):
        context.update("1", add_blocks=["2"], add_blocked_by=["2"])
    assert context.model_dump() == before


def test_a_failing_call_changes_nothing_even_when_some_parts_are_valid() -> None:
    context = make(3)
    before = context.model_dump()
    with pytest.raises(TaskError):
        context.update("1", subject="new", status="in_progress", add_blocks=["2", "nope"])
    assert context.model_dump() == before


@pytest.mark.parametrize(
    "bad",
    [
        {"metadata": [("k", "v")]},
        {"metadata": {1: "v"}},
        {"metadata": {"k": {1, 2}}},
        {"description": 5},
        {"owner": ["me"]},
        {"active_form": 1.5},
        {"status": 3},
        {"add_blocks": "23"},
        {"add_blocked_by": 2},
        {"add_blocks": [None]},
    ],
)
def test_wrongly_typed_arguments_are_refused_before_anything_changes(bad: dict[str, Any]) -> None:
    """Valid parts (subject, status) come first; the bad one must still stop all of them."""
    context = make(3)
    before = context.model_dump()
    with pytest.raises(TaskError):
        context.update("1", **{"subject": "new", "status": "in_progress", **bad})
    with pytest.raises(TaskError):
        context.update("1", **{"status": "deleted", **bad})
    assert context.model_dump() == before


@pytest.mark.parametrize(
    "bad",
    [{"subject": 5}, {"description": 5}, {"owner": 1}, {"metadata": "k=v"}],
)
def test_create_refuses_wrongly_typed_arguments(bad: dict[str, Any]) -> None:
    context = make(1)
    before = context.model_dump()
    with pytest.raises(TaskError):
        context.create(**{"subject": "Write", **bad})
    assert context.model_dump() == before


def test_delete_removes_the_task_and_every_reference_to_it() -> None:
    context = make(3)
    context.update("2", add_blocked_by=["1"], add_blocks=["3"])
    result = context.update("2", status="deleted")
    assert result.deleted
    assert [t.id for t in context.tasks] == ["1", "3"]
    assert context.get("1").blocks == [] and context.get("3").blocked_by == []


def test_completing_the_last_task_clears_the_list_but_keeps_the_watermark() -> None:
    context = make(2)
    assert not context.update("1", status="completed").cleared
    assert context.update("2", status="completed").cleared
    assert context.tasks == [] and context.create("later").id == "3"


def test_clearing_can_be_turned_off() -> None:
    context = make(1)
    result = context.update("1", status="completed", clear_when_all_completed=False)
    assert not result.cleared and context.get("1").status == "completed"


def test_clone_is_independent() -> None:
    context = make(2)
    copy = context.clone()
    copy.update("1", add_blocks=["2"], metadata={"k": 1}, subject="changed")
    copy.create("third")
    assert context.get("1").blocks == [] and context.get("1").subject == "Task 1"
    assert context.get("1").metadata == {} and len(context.tasks) == 2


def test_find_cycle_handles_long_chains_without_recursion() -> None:
    size = sys.getrecursionlimit() * 3
    tasks = [
        Task(id=str(n), subject="t", blocks=[str(n + 1)] if n < size else [])
        for n in range(1, size + 1)
    ]
    assert find_cycle(tasks) is None
    assert find_cycle(tasks, extra_edges=[(str(size), "1")]) is not None


def test_no_module_of_the_state_layer_imports_langgraph_or_langchain() -> None:
    root = Path(__file__).resolve().parents[2] / "state"
    modules = sorted(root.rglob("*.py"))
    assert len(modules) > 10
    for path in modules:
        name = str(path.relative_to(root))
        tree = ast.parse(path.read_text())
        imported = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        } | {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert not any(module.startswith(("langgraph", "langchain")) for module in imported), name


def test_copies_share_immutable_tasks_and_never_see_each_others_changes() -> None:
    context = make(3)
    context.update("1", add_blocks=["2"], metadata={"nested": {"k": [1]}})
    before = context.model_dump()
    for copied in (copy.deepcopy(context), context.clone()):
        assert copied == context and copied.tasks[0] is context.tasks[0]  # shared, not copied
        with pytest.raises(ValidationError, match="frozen"):
            copied.tasks[0].status = "completed"  # type: ignore[misc]
        copied.update("1", subject="changed", metadata={"nested": None}, add_blocks=["3"])
        copied.update("2", status="deleted")
        copied.create("four")
        copied.update("3", status="completed", clear_when_all_completed=False)
        assert context.model_dump() == before
        copied.update("1", status="completed")
        copied.update("4", status="completed")
        assert not copied.tasks and context.model_dump() == before


def test_a_context_validates_assigned_lists_and_refuses_duplicate_ids() -> None:
    context = TaskContext()
    context.tasks = [Task(id="2", subject="b"), Task(id="1", subject="a")]  # type: ignore[assignment]
    assert [t.id for t in context.tasks] == ["1", "2"] and context.create("c").id == "3"
    with pytest.raises(ValidationError, match="more than once"):
        TaskContext(tasks=[Task(id="1", subject="a"), Task(id="1", subject="b")])
