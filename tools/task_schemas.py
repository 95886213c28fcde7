"""The arguments of the four task tools: their names, the pydantic models calls are validated
with (`args_schema`, `PLAIN_SCHEMAS`), and the smaller JSON schema a compact tool shows the model
(`compact_schema`, `CompactTaskTool`)."""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.tools import InjectedToolCallId, StructuredTool
from langchain_core.tools.base import ArgsSchema
from langchain_core.utils.json_schema import dereference_refs
from langgraph.prebuilt import InjectedState
from pydantic import BaseModel, BeforeValidator, Field, PlainSerializer, create_model

from replan.state.tasks import UpdateStatus
from replan.tools.task_descriptions import (
    COMPACT_FIELD_DESCRIPTIONS,
    FIELD_DESCRIPTIONS,
    Language,
)

TASK_CREATE, TASK_GET, TASK_UPDATE, TASK_LIST = "TaskCreate", "TaskGet", "TaskUpdate", "TaskList"
TASK_TOOL_NAMES = (TASK_CREATE, TASK_GET, TASK_UPDATE, TASK_LIST)


def _id_text(value: Any) -> Any:
    """Models often send IDs as numbers; accept 3 as "3" (validation of the text comes later)."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


TaskIdArg = Annotated[str, BeforeValidator(_id_text)]
# LangChain dumps a tool's validated arguments to learn their names; without this, that dump
# would copy the whole injected graph state (every task) on every call.
_NOT_DUMPED = PlainSerializer(lambda value: None)

# Per tool: argument name -> (type, default or ... when required, key in FIELD_DESCRIPTIONS).
ARGUMENTS: dict[str, dict[str, tuple[Any, Any, str]]] = {
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


def args_schema(name: str, language: Language, *, injected: bool) -> type[BaseModel]:
    """The argument model of one tool; injected fields are hidden from the model's view."""
    descriptions = FIELD_DESCRIPTIONS[language]
    fields: dict[str, Any] = {
        arg: (typ, Field(default, description=descriptions[key]))
        for arg, (typ, default, key) in ARGUMENTS[name].items()
    }
    if injected:
        fields["state"] = (Annotated[Any, InjectedState, _NOT_DUMPED], ...)
        fields["tool_call_id"] = (Annotated[str, InjectedToolCallId], ...)
    return create_model(f"{name}Args", **fields)


PLAIN_SCHEMAS = {name: args_schema(name, "en", injected=False) for name in TASK_TOOL_NAMES}
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


def compact_schema(name: str, language: Language) -> dict[str, Any]:
    """The argument schema the model sees of a compact tool: same arguments, types and required
    ones as the full schema, with short descriptions."""
    full = dereference_refs(PLAIN_SCHEMAS[name].model_json_schema())
    says = COMPACT_FIELD_DESCRIPTIONS[language]
    properties = {
        arg: _compact_argument(full["properties"][arg], says[key])
        for arg, (_, _, key) in ARGUMENTS[name].items()
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
