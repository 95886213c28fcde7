"""TaskCreate, TaskGet, TaskUpdate and TaskList: LangChain tools over a `TaskContext`.

By default the tools are state-injected: they read `tasks_context` (and `messages`) from the graph
state and answer with a `Command`. LangGraph's `ToolNode` (also inside `create_agent`) runs the
calls of one model turn concurrently on the same state snapshot, so each call first replays the
task calls that come before it in the same AI message (`replan.tools.task_turns`), to answer as if
they had run (the IDs it reports are the ones the list will have). Calls are found by position,
never by id alone: some servers repeat one id for every call or leave it empty. Each call writes
only its own change (`TaskCallChange`); the `tasks_context` reducer applies the changes in call
order. The list therefore ends as if the calls ran one after another, in order, with the arguments
they really ran with, even when a middleware edited or refused an earlier call of the turn.

A state without a `tasks_context` channel would silently drop those updates (LangGraph ignores
writes to channels a graph does not have), so a call that finds no such key refuses to run and
raises `TasksStateMissingError`, which names the fixes.

Given a task store instead (`FileTaskStore`, `PostgresTaskStore`, a folder path or a
`postgresql://` URL), the tools run each call as one transaction on the stored list and leave the
graph state alone, so several agents, processes or machines can share one list. The tools'
argument models and compact schemas are in `replan.tools.task_schemas`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langgraph.types import Command
from pydantic import BaseModel, ValidationError

from replan.state.task_stores import TaskStore, open_task_store
from replan.state.task_views import (
    format_created,
    format_task_details,
    format_task_list,
    format_update_result,
)
from replan.state.tasks import TaskContext, TaskError
from replan.tools.arguments import explain_validation_error
from replan.tools.effects import declare_effects
from replan.tools.task_descriptions import (
    COMPACT_TOOL_DESCRIPTIONS,
    DETAILS,
    LANGUAGES,
    TOOL_DESCRIPTIONS,
    Detail,
    Language,
)
from replan.tools.task_schemas import (
    PLAIN_SCHEMAS,
    TASK_CREATE,
    TASK_GET,
    TASK_LIST,
    TASK_TOOL_NAMES,
    TASK_UPDATE,
    CompactTaskTool,
    args_schema,
    compact_schema,
)
from replan.tools.task_state import as_task_context
from replan.tools.task_turns import report, turn_for

__all__ = [
    "TASKS_KEY", "TASK_CREATE", "TASK_GET", "TASK_LIST", "TASK_TOOL_NAMES", "TASK_UPDATE",
    "TaskCallChange", "TasksStateMissingError", "run_task_call", "task_tools",
]  # fmt: skip

_READ_ONLY = frozenset({TASK_GET, TASK_LIST})
TASKS_KEY = "tasks_context"


class TasksStateMissingError(RuntimeError):
    """The graph running a state-mode task tool has no `tasks_context` channel to keep tasks in."""

    def __init__(self, tool: str) -> None:
        super().__init__(
            f"{tool} cannot keep tasks here: the graph state it was given has no '{TASKS_KEY}' "
            "(the graph has no such channel, or declares it without replan.TasksState's reducer), "
            "so LangGraph would drop every change while the tool reported success. Fix one of: "
            "build the graph on a state that extends replan.TasksState (replan.tools."
            "ReactTasksState for create_react_agent); with langchain's create_agent, add "
            "middleware=[replan.TaskToolsMiddleware()] instead of passing the tools; or keep the "
            "list in a folder with task_tools(store=replan.FileTaskStore(path))."
        )


def run_task_call(
    context: TaskContext,
    name: str,
    args: Mapping[str, Any],
    *,
    clear_when_all_completed: bool = True,
) -> str:
    """Apply one task tool call to `context` (in place) and return the tool's reply text.

    Raises TaskError for a refused operation and ValidationError for malformed arguments;
    either way `context` is unchanged.
    """
    parsed = PLAIN_SCHEMAS[name].model_validate(dict(args)).model_dump()
    if name == TASK_CREATE:
        task = context.create(
            parsed["subject"],
            parsed["description"],
            active_form=parsed["activeForm"],
            metadata=parsed["metadata"],
        )
        return format_created(task)
    if name == TASK_GET:
        return format_task_details(context.get(parsed["taskId"]))
    if name == TASK_LIST:
        return format_task_list(context)
    result = context.update(
        parsed["taskId"],
        subject=parsed["subject"],
        description=parsed["description"],
        active_form=parsed["activeForm"],
        status=parsed["status"],
        owner=parsed["owner"],
        add_blocks=parsed["addBlocks"] or (),
        add_blocked_by=parsed["addBlockedBy"] or (),
        metadata=parsed["metadata"],
        clear_when_all_completed=clear_when_all_completed,
    )
    return format_update_result(result)


class TaskCallChange(BaseModel):
    """What one state-mode task call changes, written to `tasks_context` for its reducer.

    Applying it re-runs the call on the list as it stands then; a TaskCreate keeps the ID its
    reply announced. A call that no longer applies (it depended on an earlier call of the same
    turn that a reviewer refused) changes nothing.
    """

    name: str
    args: dict[str, Any]
    clear_when_all_completed: bool = True
    created_id: int | None = None

    def apply_to(self, context: TaskContext) -> TaskContext:
        """The list after this call; `context` itself is left as it was."""
        changed = context.clone()
        if self.created_id is not None:
            changed.high_watermark = max(changed.high_watermark, self.created_id - 1)
        try:
            run_task_call(
                changed,
                self.name,
                self.args,
                clear_when_all_completed=self.clear_when_all_completed,
            )
        except (TaskError, ValidationError):
            return context
        return changed


def task_tools(
    *,
    language: Language = "en",
    store: TaskStore | str | os.PathLike[str] | None = None,
    clear_when_all_completed: bool = True,
    detail: Detail = "full",
) -> list[BaseTool]:
    """The four task tools.

    Args:
        language: "en" (default) or "zh": the language of tool and argument descriptions.
        store: None to keep tasks in graph state (`tasks_context`), or a `TaskStore` shared
            by several agents or processes: a `FileTaskStore` or folder path, a
            `PostgresTaskStore` or `postgresql://` URL (needs `pip install "replan[postgres]"`).
        clear_when_all_completed: clear the list when an update completes the last open task.
        detail: "full" (default) describes the tools at length, with advice and examples;
            "compact" offers the same tools and arguments in about a third of the prompt.
    """
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, not {language!r}")
    if detail not in DETAILS:
        raise ValueError(f"detail must be one of {', '.join(DETAILS)}, not {detail!r}")
    shared = open_task_store(store) if store is not None else None
    settings = {"clear_when_all_completed": clear_when_all_completed}

    def build(name: str) -> BaseTool:
        func = _store_tool(name, shared, settings) if shared else _state_tool(name, settings)
        common: dict[str, Any] = {
            "func": func,
            "name": name,
            "args_schema": args_schema(name, language, injected=shared is None),
            "handle_tool_error": True,
            "handle_validation_error": explain_validation_error,
        }
        if detail == "compact":
            return CompactTaskTool.from_function(
                description=COMPACT_TOOL_DESCRIPTIONS[language][name],
                call_schema=compact_schema(name, language),
                **common,
            )
        return StructuredTool.from_function(description=TOOL_DESCRIPTIONS[language][name], **common)

    return [_declared(build(name), shared is not None) for name in TASK_TOOL_NAMES]


def _declared(tool: BaseTool, shared: bool) -> BaseTool:
    """`tool` with its effects declared (`replan.tools.effects`): reads are read-only; a write
    to the list in the graph's state is safe to retry (its change is the call's saved result,
    applied once), a write to a shared store acts."""
    if tool.name in (TASK_GET, TASK_LIST):
        return declare_effects(tool, read_only=True)
    return declare_effects(tool, retry_safe=not shared)


def _state_tool(name: str, settings: dict[str, bool]) -> Callable[..., Command[Any]]:
    def call(state: Any, tool_call_id: str, **args: Any) -> Command[Any]:
        if not _state_has(state, TASKS_KEY):
            raise TasksStateMissingError(name)
        context = as_task_context(_state_value(state, TASKS_KEY)).clone()
        turn = turn_for(_state_value(state, "messages") or [], tool_call_id, name, args)
        outcomes: list[tuple[bool, str]] = []
        for index, queued in enumerate(turn.calls):
            try:
                outcome = (True, run_task_call(context, queued["name"], queued["args"], **settings))
            except (TaskError, ValidationError) as error:
                outcome = (False, str(error))  # a refused call changes nothing
            if index in turn.mine:
                outcomes.append(outcome)
        succeeded, reply = report(outcomes)
        if not succeeded:
            raise ToolException(reply)
        update: dict[str, Any] = {
            "messages": [ToolMessage(reply, tool_call_id=tool_call_id, name=name)]
        }
        if name not in _READ_ONLY:
            # identical copies cannot tell which ID is theirs: each takes the next one in order
            alone = name == TASK_CREATE and len(turn.mine) == 1
            created = context.high_watermark if alone else None
            update[TASKS_KEY] = TaskCallChange(name=name, args=args, created_id=created, **settings)
        return Command(update=update)

    return call


def _store_tool(name: str, store: TaskStore, settings: dict[str, bool]) -> Callable[..., str]:
    def call(**args: Any) -> str:
        try:
            return store.transact(lambda context: run_task_call(context, name, args, **settings))
        except TaskError as error:
            raise ToolException(str(error)) from error

    return call


def _state_has(state: Any, key: str) -> bool:
    """Whether graph state (a dict or an object) has `key`. A `tasks_context` channel declared
    with its reducer always has it: the reducer's channel starts from an empty `TaskContext`."""
    return key in state if isinstance(state, Mapping) else hasattr(state, key)


def _state_value(state: Any, key: str) -> Any:
    """Read a key from graph state given as a dict or as an object (pydantic/dataclass)."""
    return state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)
