"""What every shared task store promises, run against the folder store and PostgreSQL alike.

Several processes on one list: IDs unique and never reused, edges on both tasks, no cycles,
refused calls leave no trace, and a writer killed half-way leaves nothing half-done.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from replan.state import (
    FileTaskStore,
    PostgresTaskStore,
    TaskContext,
    TaskError,
    TaskStore,
    find_cycle,
    open_task_store,
)
from replan.tools import task_tools
from tests.support.kill_gates import kill_at_gate
from tests.support.task_store_random_worker import Refused, create_link_delete, create_then_fail

ROOT = Path(__file__).resolve().parents[2]

StoreMaker = Callable[[], TaskStore]


@pytest.fixture(params=["folder", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the shared list lives: a folder path, or a URL on a fresh PostgreSQL schema."""
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    return str(tmp_path / "tasks")


@pytest.fixture
def new_store(where: str) -> Iterator[StoreMaker]:
    """Makes stores on the shared list, as separate processes would each have one."""
    made: list[TaskStore] = []

    def make() -> TaskStore:
        made.append(open_task_store(where))
        return made[-1]

    yield make
    for store in made:
        if isinstance(store, PostgresTaskStore):
            store.close()


def check_invariants(context: TaskContext) -> None:
    index = {task.id: task for task in context.tasks}
    assert len(index) == len(context.tasks)
    for task in context.tasks:
        assert int(task.id) <= context.high_watermark
        for blocked in task.blocks:
            assert task.id in index[blocked].blocked_by, (task.id, blocked)
        for blocker in task.blocked_by:
            assert task.id in index[blocker].blocks, (blocker, task.id)
    assert find_cycle(context.tasks) is None


def test_the_tools_answer_as_the_state_tools_do(new_store: StoreMaker) -> None:
    tools = {tool.name: tool for tool in task_tools(store=new_store())}

    def call(name: str, **args: Any) -> Any:
        return tools[name].invoke({"type": "tool_call", "name": name, "args": args, "id": "x"})

    assert call("TaskCreate", subject="A", description="a").content == (
        "Task #1 created successfully: A"
    )
    call("TaskCreate", subject="B", description="b")
    refused = call("TaskUpdate", taskId="2", addBlocks=["1"], addBlockedBy=["1"])
    assert refused.status == "error" and "cycle" in refused.content
    call("TaskUpdate", taskId="2", addBlockedBy=["1"], owner="ann")
    assert call("TaskList").content == "#1 [pending] A\n#2 [pending] B [owner: ann] [blocked by #1]"
    assert "Blocked by: #1" in call("TaskGet", taskId="2").content


def test_refused_operations_leave_no_trace(new_store: StoreMaker) -> None:
    store = new_store()
    store.transact(lambda context: (context.create("A"), context.create("B")))
    before = store.read()
    with pytest.raises(Refused):
        store.transact(create_then_fail)
    with pytest.raises(TaskError, match="cycle"):
        store.transact(lambda context: context.update("1", add_blocks=["2"], add_blocked_by=["2"]))
    with pytest.raises(ValueError):
        store.transact(lambda context: context.update("1", description=5))  # type: ignore[arg-type]

    def unstorable(context: TaskContext) -> None:
        task = context.get("2").model_copy(update={"subject": "lone \ud800"})
        context.tasks = context.tasks.with_task(task)

    with pytest.raises(TaskError, match="cannot be stored"):
        store.transact(unstorable)
    assert store.read() == before == new_store().read()
    assert new_store().transact(lambda context: context.create("C")).id == "3"


def test_ids_are_never_reused_after_deletes_and_clears(new_store: StoreMaker) -> None:
    first, second = new_store(), new_store()
    first.transact(lambda context: (context.create("A"), context.create("B")))
    second.transact(lambda context: context.delete("2"))
    assert first.transact(lambda context: context.create("C")).id == "3"
    second.transact(lambda context: context.update("3", status="completed"))
    second.transact(lambda context: context.update("1", status="completed"))  # clears
    assert not first.read().tasks
    assert second.transact(lambda context: context.create("D")).id == "4"
    assert [t.id for t in new_store().read().tasks] == ["4"]


def test_stores_on_one_list_see_each_others_changes(new_store: StoreMaker) -> None:
    stores = [new_store(), new_store(), new_store()]
    for number in range(1, 16):
        writer = stores[number % 3]
        writer.transact(lambda context, n=number: context.create(f"T{n}"))
        if number > 1:
            writer.transact(lambda context, n=number: context.add_dependency(str(n - 1), str(n)))
        if number % 4 == 0:
            writer.transact(lambda context, n=number: context.update(str(n - 3), status="deleted"))
        views = [store.read() for store in stores]
        assert views[0] == views[1] == views[2] == new_store().read()
        check_invariants(views[0])
    assert stores[0].read().high_watermark == 15


def random_worker(where: str, seed: int, count: int, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.task_store_random_worker",
            where,
            str(seed),
            str(count),
        ]
        + list(extra),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_four_processes_with_200_random_calls_each_keep_every_invariant(
    where: str, new_store: StoreMaker
) -> None:
    workers = [random_worker(where, seed, 200) for seed in range(4)]
    outputs = [w.communicate(timeout=600) for w in workers]
    assert all(w.returncode == 0 for w in workers), [err[-2000:] for _, err in outputs]
    calls = [json.loads(line) for out, _ in outputs for line in out.splitlines()]
    assert len(calls) == 800
    created = [int(call["created"]) for call in calls if call["created"]]
    context = new_store().read()
    check_invariants(context)
    # Every create got its own ID, and nothing else (not the refused operations) took one.
    assert sorted(created) == list(range(1, context.high_watermark + 1))
    assert {int(task.id) for task in context.tasks} <= set(created)
    assert not any(task.subject.startswith("REFUSED") for task in context.tasks)
    assert sum(call["tool"] == "refused" for call in calls) > 10
    # The calls did meet: some were refused (cycles, unknown IDs) and some edges were made.
    assert any(not call["ok"] for call in calls if call["tool"] == "TaskUpdate")
    if isinstance(new_store(), FileTaskStore):
        from tests.state.test_task_store import folder_context

        assert folder_context(Path(where)) == context


@pytest.mark.slow
def test_a_writer_killed_in_the_middle_of_a_save_leaves_nothing_half_done(
    where: str, new_store: StoreMaker, tmp_path: Path
) -> None:
    """The folder's record was flushed, so the change completes; PostgreSQL rolls it back."""
    store = new_store()
    store.transact(lambda context: [context.create(s) for s in ("A", "B", "C")])
    before = store.read()
    gate = tmp_path / "gate"
    kill_at_gate(random_worker(where, 0, 0, "--hang-in-save", str(gate)), gate)
    # The lock died with the process (this would hang otherwise).
    after = new_store().transact(lambda context: context)
    check_invariants(after)
    applied = before.clone()
    create_link_delete(applied)
    if isinstance(store, FileTaskStore):
        assert without_times(after) == without_times(applied)
    else:
        assert after == before
    assert store.read() == after


def without_times(context: TaskContext) -> dict[str, Any]:
    return context.model_dump(exclude={"tasks": {"__all__": {"created_at"}}})


@pytest.mark.slow
def test_the_core_imports_and_works_without_psycopg() -> None:
    script = (
        "import sys; sys.modules['psycopg'] = None\n"  # makes `import psycopg` fail
        "import replan.state as s, tempfile\n"
        "store = s.open_task_store(tempfile.mkdtemp())\n"
        "print(store.transact(lambda c: c.create('A')).id)\n"
        "try:\n"
        "    s.PostgresTaskStore('postgresql://localhost/x')\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "1",
        'PostgresTaskStore needs psycopg: pip install "replan[postgres]"',
    ]


def test_a_lost_database_connection_is_one_clear_error_then_the_store_reconnects(
    postgres_url: str,
) -> None:
    import psycopg

    with PostgresTaskStore(postgres_url) as store:
        tools = {tool.name: tool for tool in task_tools(store=store)}
        store.transact(lambda context: context.create("A"))
        backend = store._connection.info.backend_pid  # type: ignore[union-attr]
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (backend,))
        call = {"type": "tool_call", "name": "TaskList", "args": {}, "id": "x"}
        reply = tools["TaskList"].invoke(call)
        assert reply.status == "error" and len(reply.content.splitlines()) == 1
        assert "PostgreSQL" in reply.content and "cannot be used" in reply.content
        assert tools["TaskList"].invoke(call).content == "#1 [pending] A"
