"""The eight plan-document tools: thin LangChain adapters over `state.plans` storage.

Every tool answers in JSON. Any failure (unknown plan, stale revision, damaged file, path
outside the workspace, broken disk) comes back as a ToolMessage with status "error" whose
text tells the model what to do next; no exception escapes into the graph.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field, create_model

from replan.state.plans import (
    FilesystemPlanStorage,
    InvalidPlan,
    Plan,
    PlanConflict,
    PlanCorrupt,
    PlanError,
    PlanNotFound,
    PlanStorage,
    PlanUpdate,
    Workspace,
    WorkspaceError,
)
from replan.tools.arguments import explain_validation_error
from replan.tools.effects import declare_effects
from replan.tools.plan_descriptions import FIELD_DESCRIPTIONS, TOOL_DESCRIPTIONS
from replan.tools.task_descriptions import Language, check_language


def _field(annotation: Any, description: str, **options: Any) -> Any:
    """One described argument, as `create_model` takes it."""
    return (annotation, Field(description=description, **options))


def _schemas(language: Language) -> dict[str, type[BaseModel]]:
    """Each tool's argument schema, described in `language`; fields keep the order given."""
    says = FIELD_DESCRIPTIONS[language]
    name = _field(str, says["name"])
    revision = _field(int | None, says["last_known_revision"], default=None, ge=0)
    labels = {  # the optional fields a write keeps from the previous revision when omitted
        "title": _field(str | None, says["title"], default=None),
        "author": _field(str | None, says["author"], default=None),
        "status": _field(str | None, says["status"], default=None),
        "last_known_revision": revision,
    }
    fields: dict[str, dict[str, Any]] = {
        "write_plan": {"name": name, "content": _field(str, says["content"]), **labels},
        "read_plan": {"name": name},
        "list_plans": {},
        "delete_plan": {"name": name, "last_known_revision": revision},
        "update_plan_from_file": {
            "name": name,
            "path": _field(str, says["import_path"]),
            **labels,
        },
        "export_plan_to_file": {
            "name": name,
            "path": _field(str, says["export_path"]),
            "overwrite": _field(bool, says["overwrite"], default=False),
        },
        "set_plan_status": {
            "name": name,
            "status": _field(str, says["new_status"]),
            "last_known_revision": revision,
        },
        "get_plan_status": {"name": name},
    }
    return {
        tool: create_model(f"{tool}_args", __doc__=f"Arguments of {tool}.", **tool_fields)
        for tool, tool_fields in fields.items()
    }


def plan_tools(
    storage: PlanStorage | None = None,
    *,
    workspace: str | os.PathLike[str] | Workspace | None = None,
    language: Language = "en",
) -> list[BaseTool]:
    """write_plan, read_plan, list_plans, delete_plan, update_plan_from_file,
    export_plan_to_file, set_plan_status and get_plan_status over one storage.

    `storage` defaults to a `FilesystemPlanStorage` in the default plans folder (see
    `state.plans.default_plans_dir`). `workspace` is the only folder the file tools may read
    or write; it defaults to the working directory when `plan_tools` is called. Agents that
    should see the same plans pass the same storage. `language` ("en" or "zh") is the
    language of the tool and argument descriptions.
    """
    check_language(language)
    store = storage if storage is not None else FilesystemPlanStorage()
    files = workspace if isinstance(workspace, Workspace) else Workspace(workspace)

    def write_plan(
        name: str,
        content: str,
        title: str | None = None,
        author: str | None = None,
        status: str | None = None,
        last_known_revision: int | None = None,
    ) -> str:
        update = PlanUpdate(
            name=name,
            content=content,
            title=title,
            author=author,
            status=status,
            expected_revision=last_known_revision,
        )
        return _json(store.upsert(update).summary().model_dump())

    def read_plan(name: str) -> str:
        return _json(_existing(store, name).model_dump())

    def list_plans() -> str:
        listing = store.list()
        return _json(listing.model_dump(exclude={"warnings"} if not listing.warnings else None))

    def delete_plan(name: str, last_known_revision: int | None = None) -> str:
        if not store.delete(name, last_known_revision):
            raise PlanNotFound(name)
        return _json({"name": name, "deleted": True})

    def update_plan_from_file(path: str, **fields: Any) -> str:
        """write_plan with the body read from a workspace file; `fields` as in write_plan."""
        return write_plan(content=files.read_text(path), **fields)

    def export_plan_to_file(name: str, path: str, overwrite: bool = False) -> str:
        plan = _existing(store, name)
        target = files.write_text(path, plan.content, overwrite=overwrite)
        return _json(
            {
                "name": plan.name,
                "path": str(target.relative_to(files.root)),
                "title": plan.title,
                "status": plan.status,
                "revision": plan.revision,
                "bytes_written": len(plan.content.encode("utf-8")),
            }
        )

    def set_plan_status(name: str, status: str, last_known_revision: int | None = None) -> str:
        if not status.strip():
            raise InvalidPlan("status must not be empty: give a label such as 'done'")
        update = PlanUpdate(
            name=name, status=status, expected_revision=last_known_revision, must_exist=True
        )
        return _status_view(store.upsert(update))

    def get_plan_status(name: str) -> str:
        return _status_view(_existing(store, name))

    schemas = _schemas(language)
    descriptions = TOOL_DESCRIPTIONS[language]
    functions: list[Callable[..., str]] = [
        write_plan,
        read_plan,
        list_plans,
        delete_plan,
        update_plan_from_file,
        export_plan_to_file,
        set_plan_status,
        get_plan_status,
    ]
    tools = [_tool(func, schemas[func.__name__], descriptions[func.__name__]) for func in functions]
    for tool in tools:  # what each does (`replan.tools.effects`); the writes act
        if tool.name in READ_ONLY:
            declare_effects(tool, read_only=True)
        elif tool.name == "delete_plan":
            declare_effects(tool, destructive=True)
    return tools


READ_ONLY = frozenset({"read_plan", "list_plans", "get_plan_status"})
"""The plan tools that change nothing."""


def _existing(store: PlanStorage, name: str) -> Plan:
    """The named plan; PlanNotFound if there is none."""
    plan = store.get(name)
    if plan is None:
        raise PlanNotFound(name)
    return plan


def _status_view(plan: Plan) -> str:
    return _json({"name": plan.name, "status": plan.status, "revision": plan.revision})


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _tool(func: Callable[..., str], args_schema: type[BaseModel], description: str) -> BaseTool:
    """A structured tool whose failures become error ToolMessages the model can act on."""

    @functools.wraps(func)
    def guarded(**kwargs: Any) -> str:
        try:
            return func(**kwargs)
        except (PlanError, WorkspaceError, OSError) as exc:
            raise ToolException(_explain(exc)) from exc

    return StructuredTool.from_function(
        func=guarded,
        name=func.__name__,
        description=description,
        args_schema=args_schema,
        handle_tool_error=True,
        handle_validation_error=explain_validation_error,
    )


def _explain(exc: Exception) -> str:
    """The error text a model sees: what went wrong and what to do about it."""
    if isinstance(exc, PlanNotFound):
        return (
            f"No plan is named {exc.name!r}. Call list_plans to see the existing plans, or "
            "write_plan to create it."
        )
    if isinstance(exc, PlanConflict):
        return _explain_conflict(exc)
    if isinstance(exc, PlanCorrupt):
        return (
            f"{exc}. Nothing was changed. The plan exists, so do not treat it as missing: "
            "tell the user, or call delete_plan without last_known_revision and write it again."
        )
    if isinstance(exc, InvalidPlan | WorkspaceError):
        return f"Refused: {exc}. Fix the arguments and call again."
    return f"The plan storage failed: {exc}. Try again; if it keeps failing, tell the user."


def _explain_conflict(exc: PlanConflict) -> str:
    if exc.expected == 0:
        return (
            f"A plan named {exc.name!r} already exists (revision {exc.current}); nothing was "
            f"written. Call read_plan to see it, choose another name, or write with "
            f"last_known_revision={exc.current} to replace it."
        )
    if exc.current == 0:
        return (
            f"Plan {exc.name!r} does not exist (perhaps someone deleted it); nothing was written. "
            "Call list_plans, or write_plan with last_known_revision=0 to create it again."
        )
    return (
        f"Plan {exc.name!r} was changed by someone else: it is at revision {exc.current}, "
        f"not {exc.expected}. Nothing was changed. Call read_plan, merge your change into "
        f"the current version and retry with last_known_revision={exc.current}."
    )
