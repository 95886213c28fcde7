"""The tools a run's executor is offered, for each choice of `Context.task_tools` (and the
graph's choice for runs that make none).

Every prompt token is paid before the model's first output token (about 20 ms each on a small
local model on CPU), and tool schemas are most of the executor's first request. So the graph
builds, once, one offer per choice: the caller's tools plus the task tools described at length
("full"), briefly ("compact"), or not at all ("none"). A run picks its offer by name; the
planner lists the same tools the executor gets. Tools marked as computing
(`replan.tools.calculator.is_computing`) are named in the prompts as where arithmetic goes.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from replan.graphs.context import (
    DEFAULT_TASK_TOOLS,
    SHARED_STORE_TASK_TOOLS,
    TASK_TOOLS_CHOICES,
    Context,
    TaskToolsChoice,
)
from replan.graphs.model.text_calls import OfferedTools
from replan.state.task_stores import TaskStore
from replan.tools.calculator import is_computing
from replan.tools.effects import ToolEffects, effects_by_name
from replan.tools.returns import return_schema, shape_of
from replan.tools.task_descriptions import Language
from replan.tools.task_tools import task_tools

NO_TOOLS_LISTED = "(none)"
"""How a prompt's tool list reads when there are no tools."""


@dataclass(frozen=True)
class ToolOffer:
    """Tools as the executor offers them: the tools, their OpenAI specs, their names (also as
    `OfferedTools`, to read calls the model wrote as text); `own` names the caller's tools
    (the task tools left out), `computing` those of them marked as computing."""

    tools: tuple[BaseTool, ...]
    has_task_tools: bool
    own: tuple[str, ...] = ()
    specs: tuple[dict[str, Any], ...] = field(init=False)
    offered: OfferedTools = field(init=False)
    computing: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "specs", tuple(convert_to_openai_tool(t) for t in self.tools))
        object.__setattr__(self, "offered", OfferedTools.of(t.name for t in self.tools))
        computes = tuple(t.name for t in self.tools if t.name in self.own and is_computing(t))
        object.__setattr__(self, "computing", computes)

    @property
    def names(self) -> str:
        """The tool names, comma-separated (NO_TOOLS_LISTED when there are none)."""
        return ", ".join(tool.name for tool in self.tools) or NO_TOOLS_LISTED

    @property
    def task_tool_names(self) -> list[str]:
        """The names of the task tools offered (none with `Context.task_tools="none"`)."""
        return [tool.name for tool in self.tools if tool.name not in self.own]

    @cached_property
    def effects(self) -> dict[str, ToolEffects]:
        """What each of the caller's tools declares it does (`replan.tools.effects`)."""
        return effects_by_name(tool for tool in self.tools if tool.name in self.own)

    @cached_property
    def parameters(self) -> dict[str, dict[str, Any]]:
        """Each tool's arguments' JSON schema, by the tool's name."""
        return {
            spec["function"]["name"]: spec["function"].get("parameters") or {}
            for spec in self.specs
        }

    @cached_property
    def listing(self) -> str:
        """One short line per tool of the caller's for the head of every request (`tool_lines`;
        the task tools are the executor's, which it is offered with their schemas)."""
        own = [spec for spec in self.specs if spec["function"]["name"] in self.own]
        returns = {tool.name: schema for tool in self.tools if (schema := return_schema(tool))}
        return tool_lines(own, returns) or NO_TOOLS_LISTED

    def computing_note(self, template: str) -> str:
        """`template` (a prompt's `{computing}` text) with its `{tools}` naming the computing
        tools ("`a` or `b`"), or "" when the offer has none."""
        if not self.computing:
            return ""
        return template.format(tools=" or ".join(f"`{name}`" for name in self.computing))


@dataclass(frozen=True)
class ToolOffers(Mapping[TaskToolsChoice, ToolOffer]):
    """The offer for each `Context.task_tools` choice, and the graph's `default` choice for a
    run that makes none."""

    by_choice: Mapping[TaskToolsChoice, ToolOffer]
    default: TaskToolsChoice

    def __getitem__(self, choice: TaskToolsChoice) -> ToolOffer:
        return self.by_choice[choice]

    def __iter__(self) -> Iterator[TaskToolsChoice]:
        return iter(self.by_choice)

    def __len__(self) -> int:
        return len(self.by_choice)

    def choice(self, context: Context) -> TaskToolsChoice:
        """How a run offers the task tools: its `Context.task_tools`, else the graph's."""
        return self.default if context.task_tools is None else context.task_tools


def tool_lines(
    specs: Sequence[Mapping[str, Any]], returns: Mapping[str, Mapping[str, Any]] | None = None
) -> str:
    """One short line per tool (OpenAI function specs): `- name(arg, ...): summary`, then
    `→ {field, ...}` for a tool whose schema of what it returns `returns` holds, then one
    indented line per argument its schema documents (`argument_lines`).

    The summary is the first sentence of the tool's description that no other tool's holds:
    a suite's tools often open with the same sentence about the suite, which says nothing
    about any one of them."""
    sentences = {spec["function"]["name"]: _sentences(spec["function"]) for spec in specs}
    shared = Counter(s for said in sentences.values() for s in set(said))
    lines = []
    for spec in specs:
        function = spec["function"]
        parameters = function.get("parameters") or {}
        said = sentences[function["name"]]
        own = [s for s in said if shared[s] < 2] or said
        summary = own[0].rstrip(".") if own else ""
        line = f"- {function['name']}({', '.join(parameters.get('properties') or {})}): {summary}"
        if shape := shape_of((returns or {}).get(function["name"]) or {}):
            line += f" → {shape}"
        lines.append(line)
        lines.extend(argument_lines(parameters))
    return "\n".join(lines)


ARGUMENT_NOTE_CHARS = 240
"""How much of an argument's description the tool list shows."""


def argument_lines(parameters: Mapping[str, Any]) -> list[str]:
    """`  name (type): description` for each argument whose schema says more than its name:
    a description or allowed values (`enum`); text arguments' type goes unsaid."""
    lines = []
    for name, schema in (parameters.get("properties") or {}).items():
        note = " ".join(str(schema.get("description") or "").split())
        if allowed := schema.get("enum") or (schema.get("items") or {}).get("enum"):
            note = f"{note} One of: {', '.join(map(str, allowed))}.".strip()
        if not note:
            continue
        if len(note) > ARGUMENT_NOTE_CHARS:
            note = note[: ARGUMENT_NOTE_CHARS - 1].rstrip() + "…"
        kind = schema.get("type")
        typed = f" ({kind})" if isinstance(kind, str) and kind != "string" else ""
        lines.append(f"    {name}{typed}: {note}")
    return lines


def _sentences(function: Mapping[str, Any]) -> list[str]:
    text = " ".join(str(function.get("description") or "").split())
    return [s for s in _SENTENCE_END.split(text) if s]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def tool_offers(
    tools: Sequence[BaseTool],
    language: Language,
    task_store: TaskStore | None = None,
    default: TaskToolsChoice | None = None,
) -> ToolOffers:
    """An offer per `Context.task_tools` choice: `tools` plus the task tools in that form
    (working on `task_store` when given, else on the graph state's list). A run that makes no
    choice gets `default`, or without one `SHARED_STORE_TASK_TOOLS` when the tools share a
    store and `DEFAULT_TASK_TOOLS` when they do not."""
    added: dict[TaskToolsChoice, list[BaseTool]] = {
        "full": task_tools(language=language, detail="full", store=task_store),
        "compact": task_tools(language=language, detail="compact", store=task_store),
        "none": [],
    }
    own = tuple(tool.name for tool in tools)
    if default is None:
        default = DEFAULT_TASK_TOOLS if task_store is None else SHARED_STORE_TASK_TOOLS
    by_choice = {
        choice: ToolOffer(tuple([*tools, *added[choice]]), bool(added[choice]), own)
        for choice in TASK_TOOLS_CHOICES
    }
    return ToolOffers(by_choice, default)
