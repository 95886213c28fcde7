"""The turn's plan as a to-do list, where chat UIs look for one: the state's `todos` key,
`[{"content": text, "status": "pending" | "in_progress" | "completed"}]` (the shape deepagents'
`write_todos`, LangChain's `TodoListMiddleware` and deep-agents-ui use).

The list holds the turn's carried-out steps (`completed`), then the steps still planned: those
the next wave starts are `in_progress`, the rest `pending`. A step that failed or ran out of
model calls is `completed` with its outcome after its text ("… (failed)"): the list has no
other status, and the replanner decides what comes of it. A step the replanner plans again is
a new item; a step it drops leaves the list; a new turn starts an empty list.

The planner, the plan review and the replanner write the whole list (`plan_todos`); each
executor branch writes one `TodoDone` for its step, which `merge_todos` applies to the list, so
that the steps of a wave finish one by one. The graph keeps `todos` out of its input and output,
so it never overwrites the `todos` of a parent agent that runs it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Literal

from typing_extensions import TypedDict

TodoStatus = Literal["pending", "in_progress", "completed"]


class Todo(TypedDict):
    """One step of the turn's plan, for a to-do panel."""

    content: str
    status: TodoStatus


class TodoDone(TypedDict):
    """An executor branch's change to the list: the item whose content is `done` (its step's
    text) is now `completed`, with `content` as its new text."""

    done: str
    content: str


STATUS_NOTES = {"unfinished": "unfinished", "failed": "failed"}
"""What a step's content says after its text when it did not end `done`."""


def done_content(text: str, status: str) -> str:
    """The content of a carried-out step: its text, with how it fell short when it did."""
    note = STATUS_NOTES.get(status)
    return f"{text} ({note})" if note else text


def plan_todos(
    executed: Sequence[tuple[str, str]],
    planned: Sequence[tuple[int, str]],
    running: Collection[int],
) -> list[Todo]:
    """The list for a turn whose carried-out steps are `executed` (text, status) and whose
    steps still to do are `planned` (id, text); the ids in `running` start now."""
    todos: list[Todo] = [
        {"content": done_content(text, status), "status": "completed"} for text, status in executed
    ]
    for step_id, text in planned:
        status: TodoStatus = "in_progress" if step_id in running else "pending"
        todos.append({"content": text, "status": status})
    return todos


def step_done(text: str, status: str) -> TodoDone:
    """The change an executor branch writes once its step (`text`) ended with `status`."""
    return {"done": text, "content": done_content(text, status)}


def merge_todos(current: list[Todo] | None, update: list[Todo] | TodoDone) -> list[Todo]:
    """The `todos` reducer: a list replaces the list; a `TodoDone` completes the first
    unfinished item with its text (none: the list stays as it is)."""
    if isinstance(update, list):
        return update
    todos = list(current or [])
    for position, todo in enumerate(todos):
        if todo["content"] == update["done"] and todo["status"] != "completed":
            todos[position] = {"content": update["content"], "status": "completed"}
            break
    return todos
