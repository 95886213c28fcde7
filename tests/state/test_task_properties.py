"""Property-based tests: random operation sequences never break the task list's invariants."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode
from pydantic import ValidationError

from replan.state import TaskContext, TaskError, find_cycle
from replan.tools import TasksState, task_tools
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
        """Run an operation; if it is refused (always as TaskError, or ValidationError for a
        tool call's arguments), the context must be exactly as before."""
        before = self.context.model_dump()
        try:
            operation(*args, **kwargs)
        except (TaskError, ValidationError):
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

    @rule(
        data=st.data(),
        field=st.sampled_from(
            ["subject", "description", "active_form", "owner", "status", "metadata"]
            + ["add_blocks", "add_blocked_by"]
        ),
        value=st.sampled_from([5, 1.5, True, ["k", "v"], [("k", "v")], {1: "x"}, {"k": {1}}, "12"]),
    )
    def wrongly_typed(self, data: st.DataObject, field: str, value: Any) -> None:
        """Valid changes next to one argument of the wrong type: all refused together."""
        changes = {"subject": "Changed", "status": "in_progress", field: value}
        self.attempt(self.context.update, self.some_id(data), **changes)
        if field in ("subject", "description", "active_form", "owner", "metadata"):
            self.attempt(self.context.create, **{"subject": "New", field: value})

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


# -- through the tools: whole model turns run by LangGraph's ToolNode ---------------------------

WRONG_TYPES = st.sampled_from([5, 1.5, None, True, ["x"], {"k": "v"}, "", "  "])
VALID_TEXT = st.sampled_from(["Write", "Test", "Ship"])
TEXT = st.one_of(VALID_TEXT, VALID_TEXT, VALID_TEXT, WRONG_TYPES)  # mostly usable
GOOD_IDS = st.sampled_from(["1", "2", "3", "4", 2])
IDS = st.one_of(GOOD_IDS, GOOD_IDS, st.sampled_from(["#1", "0", "x", None, [1]]))
ID_LISTS = st.one_of(st.lists(IDS, max_size=3), st.lists(GOOD_IDS, max_size=2), IDS)
METADATA = st.sampled_from([None, {"k": "v"}, {"k": None}, {"n": [1, 2]}, [["k", "v"]], "k", None])
STATUS = STATUSES | WRONG_TYPES
CALL_NAMES = st.sampled_from([*TASK_TOOL_NAMES, "TaskCreate", "TaskUpdate"])


@st.composite
def tool_arguments(draw: st.DrawFn, name: str) -> dict[str, Any]:
    """Arguments as a model might send them: right, missing, or of the wrong type."""
    fields: dict[str, st.SearchStrategy[Any]] = {
        "TaskCreate": {"subject": TEXT, "description": TEXT, "metadata": METADATA},
        "TaskGet": {"taskId": IDS},
        "TaskList": {},
        "TaskUpdate": {
            "taskId": IDS,
            "subject": TEXT,
            "status": STATUS,
            "owner": TEXT,
            "addBlocks": ID_LISTS,
            "addBlockedBy": ID_LISTS,
            "metadata": METADATA,
        },
    }[name]
    return {key: draw(value) for key, value in fields.items() if draw(st.integers(0, 4)) > 0}


@st.composite
def model_turn(draw: st.DrawFn) -> list[dict[str, Any]]:
    """One AI message: 1-5 task calls whose ids are mostly repeated or empty."""
    calls = []
    for position in range(draw(st.integers(1, 5))):
        name = draw(CALL_NAMES)
        call_id = draw(st.sampled_from(["", "same", "same", f"unique-{position}"]))
        args = draw(tool_arguments(name))
        calls.append({"type": "tool_call", "name": name, "args": args, "id": call_id})
    return calls


def _tool_graph() -> Any:
    builder = StateGraph(TasksState)
    builder.add_node("tools", ToolNode(task_tools()))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile()


TOOL_GRAPH = _tool_graph()


def _comparable(context: TaskContext) -> dict[str, Any]:
    dump = context.model_dump()
    for task in dump["tasks"]:
        task.pop("created_at")
    return dump


def _timeless(reply: Any) -> str:
    """A reply without TaskGet's creation time (the expected list was made at another second)."""
    return re.sub(r"Created at: \S+", "Created at: (time)", str(reply))


def _check_invariants(context: TaskContext) -> None:
    index = {task.id: task for task in context.tasks}
    assert len(index) == len(context.tasks), "IDs are unique"
    for task in context.tasks:
        assert task.id not in task.blocks and task.id not in task.blocked_by
        assert all(task.id in index[other].blocked_by for other in task.blocks)
        assert all(task.id in index[other].blocks for other in task.blocked_by)
    assert find_cycle(context.tasks) is None


@settings(max_examples=100, deadline=None)
@given(turns=st.lists(model_turn(), min_size=1, max_size=4))
def test_any_turns_through_tool_node_act_like_calls_run_one_by_one(
    turns: list[list[dict[str, Any]]],
) -> None:
    """Each turn gives the context, and the replies, of running its calls in order; refused
    calls change nothing, IDs are never reused, and the edges stay symmetric and acyclic."""
    context, expected = TaskContext(), TaskContext()
    issued: set[str] = set()
    for calls in turns:
        outcomes: list[tuple[str, str | None]] = []  # (status, reply text if it ran)
        for tool_call in calls:
            before = _comparable(expected)
            try:
                outcomes.append(
                    ("success", run_task_call(expected, tool_call["name"], tool_call["args"]))
                )
            except TaskError as error:
                outcomes.append(("error", str(error)))
            except ValidationError:
                outcomes.append(("error", None))  # refused before it ran
            if outcomes[-1][0] == "error":
                assert _comparable(expected) == before, "a refused call changes nothing"
        out = TOOL_GRAPH.invoke(
            {"messages": [AIMessage("", tool_calls=calls)], "tasks_context": context}
        )
        context = out["tasks_context"]
        assert _comparable(context) == _comparable(expected)
        _check_invariants(context)
        new_ids = {task.id for task in context.tasks} - issued
        assert all(int(new) > int(old) for new in new_ids for old in issued), "never reused"
        issued |= new_ids

        replies = [m for m in out["messages"] if isinstance(m, ToolMessage)]
        assert len(replies) == len(calls)
        for tool_call, reply, (status, text) in zip(calls, replies, outcomes, strict=True):
            copies = calls.count(tool_call)
            if text is not None and (copies > 1 or "This exact call" in reply.content):
                # identical copies (or arguments that validate alike) share one report
                assert _timeless(text) in _timeless(reply.content)
            else:
                assert reply.status == status
                assert text is None or _timeless(reply.content) == _timeless(text)
