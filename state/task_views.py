"""Plain-text views of tasks, as the model (and a terminal) reads them."""

from __future__ import annotations

import json

from replan.state.tasks import Task, TaskContext, TaskUpdateResult

EMPTY_LIST_TEXT = "No tasks yet. Create some with TaskCreate when the work has several steps."
OVERVIEW_LINE_CHARS = 200
"""Longest task line `format_task_overview` shows; longer ones are cut with an ellipsis."""
_STATUS_ORDER = ("in_progress", "pending", "completed")
"""The order in which `format_task_overview` counts statuses and keeps tasks when not all fit."""


def _ids(ids: list[str]) -> str:
    return ", ".join(f"#{task_id}" for task_id in sorted(ids, key=int)) or "none"


def format_task_line(task: Task, context: TaskContext, unfinished: set[str] | None = None) -> str:
    """`#ID [status] subject [owner: X] [blocked by #x, #y]` (open blockers only)."""
    line = f"#{task.id} [{task.status}] {task.subject}"
    if task.owner:
        line += f" [owner: {task.owner}]"
    blockers = context.open_blockers(task, unfinished)
    if blockers:
        line += f" [blocked by {_ids(blockers)}]"
    return line


def format_task_list(context: TaskContext, empty: str = EMPTY_LIST_TEXT) -> str:
    """One line per task in numeric ID order, or `empty` when there are none (by default a
    sentence for the model: it says how to make some)."""
    if not context.tasks:
        return empty
    unfinished = context.unfinished_ids()
    return "\n".join(format_task_line(task, context, unfinished) for task in context.sorted_tasks())


def format_task_overview(context: TaskContext, max_tasks: int) -> str:
    """A bounded view for a prompt: task counts, then at most `max_tasks` task lines.

    When not all tasks fit, in-progress tasks are kept first, then pending ones, then completed
    ones (each by ID), a last line says how many were left out, and lines stay in ID order.
    Each line is cut at `OVERVIEW_LINE_CHARS`.
    """
    if not context.tasks:
        return EMPTY_LIST_TEXT
    by_status: dict[str, list[Task]] = {status: [] for status in _STATUS_ORDER}
    for task in context.sorted_tasks():
        by_status[task.status].append(task)
    counts = ", ".join(f"{len(by_status[s])} {s.replace('_', ' ')}" for s in _STATUS_ORDER)
    total = len(context.tasks)
    lines = [f"{total} task{'' if total == 1 else 's'}: {counts}."]
    shown = [task for status in _STATUS_ORDER for task in by_status[status]][: max(max_tasks, 0)]
    unfinished = context.unfinished_ids()
    for task in sorted(shown, key=lambda task: int(task.id)):
        line = format_task_line(task, context, unfinished)
        cut = OVERVIEW_LINE_CHARS - 1
        lines.append(line if len(line) <= OVERVIEW_LINE_CHARS else line[:cut] + "…")
    if len(shown) < total:
        lines.append(f"({total - len(shown)} more not shown: TaskList shows all.)")
    return "\n".join(lines)


def format_task_details(task: Task) -> str:
    """Every field of one task, one per line."""
    metadata = "none"
    if task.metadata:
        metadata = json.dumps(task.metadata, ensure_ascii=False, sort_keys=True)
    return "\n".join(
        [
            f"Task #{task.id}: {task.subject}",
            f"Status: {task.status}",
            f"Description: {task.description or '(none)'}",
            f"Active form: {task.active_form or '(none)'}",
            f"Owner: {task.owner or '(none)'}",
            f"Blocks: {_ids(task.blocks)}",
            f"Blocked by: {_ids(task.blocked_by)}",
            f"Metadata: {metadata}",
            f"Created at: {task.created_at}",
        ]
    )


def format_created(task: Task) -> str:
    """Confirmation of a new task."""
    return f"Task #{task.id} created successfully: {task.subject}"


def format_update_result(result: TaskUpdateResult) -> str:
    """Confirmation of an update, deletion or clean-up."""
    if result.deleted:
        return f"Task #{result.task_id} deleted; references to it were removed from other tasks."
    if not result.changed:
        return f"Task #{result.task_id} unchanged: the values given were already set."
    text = f"Updated task #{result.task_id}: {', '.join(result.changed)}."
    if result.cleared:
        text += " Every task is now completed, so the task list was cleared."
    return text
