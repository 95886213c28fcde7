"""The planner's and replanner's decisions: `plan` (with `steps`) and `respond` (with
`response`), their argument models, their schemas and how a plan is accepted.

A step that names itself, a later step or a number no step has, and a tool step with an unknown
tool or arguments that do not fit its schema, make a plan a mistake the model is told about
(`PlanArgs` validated against a `replan.graphs.plan.numbering.Numbering`). When the run offers
tool steps (`Context.tool_steps`), the `plan` schema offers one object per tool of the run. An
accepted plan keeps the numbers the model was shown as step ids (`accept_plan`). Before the
check, steps are read as a small model means them: a call spelled as text is that tool step,
money in a computing tool's expression is a number, and references numbered from 1 where the
list starts later name the list's own items (`_list_numbers`).
"""

from __future__ import annotations

import functools
import html
import json
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator

from replan.graphs.context import ANSWER_MODES, AnswerMode, Context
from replan.graphs.graph_state import PlannedStep
from replan.graphs.model.decision_modes.strategy import DecisionTool
from replan.graphs.plan.echoes import instruction_words
from replan.graphs.plan.numbering import Item, Numbering
from replan.graphs.plan.own_tools import NO_TOOLS, OwnTools
from replan.graphs.plan.provenance import Provenance
from replan.graphs.plan.references import references, renumber
from replan.graphs.plan.tool_steps import money_as_numbers
from replan.graphs.prompts import Prompts


class PlanStepArgs(BaseModel):
    """A step with its dependencies: 1-based positions of earlier steps of the same list.
    Without `depends_on` it runs after the step before it, like a plain string."""

    step: str
    depends_on: list[int] | None = None
    tools: list[str] | None = None
    """In a sealed run: the tools the step may act with (`replan.graphs.seal`)."""


class ToolStepArgs(BaseModel):
    """A tool step: `tool` called with `args` (`"$N"` in them names step N's result), after
    the steps `depends_on` names and those it refers to (`replan.graphs.plan.tool_steps`);
    without the `args` its tool needs, a deferred step (`replan.graphs.plan.numbering`)."""

    tool: str
    args: dict[str, Any] | None = None
    depends_on: list[int] | None = None


class PlanArgs(BaseModel):
    """Arguments of the `plan` decision: a non-empty list of steps, each a non-blank string, a
    `PlanStepArgs` or a `ToolStepArgs`. Validated with a `Numbering` as context, the numbers
    its steps name and its tool steps are checked too (`Numbering.problems`).

    A string holding such an object as JSON is read as the object, which lets a command line
    pass dependencies (`--edit-plan '{"step": "...", "depends_on": [1]}'`).
    """

    steps: list[str | PlanStepArgs | ToolStepArgs] = Field(min_length=1)

    @field_validator("steps", mode="before")
    @classmethod
    def _objects_written_as_json(cls, steps: Any) -> Any:
        if not isinstance(steps, list):
            return steps
        problems, read = [], []
        for number, step in enumerate(steps, 1):
            try:
                read.append(_json_object(step) if isinstance(step, str) else step)
            except ValueError as exc:
                problems.append(f"step {number} {exc}")
        if problems:
            raise ValueError("; ".join(problems))
        return read

    @model_validator(mode="after")
    def _valid_steps(self, info: ValidationInfo) -> PlanArgs:
        given = info.context if isinstance(info.context, Numbering) else None
        numbering = given or Numbering(tools=None)  # a first plan, its tool steps unchecked
        if given and given.tools:
            self.steps = [_call_written_as_text(step, given.tools) for step in self.steps]
            nameable = given.nameable(len(self.steps))
            self.steps = [_plain_money(step, given.tools, nameable) for step in self.steps]
            self.steps = [_list_numbers(s, i, given) for i, s in enumerate(self.steps)]
        problems = numbering.problems(self.items())
        if given and not given.tools and any(item.tool for item in self.items()):
            problems.insert(0, "tool steps are not offered in this run: write every step as text")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def items(self) -> list[Item]:
        """The steps as `Item`s: text, numbers named, and a tool step's tool and args."""
        return [
            Item(step_text(step))
            if isinstance(step, str)
            else Item.tool_step(step.tool, step.args, step.depends_on)
            if isinstance(step, ToolStepArgs)
            else Item(
                step_text(step.step),
                step.depends_on,
                tools=None if step.tools is None else tuple(step.tools),
            )
            for step in self.steps
        ]


_OWN_NUMBER = re.compile(r"^(?:step\s*\d{1,4}\s*[.):]|\d{1,4}[.)])(?:\s+|$)", re.IGNORECASE)
"""A number a model wrote before a step's text ("17. ", "3) ", "Step 2: "), copying how the
prompts show a plan: the display numbers steps itself."""


def step_text(text: str) -> str:
    """A text step as it is kept: trimmed, without a number of its own in front, and with HTML
    character references read (small models write a quote as `&#34;` or `&quot;`)."""
    text = html.unescape(text).strip()
    while match := _OWN_NUMBER.match(text):
        text = text[match.end() :]
    return text


def _call_written_as_text(
    step: str | PlanStepArgs | ToolStepArgs, tools: OwnTools
) -> str | PlanStepArgs | ToolStepArgs:
    """A text step that spells a call of one of the run's tools (`area(Hall)`), or a tool
    step with such a call for its tool and no args, as the tool step it means (waiting, as
    any tool step, only for the steps it names); any other step as it is."""
    if isinstance(step, ToolStepArgs):
        text = step.tool if step.args is None and step.tool not in tools.by_name else None
    else:
        text = step if isinstance(step, str) else step.step
    call = tools.call_in_text(text) if text is not None else None
    if call is None:
        return step
    depends_on = None if isinstance(step, str) else step.depends_on
    return ToolStepArgs(tool=call[0], args=call[1], depends_on=depends_on)


def _plain_money(
    step: str | PlanStepArgs | ToolStepArgs, tools: OwnTools, nameable: set[int]
) -> str | PlanStepArgs | ToolStepArgs:
    """A computing tool step with each `$N` that names no step written as the number N."""
    if not isinstance(step, ToolStepArgs) or step.tool not in tools.computing:
        return step
    return step.model_copy(update={"args": money_as_numbers(step.args, nameable)})


def _list_numbers(
    step: str | PlanStepArgs | ToolStepArgs, index: int, numbering: Numbering
) -> str | PlanStepArgs | ToolStepArgs:
    """A tool step (item `index`) that refers to a done step while each `$k` it refers to
    has the list's own k-th item, listed before it, in its `depends_on`: each `$k` read as
    that item. A small model numbers its list from 1 whatever number it was told to start
    from (after a turn that did step 1, `"$1"` and `"$2"` for the list's items 2 and 3)."""
    first = numbering.first
    if not isinstance(step, ToolStepArgs) or first == 1 or not step.depends_on:
        return step
    named = references(step.args or {})
    own = {k: first + k - 1 for k in named}
    if named.isdisjoint(numbering.done) or any(
        k > index or own[k] not in step.depends_on for k in named
    ):
        return step
    return step.model_copy(update={"args": renumber(step.args, own)})


def _json_object(text: str) -> Any:
    """`text` parsed when it is a JSON object with a `step` or a `tool`; else `text` itself.
    ValueError when it starts as a JSON object and is not valid JSON."""
    if not text.lstrip().startswith("{"):
        return text
    try:
        value = json.loads(text)
    except ValueError:
        raise ValueError("looks like a JSON object but is not valid JSON") from None
    return value if isinstance(value, dict) and ("step" in value or "tool" in value) else text


def accept_plan(args: PlanArgs, numbering: Numbering | None = None) -> list[PlannedStep]:
    """The stored plan `args` describe, numbered as `numbering` says (default: a first plan in
    a new thread); ValueError when the numbers it names do not fit."""
    numbering = numbering or Numbering.first_plan()
    items = args.items()
    if problems := numbering.problems(items):
        raise ValueError("; ".join(problems))
    return numbering.plan(items)


class RespondArgs(BaseModel):
    """Arguments of the `respond` decision: the final answer."""

    response: str = Field(min_length=1)


TEXT_STEP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "step": {"type": "string"},
        "depends_on": {"type": "array", "items": {"type": "integer"}},
    },
    "required": ["step"],
}
"""A text step in the lean `plan` schema of a run with tool steps."""


def text_plan_schema() -> dict[str, Any]:
    """The `plan` arguments' schema without tool steps: strings and text step objects."""
    items = {"anyOf": [{"type": "string"}, TEXT_STEP_SCHEMA]}
    steps = {"type": "array", "minItems": 1, "items": items}
    return {"type": "object", "properties": {"steps": steps}, "required": ["steps"]}


def sealed_text_step_schema(tools: OwnTools) -> dict[str, Any]:
    """A text step of a sealed run: it may name the tools it acts with (`tools`)."""
    named = {"type": "array", "items": {"enum": list(tools.by_name)}}
    return {**TEXT_STEP_SCHEMA, "properties": {**TEXT_STEP_SCHEMA["properties"], "tools": named}}


def tool_plan_schema(tools: OwnTools, sealed: bool = False) -> dict[str, Any]:
    """The `plan` arguments' schema of a run with tool steps: strings, text steps (`sealed`:
    naming their tools), and one object per tool (`OwnTools.item_schemas`); nothing else, to
    keep every request lean."""
    text = sealed_text_step_schema(tools) if sealed else TEXT_STEP_SCHEMA
    items = {"anyOf": [{"type": "string"}, text, *tools.item_schemas]}
    steps = {"type": "array", "minItems": 1, "items": items}
    return {"type": "object", "properties": {"steps": steps}, "required": ["steps"]}


def plan_tool(prompts: Prompts, tools: OwnTools = NO_TOOLS, sealed: bool = False) -> DecisionTool:
    """The `plan` tool: `steps`, each a string, a step with its dependencies (`sealed`: and
    the tools it acts with) or, when `tools` has any, a tool step calling one of them."""
    if tools:
        steps, schema = prompts.plan_steps_tools, tool_plan_schema(tools, sealed)
    else:
        steps, schema = prompts.plan_steps, text_plan_schema()
    return DecisionTool("plan", prompts.plan_tool, PlanArgs, {"steps": steps}, schema=schema)


def with_max_steps(schema: Mapping[str, Any], most: int) -> dict[str, Any]:
    """A `plan` arguments' `schema` whose `steps` list holds at most `most` items."""
    steps = {**schema["properties"]["steps"], "maxItems": most}
    return {**schema, "properties": {**schema["properties"], "steps": steps}}


def adds_call(numbering: Numbering, args: BaseModel) -> bool:
    """Whether a plan sent beside a response is taken over it: when it holds a tool step not
    done yet, whose result the response cannot have seen. Small models add a guessed answer
    to the calls still needed (so the plan goes on), and re-list done steps or restate the
    work in text steps beside a right answer (so the answer stands)."""
    return isinstance(args, PlanArgs) and numbering.adds_call(args.items())


def respond_tool(prompts: Prompts, answer: AnswerMode = "decision") -> DecisionTool:
    """The `respond` tool: `response`, the final answer (with `answer="plain"`, a short note
    that the objective is met: the answer is written next)."""
    described = prompts.respond_response if answer == "decision" else prompts.respond_note
    return DecisionTool("respond", prompts.respond_tool, RespondArgs, {"response": described})


PLANNING_PROMPTS = (
    "planner",
    "planner_computing",
    "planner_tool_steps",
    "replanner",
    "replanner_computing",
    "replanner_tool_steps",
)
"""The prompts whose sentences a plan's steps may not copy."""


class Decisions:
    """The `plan` and `respond` decisions of one graph, in its prompts, for its own tools."""

    def __init__(self, prompts: Prompts, tools: OwnTools) -> None:
        self.prompts = prompts
        self.tools = tools

    @functools.cached_property
    def _text_plan(self) -> DecisionTool:
        return plan_tool(self.prompts)

    @functools.cached_property
    def _tool_plan(self) -> DecisionTool:
        return plan_tool(self.prompts, self.tools)

    @functools.cached_property
    def _sealed_plan(self) -> DecisionTool:
        return plan_tool(self.prompts, self.tools, sealed=True)

    @functools.cached_property
    def _responds(self) -> dict[AnswerMode, DecisionTool]:
        return {answer: respond_tool(self.prompts, answer) for answer in ANSWER_MODES}

    @functools.cached_property
    def _instructions(self) -> tuple[tuple[str, ...], ...]:
        """The sentences the planner and replanner are instructed with, which no step copies."""
        prompts = self.prompts
        return instruction_words(
            getattr(prompts, name) for name in PLANNING_PROMPTS if hasattr(prompts, name)
        )

    def plan(
        self, numbering: Numbering, context: Context, sources: Provenance | None = None
    ) -> DecisionTool:
        """The `plan` decision whose steps are checked against `numbering` (and its tools),
        listing at most the run's `max_plan_steps` (the schema's `maxItems` too), copying none
        of the instructions, with tool step values that come from `sources` (when given)."""
        sealed = context.plan_integrity == "sealed"
        base = (
            (self._sealed_plan if sealed else self._tool_plan)
            if numbering.tools
            else self._text_plan
        )
        numbering = replace(
            numbering,
            max_steps=context.max_plan_steps,
            instructions=self._instructions,
            sources=sources,
        )
        return replace(
            base,
            schema=with_max_steps(base.schema or {}, context.max_plan_steps),
            context=numbering,
            beside_another=functools.partial(adds_call, numbering),
        )

    def respond(self, context: Context) -> DecisionTool:
        """The `respond` decision for the run's way of writing its answer."""
        return self._responds[context.answer]
