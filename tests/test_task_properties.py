"""Property-based tests: random operation sequences never break the task list's invariants."""

from __future__ import annotations

from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from replan.state import TaskContext, TaskError, find_cycle
from replan.tools.task_tools import TASK_TOOL_NAMES, run_task_call

BAD_IDS = st.sampled_from(["0", "abc", "1.5", "../x", "-2", "", "999"])
STATUSES = st.sampled_from(["pending", "in_progress", "completed", "deleted", "done"])


class TaskListMachine(RuleBasedStateMachine):
    """Drives one TaskContext with valid and invalid operations, checking after each step."""

    def __init__(self) -> None:
        super().__init__()
        self.context = TaskContext()
        self.issued: list[int] = []

    def some_id(self, data: st.DataObject) -> str:
        """Usually an existing ID, sometimes a malformed or unknown one."""
        existing = [task.id for task in self.context.tasks]
        if existing and data.draw(st.integers(0, 5)) > 0:
            return data.draw(st.sampled_from(existing))
        return data.draw(BAD_IDS)

    def attempt(self, operation: Any, *args: Any, **kwargs: Any) -> None:
        """Run an operation; if it is refused, the context must be exactly as before."""
        before = self.context.model_dump()
        try:
            operation(*args, **kwargs)
        except (TaskError, ValueError):
            assert self.context.model_dump() == before, "a refused operation changes nothing"

    @rule(subject=st.sampled_from(["Write", "Test", "Ship", "Fix", "", "  "]))
    def create(self, subject: str) -> None:
        count = len(self.context.tasks)
        self.attempt(self.context.create, subject)
        if len(self.context.tasks) > count:
            self.issued.append(int(self.context.tasks[-1].id))

    @rule(data=st.data())
    def link(self, data: st.DataObject) -> None:
        blocks = [self.some_id(data) for _ in range(data.draw(st.integers(0, 2)))]
        blocked_by = [self.some_id(data) for _ in range(data.draw(st.integers(0, 2)))]
        self.attempt(
            self.context.update, self.some_id(data), add_blocks=blocks, add_blocked_by=blocked_by
        )

    @rule(data=st.data(), status=STATUSES, clear=st.booleans())
    def set_status(self, data: st.DataObject, status: str, clear: bool) -> None:
        self.attempt(
            self.context.update, self.some_id(data), status=status, clear_when_all_completed=clear
        )

    @rule(
        data=st.data(),
        metadata=st.dictionaries(st.sampled_from("xyz"), st.none() | st.integers(), max_size=2),
        owner=st.sampled_from(["a", "", None]),
        subject=st.sampled_from(["New", "", None]),
    )
    def edit(self, data: st.DataObject, metadata: dict[str, Any], owner: Any, subject: Any) -> None:
        self.attempt(
            self.context.update, self.some_id(data), metadata=metadata, owner=owner, subject=subject
        )

    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        self.attempt(self.context.delete, self.some_id(data))

    @precondition(lambda self: bool(self.context.tasks))
    @rule(data=st.data(), name=st.sampled_from(TASK_TOOL_NAMES))
    def tool_call(self, data: st.DataObject, name: str) -> None:
        """The tool layer's argument handling keeps the same guarantees."""
        args = {
            "TaskCreate": {"subject": "Via tool", "description": ""},
            "TaskGet": {"taskId": self.some_id(data)},
            "TaskList": {},
            "TaskUpdate": {"taskId": self.some_id(data), "addBlockedBy": [self.some_id(data)]},
        }[name]
        self.attempt(run_task_call, self.context, name, args)

    @invariant()
    def edges_are_symmetric_and_unique(self) -> None:
        index = {task.id: task for task in self.context.tasks}
        assert len(index) == len(self.context.tasks), "IDs are unique"
        for task in self.context.tasks:
            assert task.id not in task.blocks and task.id not in task.blocked_by
            assert len(set(task.blocks)) == len(task.blocks)
            assert len(set(task.blocked_by)) == len(task.blocked_by)
            assert all(task.id in index[other].blocked_by for other in task.blocks)
            assert all(task.id in index[other].blocks for other in task.blocked_by)

    @invariant()
    def graph_is_acyclic(self) -> None:
        assert find_cycle(self.context.tasks) is None

    @invariant()
    def ids_increase_and_stay_under_the_watermark(self) -> None:
        assert self.issued == sorted(set(self.issued))
        assert all(int(task.id) <= self.context.high_watermark for task in self.context.tasks)


TaskListMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None
)
test_task_list_invariants = TaskListMachine.TestCase
