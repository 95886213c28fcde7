"""TaskCreate, TaskGet, TaskUpdate and TaskList: LangChain tools over a `TaskContext`.

By default the tools are state-injected: they read `tasks_context` (and `messages`) from the
graph state and answer with a `Command`. LangGraph's `ToolNode` (also inside `create_agent`)
runs the calls of one model turn concurrently on the same state snapshot, so each call first
replays the task calls that come before it in the same AI message, to answer as if they had
run (the IDs it reports are the ones the list will have). It writes only its own change
(`TaskCallChange`); the `tasks_context` reducer applies the changes in call order. The list
therefore ends as if the calls ran one after another, in order, with the arguments they really
ran with, even when a middleware edited or refused an earlier call of the turn.

A state without a `tasks_context` channel would silently drop those updates (LangGraph ignores
writes to channels a graph does not have), so a call that finds no such key refuses to run and
raises `TasksStateMissingError`, which names the fixes.

Given a `FileTaskStore` instead, the tools read and write that folder under its lock and leave
the graph state alone, so several agents or processes can share one list.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

from langchain_core.messages import AIMessage, BaseMessage, ToolCall, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool, ToolException
from langgraph.prebuilt import InjectedState
from langgraph.types import Command
from pydantic import BaseModel, BeforeValidator, Field, ValidationError, create_model

from replan.state.task_store import FileTaskStore
from replan.state.task_views import (
    format_created,
    format_task_details,
    format_task_list,
    format_update_result,
)
from replan.state.tasks import TaskContext, TaskError, UpdateStatus
from replan.tools.arguments import explain_validation_error
from replan.tools.task_descriptions import (
    FIELD_DESCRIPTIONS,
    LANGUAGES,
    TOOL_DESCRIPTIONS,
    Language,
)
from replan.tools.task_state import as_task_context

TASK_CREATE, TASK_GET, TASK_UPDATE, TASK_LIST = "TaskCreate", "TaskGet", "TaskUpdate", "TaskList"
TASK_TOOL_NAMES = (TASK_CREATE, TASK_GET, TASK_UPDATE, TASK_LIST)
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


def _id_text(value: Any) -> Any:
    """Models often send IDs as numbers; accept 3 as "3" (validation of the text comes later)."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


TaskIdArg = Annotated[str, BeforeValidator(_id_text)]

# Per tool: argument name -> (type, default or ... when required, key in FIELD_DESCRIPTIONS).
_ARGUMENTS: dict[str, dict[str, tuple[Any, Any, str]]] = {
    TASK_CREATE: {
        "subject": (str, ..., "subject"),
        "description": (str, ..., "description"),
        "activeForm": (str | None, None, "activeForm"),
        "metadata": (dict[str, Any] | None, None, "metadata"),
    },
    TASK_GET: {"taskId": (TaskIdArg, ..., "taskId")},
    TASK_UPDATE: {
        "taskId": (TaskIdArg, ..., "taskId"),
        "subject": (str | None, None, "new_subject"),
        "description": (str | None, None, "new_description"),
        "activeForm": (str | None, None, "activeForm"),
        "status": (UpdateStatus | None, None, "status"),
        "addBlocks": (list[TaskIdArg] | None, None, "addBlocks"),
        "addBlockedBy": (list[TaskIdArg] | None, None, "addBlockedBy"),
        "owner": (str | None, None, "owner"),
        "metadata": (dict[str, Any] | None, None, "metadata"),
    },
    TASK_LIST: {},
}


def _args_schema(name: str, language: Language, *, injected: bool) -> type[BaseModel]:
    """The argument model of one tool; injected fields are hidden from the model's view."""
    descriptions = FIELD_DESCRIPTIONS[language]
    fields: dict[str, Any] = {
        arg: (typ, Field(default, description=descriptions[key]))
        for arg, (typ, default, key) in _ARGUMENTS[name].items()
    }
    if injected:
        fields["state"] = (Annotated[Any, InjectedState], ...)
        fields["tool_call_id"] = (Annotated[str, InjectedToolCallId], ...)
    return create_model(f"{name}Args", **fields)


_PLAIN_SCHEMAS = {name: _args_schema(name, "en", injected=False) for name in TASK_TOOL_NAMES}


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
    parsed = _PLAIN_SCHEMAS[name].model_validate(dict(args)).model_dump()
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
    store: FileTaskStore | str | os.PathLike[str] | None = None,
    clear_when_all_completed: bool = True,
) -> list[BaseTool]:
    """The four task tools.

    Args:
        language: "en" (default) or "zh": the language of tool and argument descriptions.
        store: None to keep tasks in graph state (`tasks_context`), or a `FileTaskStore` (or
            folder path) shared by several agents or processes.
        clear_when_all_completed: clear the list when an update completes the last open task.
    """
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, not {language!r}")
    if store is not None and not isinstance(store, FileTaskStore):
        store = FileTaskStore(store)
    settings = {"clear_when_all_completed": clear_when_all_completed}

    def build(name: str) -> BaseTool:
        func = _file_tool(name, store, settings) if store else _state_tool(name, settings)
        return StructuredTool.from_function(
            func=func,
            name=name,
            description=TOOL_DESCRIPTIONS[language][name],
            args_schema=_args_schema(name, language, injected=store is None),
            handle_tool_error=True,
            handle_validation_error=explain_validation_error,
        )

    return [build(name) for name in TASK_TOOL_NAMES]


def _state_tool(name: str, settings: dict[str, bool]) -> Callable[..., Command[Any]]:
    def call(state: Any, tool_call_id: str, **args: Any) -> Command[Any]:
        if not _state_has(state, TASKS_KEY):
            raise TasksStateMissingError(name)
        context = as_task_context(_state_value(state, TASKS_KEY)).clone()
        for earlier in _earlier_task_calls(_state_value(state, "messages") or [], tool_call_id):
            try:
                run_task_call(context, earlier["name"], earlier["args"], **settings)
            except (TaskError, ValidationError):
                pass  # it failed in its own turn too, and changed nothing
        try:
            reply = run_task_call(context, name, args, **settings)
        except TaskError as error:
            raise ToolException(str(error)) from error
        update: dict[str, Any] = {
            "messages": [ToolMessage(reply, tool_call_id=tool_call_id, name=name)]
        }
        if name not in _READ_ONLY:
            created = context.high_watermark if name == TASK_CREATE else None
            update[TASKS_KEY] = TaskCallChange(name=name, args=args, created_id=created, **settings)
        return Command(update=update)

    return call


def _file_tool(name: str, store: FileTaskStore, settings: dict[str, bool]) -> Callable[..., str]:
    def call(**args: Any) -> str:
        try:
            return store.transact(lambda context: run_task_call(context, name, args, **settings))
        except TaskError as error:
            raise ToolException(str(error)) from error
        except OSError as error:
            raise ToolException(
                f"The shared task folder {store.directory} cannot be used ({error}). Nothing "
                "was changed; tell the user, since retrying will not help until it is fixed."
            ) from error

    return call


def _state_has(state: Any, key: str) -> bool:
    """Whether graph state (a dict or an object) has `key`. A `tasks_context` channel declared
    with its reducer always has it: the reducer's channel starts from an empty `TaskContext`."""
    return key in state if isinstance(state, Mapping) else hasattr(state, key)


def _state_value(state: Any, key: str) -> Any:
    """Read a key from graph state given as a dict or as an object (pydantic/dataclass)."""
    return state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)


def _earlier_task_calls(messages: Sequence[BaseMessage], tool_call_id: str) -> list[ToolCall]:
    """Task calls made before `tool_call_id` in the same AI message that have no reply yet.

    Calls already answered by a ToolMessage are in the state's context already (a graph that
    runs calls one by one), so they are not replayed.
    """
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if not isinstance(message, AIMessage):
            continue
        call_ids = [call["id"] for call in message.tool_calls]
        if tool_call_id not in call_ids:
            continue
        later = messages[position + 1 :]
        answered = {reply.tool_call_id for reply in later if isinstance(reply, ToolMessage)}
        before = message.tool_calls[: call_ids.index(tool_call_id)]
        return [c for c in before if c["name"] in TASK_TOOL_NAMES and c["id"] not in answered]
    return []
