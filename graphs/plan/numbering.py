"""Step numbers that do not move: how a plan's items are numbered, what they may name, and the
stored plan they become.

A step's id is the number the model was shown. In a first plan (the planner's, or one a person
writes at review) the items are numbered by position, 1, 2, 3, ... (in a thread that already
has done steps, their ids continue after those, and references are rewritten to match). In a
replan, the items of the new list are numbered on from the next free number N, which the
replanner's prompt gives (the first item is N, the second N + 1, ...); a listed step with the
same text as a step still planned keeps that step's number (and may be named by either), and
done steps keep theirs. So `depends_on` and `"$N"` always use numbers the model has seen, and
a replan never renumbers anything.

An item may name (in `depends_on` or, for a tool step, as `"$N"` in its arguments) a done step,
which it then waits for and whose result it sees, or a step listed before it in the same list.
A step naming itself, a later step or a number that is neither is a mistake the model is told
about (`Numbering.problems`); so is a tool step with an unknown tool or arguments that do not
fit the tool's schema. Without a `depends_on`, a text item runs after the item before it and a
tool step waits only for the steps it refers to.

What acts happens in plan order (`_world_order`): a tool step whose tool may act
(`replan.tools.effects`; an undeclared tool may) also waits for every item listed before it
since the last one that may act, and for that one; a read-only tool step waits for the last
item before it that may act. A text step may act when the run has a tool that may. So
`cd`, `rm`, `cd ..` run one after the other, as written, and look-ups side by side.

Deferred steps. A tool step that leaves out the arguments its tool needs is deferred: its
values come from results not seen yet (the files a listing will show). It waits as a text step
does (for its `depends_on`, else the item before it) and never runs as it is: once the steps it
waits for are done, the replanner is asked (`replan.graphs.nodes.replanner`) and writes it as
tool steps with values from their results. It is stored with `deferred` (its tool) instead of
`tool` and `args`, so the first plan declares what the turn will call. A deferred step with
nothing to wait for is a mistake; so is one whose dependencies are all done (a follow-up turn's
plan naming the turn before's steps, a replan re-listing it) when no other step of the list can
start: else the replanner writes it after that first wave.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from replan.graphs.graph_state import ExecutedStep, PlannedStep
from replan.graphs.plan.echoes import copies_instructions
from replan.graphs.plan.own_tools import NO_TOOLS, OwnTools
from replan.graphs.plan.progress import may_work_now, step_key
from replan.graphs.plan.provenance import PLAN_ADVICE, Provenance
from replan.graphs.plan.references import references
from replan.graphs.plan.tool_steps import format_call, renamed_call

_A_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+(?:\(\))?")
"""A step text that is only a name (`read_webpage`, `get_balance()`): no work an agent can do
(small models write a tool's name, real or made up, as a text step)."""


@dataclass(frozen=True)
class Item:
    """One item of a plan as written: its text (for a tool step, the call as people read it),
    the numbers it names in `depends_on` (None: the default), and a tool step's tool and args."""

    text: str
    depends_on: list[int] | None = None
    tool: str | None = None
    args: dict[str, Any] | None = None
    tools: tuple[str, ...] | None = None

    @classmethod
    def tool_step(cls, tool: str, args: Any, depends_on: list[int] | None) -> Item:
        """A tool step item (its text is the call; its `args` None when left out)."""
        given = args if isinstance(args, dict) else None
        return cls(format_call(tool, given or {}), depends_on, tool, given)


def deferred_text(tool: str) -> str:
    """How a deferred step of `tool` reads, in plans and progress: `rm(…)`."""
    return f"{tool}(…)"


def next_number(done: Sequence[ExecutedStep], plan: Sequence[PlannedStep] = ()) -> int:
    """The first number no step of the thread has."""
    ids = [step["id"] for step in [*done, *plan] if "id" in step]
    return max(ids, default=0) + 1


@dataclass(frozen=True)
class Numbering:
    """How the items of a plan are numbered (the first item is `first`, new steps get ids from
    `ids_from`), the `done` step numbers and the steps still planned (`kept`) it may name, and
    the tools its tool steps may call (None: tool steps are taken unchecked); `done_texts`,
    what the done steps say (`step_key`); `max_steps`, the most items a plan may list (None:
    any number); `instructions`, the words of the prompt's sentences, which a text step may not
    copy (`replan.graphs.plan.echoes`); `sources`, where a tool step's values may come from
    (`replan.graphs.plan.provenance`; None: not checked)."""

    first: int = 1
    ids_from: int = 1
    done: frozenset[int] = frozenset()
    kept: tuple[PlannedStep, ...] = ()
    tools: OwnTools | None = field(default=NO_TOOLS, compare=False)
    done_texts: frozenset[str] = frozenset()
    max_steps: int | None = None
    instructions: tuple[tuple[str, ...], ...] = field(default=(), compare=False)
    sources: Provenance | None = field(default=None, compare=False)

    @classmethod
    def first_plan(cls, tools: OwnTools = NO_TOOLS) -> Numbering:
        """A first plan on a new thread: items numbered by position from 1."""
        return cls(first=1, ids_from=1, tools=tools)

    @classmethod
    def replan(
        cls, left: Sequence[PlannedStep], done: Sequence[ExecutedStep], tools: OwnTools = NO_TOOLS
    ) -> Numbering:
        """A replan: items numbered on from the next free number; `left` may be re-listed. A
        turn's first plan is one with nothing left: numbered on from the steps the turn before
        carried out (from 1 when there are none). A failed call that may work now
        (`may_work_now`) counts as not made: listing it again adds a call."""
        start = next_number(done, left)
        done_ids = frozenset(step["id"] for step in done if "id" in step)
        retried = {id(step) for step in may_work_now(done)}
        texts = frozenset(step_key(step["step"]) for step in done if id(step) not in retried)
        return cls(start, start, done_ids, tuple(left), tools, done_texts=texts)

    def nameable(self, count: int) -> set[int]:
        """The numbers a list of `count` items may name: its own, the done steps', and those of
        the steps still planned."""
        own = range(self.first, self.first + count)
        return {*own, *self.done, *(step["id"] for step in self.kept)}

    def adds_call(self, items: Sequence[Item]) -> bool:
        """Whether `items` hold a tool step not done yet (by its text)."""
        return any(
            item.tool is not None and step_key(item.text) not in self.done_texts for item in items
        )

    def _matches(self, items: Sequence[Item]) -> list[PlannedStep | None]:
        """For each item, the step still planned it re-lists (same text), if any."""
        unmatched = list(self.kept)
        found: list[PlannedStep | None] = []
        for item in items:
            text = self._text(item)
            match = next((step for step in unmatched if step["step"] == text), None)
            if match is not None:
                unmatched.remove(match)
            found.append(match)
        return found

    def _names(self, items: Sequence[Item]) -> dict[int, int]:
        """Which item (index) each number names within the list."""
        names = {self.first + index: index for index in range(len(items))}
        for index, match in enumerate(self._matches(items)):
            if match is not None:
                names.setdefault(match["id"], index)
        return names

    def deferred(self, item: Item) -> bool:
        """Whether `item` is a deferred step: a tool step without the arguments its tool needs."""
        return (
            item.tool is not None
            and not item.args
            and self.tools is not None
            and self.tools.needs_args(item.tool)
        )

    def _text(self, item: Item) -> str:
        return deferred_text(str(item.tool)) if self.deferred(item) else item.text

    def _waits_for(self, index: int, item: Item) -> tuple[list[int], set[int]]:
        """The numbers item `index` names in `depends_on` (or by default), and as references."""
        if item.depends_on is not None:
            named = list(item.depends_on)
        elif item.tool is None or self.deferred(item):
            named = [self.first + index - 1] if index else []
        else:
            named = []
        return named, references(item.args or {})

    def problems(self, items: Sequence[Item]) -> list[str]:
        """What is wrong with `items` as a plan, in words (empty when nothing is)."""
        names, found = self._names(items), []
        last = self.first + len(items) - 1
        if self.max_steps is not None and len(items) > self.max_steps:
            found.append(
                f"the plan lists {len(items)} steps, more than {self.max_steps}: list only the "
                f"next {self.max_steps} (the rest can be planned once they are done), and no "
                "step twice"
            )
        matches = self._matches(items)
        for index, item in enumerate(items):
            number = self.first + index
            if matches[index] is None and (unsourced := self._unsourced(item)):
                found += [f"step {number}: {p}" for p in unsourced] + [PLAN_ADVICE]
            if not item.text:
                found.append(f"step {number} is blank")
            elif item.tool is None and self._only_a_name(item.text):
                found.append(
                    f'step {number} is only a name ("{item.text}"): say what the step must do'
                    + (", or call a tool with a tool step" if self.tools else "")
                )
            elif item.tool is None and copies_instructions(item.text, self.instructions):
                found.append(
                    f"step {number} copies your instructions instead of saying what to do: "
                    "write the work itself"
                )
            if self.deferred(item):
                found += self._deferred_problems(index, item, items)
            elif item.tool is not None and self.tools is not None:
                problems = self.tools.problems(item.tool, item.args or {})
                found += [f"step {number}: {p}" for p in problems]
            unknown = [t for t in item.tools or () if self.tools and t not in self.tools.by_name]
            if unknown:
                found.append(f"step {number} names no tool of this run: {', '.join(unknown)}")
            named, referred = self._waits_for(index, item)
            for verb, others in (("depends on", named), ("refers to", sorted(referred))):
                for other in others:
                    where = names.get(other)
                    what = f"step {number} {verb} {'$' if verb == 'refers to' else 'step '}{other}"
                    if where == index:
                        found.append(f"step {number} {verb} itself")
                    elif where is not None and where > index:
                        verb_only = "depend on" if verb == "depends on" else "refer to"
                        found.append(
                            f"{what}, which comes after it (a step may only {verb_only} steps "
                            "listed before it)"
                        )
                    elif where is None and other not in self.done:
                        plain = f" (to write the number {other}, leave out the $)"
                        hint = plain if verb == "refers to" else ""
                        found.append(f"{what}, but {self._no_such_step(last)}{hint}")
        return list(dict.fromkeys(found))

    def _only_a_name(self, text: str) -> bool:
        """Whether a text step says no more than a name: a dotted or snake_case one, or the
        name of one of the run's tools (`startEngine`, `ls()`)."""
        tools = self.tools.by_name if self.tools is not None else {}
        return bool(_A_NAME.fullmatch(text)) or text.strip().removesuffix("()") in tools

    def _deferred_problems(self, index: int, item: Item, items: Sequence[Item]) -> list[str]:
        """What is wrong with deferred item `index`: nothing to wait for, or all it waits for
        done already while no other step of `items` can start (so nothing runs before the
        replanner could write it; with such a step, it writes it after that wave)."""
        number, (named, _) = self.first + index, self._waits_for(index, item)
        if not named:
            return [
                f'step {number} leaves out the "args" of `{item.tool}` but waits for no step: '
                "give its args, or name in depends_on the steps whose results hold them"
            ]
        if all(other in self.done for other in named) and not self._starts_any(items):
            return [
                f'step {number}: the steps it waits for are done: write its "args" now, with '
                "values from their results"
            ]
        return []

    def _starts_any(self, items: Sequence[Item]) -> bool:
        """Whether some step of `items`, not deferred, waits only for done steps (a wave can
        start)."""
        in_order = self._world_order(items)
        for index, item in enumerate(items):
            named, referred = self._waits_for(index, item)
            waits = {*named, *referred, *in_order[index]}
            if not self.deferred(item) and waits <= self.done:
                return True
        return False

    def _unsourced(self, item: Item) -> list[str]:
        """What a valid tool step's values come from nowhere (`sources`), in words."""
        tools, sources = self.tools, self.sources
        if sources is None or tools is None or item.tool is None or self.deferred(item):
            return []
        if tools.problems(item.tool, item.args or {}):
            return []
        return [p for _, p in sources.problems(item.args or {}, tools.parameters[item.tool])]

    def _no_such_step(self, last: int) -> str:
        if self.first == 1 and not self.done:
            return f"the list has steps 1 to {last}"
        done = ", ".join(map(str, sorted(self.done))) or "none"
        return (
            f"there is no such step (your list's steps are numbered {self.first} to {last}; "
            f"done steps: {done})"
        )

    def _may_act(self, item: Item) -> bool:
        """Whether carrying out `item` may change something outside the run."""
        effects = self.tools.effects if self.tools is not None else {}
        if item.tool is not None:
            return item.tool not in effects or effects[item.tool].acts
        return any(effect.acts for effect in effects.values())

    def _world_order(self, items: Sequence[Item]) -> list[list[int]]:
        """For each item, the list numbers it waits for so that what acts happens in plan order
        (module docstring); only tool steps get any (a text step says what it waits for)."""
        last_act: int | None = None
        since: list[int] = []
        order: list[list[int]] = []
        for index, item in enumerate(items):
            acts = self._may_act(item)
            after_act = [] if last_act is None else [last_act]
            if item.tool is None:
                order.append([])
            else:
                order.append([*after_act, *since] if acts else after_act)
            if acts:
                last_act, since = self.first + index, []
            else:
                since.append(self.first + index)
        return order

    def plan(self, items: Sequence[Item]) -> list[PlannedStep]:
        """The stored plan `items` describe (check `problems` first): ids as in the module
        docstring, dependencies and references as ids."""
        matches = self._matches(items)
        in_order = self._world_order(items)
        ids = [
            match["id"] if match is not None else self.ids_from + index
            for index, match in enumerate(matches)
        ]
        names = self._names(items)
        to_id = {number: ids[index] for number, index in names.items()}
        plan: list[PlannedStep] = []
        for index, (item, match) in enumerate(zip(items, matches, strict=True)):
            named, referred = self._waits_for(index, item)
            carried = [d for d in match["depends_on"] if d in self.done] if match else []
            listed = [*named, *sorted(referred), *in_order[index]]
            waits = [*carried, *(to_id.get(n, n) for n in listed)]
            step: PlannedStep = {
                "id": ids[index],
                "step": self._text(item),
                "depends_on": sorted(set(waits)),
            }
            if self.deferred(item):
                step["deferred"] = str(item.tool)
            elif item.tool is not None:
                step["tool"] = item.tool
                step["args"], step["step"] = renamed_call(item.tool, item.args or {}, to_id)
            elif item.tools is not None:
                step["tools"] = list(item.tools)
            elif match is not None and "tools" in match:
                step["tools"] = list(match["tools"])
            plan.append(step)
        return plan
