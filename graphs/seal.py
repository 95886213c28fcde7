"""Sealed plans (`Context.plan_integrity = "sealed"`): text a tool returns cannot add an action.

The first plan of a turn is written before the turn reads any result (on a follow-up, after
the earlier turn's: those count as read). It declares the actions the turn may take: the tools
of its tool steps and deferred steps, and for each text step the tools its executor may act
with (`tools`).
Later replans and executors may act only with declared tools: each call is checked where calls
run (`replan.graphs.durable_calls`), whatever offered or wrote it (a call recovered from text,
a tool the model was not offered). A call is held when its tool acts (`replan.tools.effects`)
and is not declared for its step, or when an argument its tool declares sensitive (who or what
the action reaches) may come from a tool's result: a reference to one, or any value written
after a result was read (the conservative rule), unless the user's own messages say that value
(`said_by_user`: a name, an address, a channel the user chose). A held call pauses in LangChain's
human-in-the-loop shape (approve, edit, reject or respond) or, under `sealed_calls="refuse"`,
fails saying why.

Each call learns its step's seal from the state its `ToolNode` runs on (`SEAL_KEY`): the tools
it may act with (`allowed`), the arguments that may come from a result (`tainted`, `"*"`
for all) and what the user wrote (`said`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypedDict

from langchain_core.messages import ToolMessage

from replan.graphs.graph_state import PlanExecuteState, PlannedStep, one_action_request
from replan.graphs.plan.provenance import said_by_user
from replan.graphs.plan.references import references
from replan.graphs.plan.tool_steps import WITHHELD
from replan.tools.effects import ToolEffects

SEAL_KEY = "seal"
"""Where a step's seal rides in the state of the `ToolNode` that runs its calls."""
ALL = "*"
"""`tainted` holding this: every argument may come from a result."""
SEAL_DECISIONS = ["approve", "edit", "reject", "respond"]
"""What a person may answer to a held call."""
NOT_DECLARED = "the turn's first plan did not declare `{tool}` for this step"
TAINTED = "`{arguments}` may come from a tool's result, and `{tool}` acts on it"
HELD = (
    "Held in a sealed run: {reason}. Approve to make the call, edit it, respond with its "
    "result, or reject it."
)
REJECTED = WITHHELD + ": a person rejected it in a sealed run ({reason})."
REFUSED = WITHHELD + ", the run is sealed and {reason}."


class Declared(TypedDict):
    """What a turn's first plan declares (keys of `PlanExecuteState`)."""

    declared_tools: list[str]
    declared_steps: list[int]


def declared(plan: Sequence[PlannedStep]) -> Declared:
    """What a turn's first plan declares: its tools (`declared_tools`) and its steps'
    ids (`declared_steps`)."""
    tools = {step["tool"] for step in plan if "tool" in step}
    tools.update(step["deferred"] for step in plan if "deferred" in step)
    tools.update(tool for step in plan for tool in step.get("tools", []))
    return {"declared_tools": sorted(tools), "declared_steps": [step["id"] for step in plan]}


def step_seal(
    state: PlanExecuteState, step: PlannedStep, dependencies: bool, said: Sequence[str]
) -> dict[str, Any]:
    """The seal of `step`: the tools it may act with (those the turn declared, for its step),
    the arguments that may come from a result (all of them for a step planned after results
    were read, or a text step given earlier results) and what the user wrote (`said`)."""
    tools = state.get("declared_tools", [])
    own = [step["tool"]] if "tool" in step else step.get("tools", [])
    after_results = bool(state.get("carried_steps")) or step["id"] not in state.get(
        "declared_steps", []
    )
    if "tool" in step and not after_results:
        args = step.get("args") or {}
        tainted = sorted(name for name, value in args.items() if references(value))
    else:
        tainted = [ALL] if after_results or dependencies else []
    return {"allowed": sorted(set(own) & set(tools)), "tainted": tainted, "said": list(said)}


def seal_of(state: Any) -> Mapping[str, Any] | None:
    """The seal a `ToolNode`'s state carries, None in an open run."""
    seal = state.get(SEAL_KEY) if isinstance(state, Mapping) else None
    return seal if isinstance(seal, Mapping) else None


def with_tools(seal: Mapping[str, Any], tools: Iterable[str]) -> dict[str, Any]:
    """`seal` also allowing `tools` (those that only change the run's own state)."""
    return {**seal, "allowed": sorted({*seal.get("allowed", []), *tools})}


def hold_reason(
    call: Mapping[str, Any], effects: ToolEffects, seal: Mapping[str, Any], read: bool
) -> str | None:
    """Why `call` is held under `seal` (`read`: its step read a tool's result before it), or
    None when it may be made."""
    tool = str(call.get("name"))
    if not effects.acts:
        return None
    if tool not in seal.get("allowed", []):
        return NOT_DECLARED.format(tool=tool)
    tainted = set(seal.get("tainted", []))
    args = call.get("args") or {}
    said = seal.get("said", [])
    hit = sorted(
        name
        for name in effects.sensitive
        if name in args
        and (read or ALL in tainted or name in tainted)
        and not said_by_user(args[name], said)
    )
    return TAINTED.format(arguments="`, `".join(hit), tool=tool) if hit else None


def held_request(call: Mapping[str, Any], reason: str) -> dict[str, Any]:
    """The interrupt value asking a person about a held call: a `HITLRequest`."""
    description = HELD.format(reason=reason)
    return one_action_request(
        str(call.get("name")), call.get("args") or {}, description, SEAL_DECISIONS
    )


def refused(call: Mapping[str, Any], reason: str) -> ToolMessage:
    """The result of a held call in a run that refuses them."""
    return ToolMessage(
        REFUSED.format(reason=reason),
        tool_call_id=str(call.get("id") or ""),
        name=str(call.get("name")),
        status="error",
    )
