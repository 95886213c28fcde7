"""TaskCreate, TaskGet, TaskUpdate and TaskList: LangChain tools over a `TaskContext`.

By default the tools are state-injected: they read `tasks_context` (and `messages`) from the
graph state and answer with a `Command`. LangGraph's `ToolNode` (also inside `create_agent`)
runs the calls of one model turn concurrently on the same state snapshot, so each call first
replays the task calls that come before it in the same AI message, to answer as if they had
run (the IDs it reports are the ones the list will have). Calls are found by position, never by
id alone: some servers repeat one id for every call or leave it empty. Each call writes only its
own change (`TaskCallChange`); the `tasks_context` reducer applies the changes in call order.
The list therefore ends as if the calls ran one after another, in order, with the arguments
they really ran with, even when a middleware edited or refused an earlier call of the turn.

A state without a `tasks_context` channel would silently drop those updates (LangGraph ignores
writes to channels a graph does not have), so a call that finds no such key refuses to run and
raises `TasksStateMissingError`, which names the fixes.

Given a task store instead (`FileTaskStore`, `PostgresTaskStore`, a folder path or a
`postgresql://` URL), the tools run each call as one transaction on the stored list and leave the
graph state alone, so several agents, processes or machines can share one list.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from langchain_core.messages import AIMessage, BaseMessage, ToolCall, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool, ToolException
from langchain_core.tools.base import ArgsSchema
from langchain_core.utils.json_schema import dereference_refs
from langgraph.prebuilt import InjectedState
from langgraph.types import Command
from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    PlainSerializer,
    ValidationError,
    create_model,
)

from replan.state.task_stores import TaskStore, open_task_store
from replan.state.task_views import (
    format_created,
    format_task_details,
    format_task_list,
    format_update_result,
)
from replan.state.tasks import TaskContext, TaskError, UpdateStatus
from replan.tools.arguments import explain_validation_error
from replan.tools.task_descriptions import (
    COMPACT_FIELD_DESCRIPTIONS,
    COMPACT_TOOL_DESCRIPTIONS,
    DETAILS,
    FIELD_DESCRIPTIONS,
    LANGUAGES,
    TOOL_DESCRIPTIONS,
    Detail,
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
# LangChain dumps a tool's validated arguments to learn their names; without this, that dump
# would copy the whole injected graph state (every task) on every call.
_NOT_DUMPED = PlainSerializer(lambda value: None)

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
        fields["state"] = (Annotated[Any, InjectedState, _NOT_DUMPED], ...)
        fields["tool_call_id"] = (Annotated[str, InjectedToolCallId], ...)
    return create_model(f"{name}Args", **fields)


_PLAIN_SCHEMAS = {name: _args_schema(name, "en", injected=False) for name in TASK_TOOL_NAMES}
_NOT_SHOWN = frozenset({"default", "description", "title"})


def _compact_argument(schema: dict[str, Any], description: str) -> dict[str, Any]:
    """One argument's JSON schema without what the model does not need to read: the null
    alternative and null default of an optional argument, titles, `additionalProperties: true`,
    and the description when there is none to give."""
    options = [option for option in schema.get("anyOf", [schema]) if option != {"type": "null"}]
    kind = options[0] if len(options) == 1 else {"anyOf": options}
    shown = {
        key: value
        for key, value in kind.items()
        if key not in _NOT_SHOWN and (key, value) != ("additionalProperties", True)
    }
    return {**shown, "description": description} if description else shown


def _compact_schema(name: str, language: Language) -> dict[str, Any]:
    """The argument schema the model sees of a compact tool: same arguments, types and required
    ones as the full schema, with short descriptions."""
    full = dereference_refs(_PLAIN_SCHEMAS[name].model_json_schema())
    says = COMPACT_FIELD_DESCRIPTIONS[language]
    properties = {
        arg: _compact_argument(full["properties"][arg], says[key])
        for arg, (_, _, key) in _ARGUMENTS[name].items()
    }
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if full.get("required"):
        schema["required"] = full["required"]
    return schema


class CompactTaskTool(StructuredTool):
    """A task tool that shows the model `call_schema`, a smaller JSON schema than the argument
    model it validates calls with (which stays the full tool's)."""

    call_schema: dict[str, Any]

    @property
    def tool_call_schema(self) -> ArgsSchema:
        """The schema offered to the model."""
        return self.call_schema


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
            "args_schema": _args_schema(name, language, injected=shared is None),
            "handle_tool_error": True,
            "handle_validation_error": explain_validation_error,
        }
        if detail == "compact":
            return CompactTaskTool.from_function(
                description=COMPACT_TOOL_DESCRIPTIONS[language][name],
                call_schema=_compact_schema(name, language),
                **common,
            )
        return StructuredTool.from_function(description=TOOL_DESCRIPTIONS[language][name], **common)

    return [build(name) for name in TASK_TOOL_NAMES]


def _state_tool(name: str, settings: dict[str, bool]) -> Callable[..., Command[Any]]:
    def call(state: Any, tool_call_id: str, **args: Any) -> Command[Any]:
        if not _state_has(state, TASKS_KEY):
            raise TasksStateMissingError(name)
        context = as_task_context(_state_value(state, TASKS_KEY)).clone()
        turn = _turn_for(_state_value(state, "messages") or [], tool_call_id, name, args)
        outcomes: list[tuple[bool, str]] = []
        for index, queued in enumerate(turn.calls):
            try:
                outcome = (True, run_task_call(context, queued["name"], queued["args"], **settings))
            except (TaskError, ValidationError) as error:
                outcome = (False, str(error))  # a refused call changes nothing
            if index in turn.mine:
                outcomes.append(outcome)
        succeeded, reply = _report(outcomes)
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


@dataclass(frozen=True)
class _Turn:
    """The task calls one tool invocation runs, in order, and which of them are its own."""

    calls: list[ToolCall]
    mine: frozenset[int]


def _turn_for(
    messages: Sequence[BaseMessage], tool_call_id: str, name: str, args: Mapping[str, Any]
) -> _Turn:
    """Where this call stands in the AI message that made it, told apart by position.

    The calls of the message that have no reply yet are replayed in order, up to this call,
    which runs with the arguments it was given (a wrapper may have edited them). Some servers
    send one id (or an empty one) for every call: then the arguments tell the calls apart.
    Copies of this very call (same id, name and arguments) cannot be told apart, so the
    invocation runs the message up to the last copy and reports the outcome of every copy:
    all copies give the same reply (each still writes its own change). Outside a model turn
    (a direct call), only this call runs.
    """
    own = ToolCall(name=name, args=dict(args), id=tool_call_id)
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if not isinstance(message, AIMessage) or not any(
            c["id"] == tool_call_id for c in message.tool_calls
        ):
            continue
        pending = _unanswered_task_calls(message, messages[position + 1 :])
        mine = [i for i, c in enumerate(pending) if (c["id"], c["name"]) == (tool_call_id, name)]
        if len(mine) > 1:  # a repeated id: the arguments tell the calls apart
            signature = _signature(name, args)
            same = [i for i in mine if _signature(name, pending[i]["args"]) == signature]
            mine = same or mine[:1]
        if not mine:
            break
        calls = [own if i in mine else c for i, c in enumerate(pending[: mine[-1] + 1])]
        return _Turn(calls, frozenset(mine))
    return _Turn([own], frozenset({0}))


def _unanswered_task_calls(message: AIMessage, later: Sequence[BaseMessage]) -> list[ToolCall]:
    """The task calls of `message` not answered by a ToolMessage in `later`.

    Replies come in call order, so with repeated ids the first calls carrying an id count as
    answered, as many as there are replies to that id. Answered calls are already in the
    state's context (a graph that runs calls one by one) and are not replayed.
    """
    replies: Counter[str | None] = Counter(
        m.tool_call_id for m in later if isinstance(m, ToolMessage)
    )
    pending: list[ToolCall] = []
    for tool_call in message.tool_calls:
        if replies[tool_call["id"]] > 0:
            replies[tool_call["id"]] -= 1
        elif tool_call["name"] in TASK_TOOL_NAMES:
            pending.append(tool_call)
    return pending


def _signature(name: str, args: Mapping[str, Any]) -> dict[str, Any] | None:
    """The arguments of a task call as the tool sees them (None when they do not validate)."""
    try:
        return _PLAIN_SCHEMAS[name].model_validate(dict(args)).model_dump()
    except ValidationError:
        return None


def _report(outcomes: Sequence[tuple[bool, str]]) -> tuple[bool, str]:
    """The reply to a call: its own outcome, or for identical copies, each one in turn."""
    if len(set(outcomes)) == 1:
        return outcomes[0]
    lines = (
        f"{n}. {text if ok else 'Refused: ' + text}" for n, (ok, text) in enumerate(outcomes, 1)
    )
    header = (
        f"This exact call was sent {len(outcomes)} times in one message under the same call "
        "id, so every copy gets this report. They ran in order:"
    )
    return any(ok for ok, _ in outcomes), "\n".join([header, *lines])
