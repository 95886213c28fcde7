"""How one run asks for decisions: the mode its context asks for and the fallbacks its state
records (`DecisionModes`).

A request the server refuses (an HTTP status of `REFUSAL_STATUSES`) is asked again in the next
modes of `DECISION_MODES`; once one is accepted, the refused modes are not asked again in this
run: the run's `decision_mode` state channel remembers it, and a `decision_fallback` event of
the plan stream (`replan.graphs.plan_stream`) says it. A mode the server accepts but does not
enforce is left for the model's mistakes in it, for the mode's `after_mistakes`, with the same
record (`give_up`).

What a run learns of its server is kept for the process too (`DecisionModes.talking_to`): a
later run on the same server and model (an OpenAI-compatible base URL and model name), asking
in the same mode, starts where the last one that left that mode ended, instead of paying again
for the requests that taught it (a served graph, or a benchmark, runs many threads on one
server). A refusal still moves such a run further on. Before its first request to a server,
a run asks what the server says of itself (`replan.graphs.model.servers`): on one known not to
enforce the run's mode, it starts in the mode it would have fallen back to (reason "known").
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import openai
from langchain_core.language_models import BaseChatModel

from replan.graphs.calls import Steps
from replan.graphs.context import Context, DecisionMode
from replan.graphs.errors import ModelUnavailableError
from replan.graphs.graph_state import (
    DecisionFallback,
    DecisionModeRecord,
    FallbackReason,
    PlanExecuteState,
    effective_mode,
    fallbacks_of,
)
from replan.graphs.model.decision_modes.registry import fallbacks_after, strategy
from replan.graphs.model.decision_modes.strategy import Request
from replan.graphs.model.servers import (
    Server,
    forget_owners,
    server_of,
    server_owner,
    unenforced_modes,
)
from replan.graphs.plan_stream import publish

REFUSAL_STATUSES = frozenset({400, 422, 500, 501})
"""HTTP statuses with which servers refuse a `tool_choice` or `response_format` they do not
support (llama-cpp-python: 500 with an empty message)."""


def refusal_status(error: ModelUnavailableError) -> int | None:
    """The HTTP status of a server's refusal behind `error`, or None for any other failure."""
    cause = error.__cause__
    if isinstance(cause, openai.APIStatusError) and cause.status_code in REFUSAL_STATUSES:
        return cause.status_code
    return None


_LEARNT: dict[tuple[Server, DecisionMode], DecisionModeRecord] = {}
"""The last record of a run that left its requested mode, by server and that mode."""


def forget_servers() -> None:
    """Forget what runs of this process learnt of their servers, and what the servers said."""
    _LEARNT.clear()
    forget_owners()


@dataclass
class DecisionModes:
    """How one run asks for decisions: the mode its context asks for, and the fallbacks its
    state records. `update()` is the state update a node returns to keep new fallbacks."""

    requested: DecisionMode = "tool_required"
    record: DecisionModeRecord | None = None
    changed: bool = False
    server: Server | None = None

    @classmethod
    def of_run(cls, context: Context, state: PlanExecuteState) -> DecisionModes:
        """The modes of the run whose context and state these are."""
        return cls(context.decision_mode, state.get("decision_mode"))

    def talking_to(self, model: BaseChatModel) -> Steps[None]:
        """Ask `model`'s server: a run that has not left its requested mode starts in the mode
        an earlier run of this process on that server, asking the same, was left in; else, on
        a server known not to enforce the mode (`replan.graphs.model.servers`), in the mode
        it would fall back to (module docstring). The record is this run's from then on."""
        self.server = server_of(model)
        if self.server is None or self.record is not None:
            return
        if (learnt := _LEARNT.get((self.server, self.requested))) is not None:
            self.record, self.changed = copy.deepcopy(learnt), True
            return
        owner = yield from server_owner(model, self.server)
        if self.mode in unenforced_modes(owner):
            self._leave(f"{self.mode} (its models' owner: {owner})", "known")

    def _changed_to(self, record: DecisionModeRecord) -> None:
        self.record, self.changed = record, True
        if self.server:
            _LEARNT[(self.server, self.requested)] = copy.deepcopy(record)

    @property
    def mode(self) -> DecisionMode:
        """The mode to ask in now."""
        return effective_mode(self.requested, self.record)

    def candidates(self) -> list[DecisionMode]:
        """The mode to ask in, then the modes to try if the server refuses it."""
        return fallbacks_after(self.mode)

    def fell_back(self, refusals: Sequence[tuple[Request, int]], to: DecisionMode) -> None:
        """Record that the server refused these requests and accepted mode `to`, and say so on
        the plan stream."""
        fallbacks = fallbacks_of(self.record)
        for request, status in refusals:
            fallback: DecisionFallback = {
                "refused": request.mode,
                "asked": request.asked,
                "status": status,
                "fallback": to,
                "reason": "refused",
            }
            fallbacks.append(fallback)
            publish("decision_fallback", fallback=dict(fallback))
        self._changed_to({"mode": to, "fallbacks": fallbacks})

    def give_up(self, request: Request, reason: FallbackReason = "mistakes") -> bool:
        """Leave the mode asked in now for the model's mistakes in it (`reason` "mistakes":
        its replies to `request` carried no decision; "unenforced": the server let a forced
        call come back as text), for its strategy's `after_mistakes` mode (skipping modes the
        server refused before); record and announce it. False when there is no mode to go to."""
        return self._leave(request.asked, reason)

    def _leave(self, asked: str, reason: FallbackReason) -> bool:
        """Leave the mode asked in now, for `reason`, as `give_up` says (`asked`: what its
        requests carry, or why the server is known not to enforce it)."""
        left = self.mode
        to = strategy(left).after_mistakes
        if to is None:
            return False
        fallback: DecisionFallback = {
            "refused": left,
            "asked": asked,
            "status": None,
            "fallback": to,
            "reason": reason,
        }
        fallbacks = [*fallbacks_of(self.record), fallback]
        mode = effective_mode(self.requested, {"mode": left, "fallbacks": fallbacks})
        self._changed_to({"mode": mode, "fallbacks": fallbacks})  # `to`, or past its refusal
        publish("decision_fallback", fallback=dict(fallback))
        return True

    def update(self) -> dict[str, Any]:
        """`{"decision_mode": record}` when this node fell back, else nothing."""
        return {"decision_mode": self.record} if self.changed and self.record else {}
