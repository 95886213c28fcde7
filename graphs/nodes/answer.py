"""The `answer` node: a final answer written in plain text (a request with no tools and no
`response_format`, whose tokens stream like any model turn, counted under `answer`).

It writes the answer of a turn

- that needs nothing carried out: the run has no tools at all, or the planner responded
  instead of planning with `Context.answer="plain"`. The model answers the conversation, as
  one plain request to it would (`direct_messages`), told to do every part of the request;
- whose replanner responded with `answer="plain"`: its `respond` decision only says that the
  objective is met, and the answer is written from the objective and the steps' results;
- that stopped after carrying out steps without meeting its objective (`STOPS_ANSWERED`): the
  answer gives what the results allow and says plainly what could not be done, after the first
  paragraph of the stop's report (why the run stopped). If that request fails or comes back
  blank, the stop's report stands.

With `answer="decision"` (the default, `DEFAULT_ANSWER`: on the real small model the plain
answer was no better, and it costs a request) a respond decision is the answer itself and the
turn goes straight to `reply`.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

from replan.graphs.calls import Steps
from replan.graphs.context import Context
from replan.graphs.conversation import turn_objective, with_earlier_results, with_note
from replan.graphs.errors import ModelUnavailableError
from replan.graphs.graph_state import PlanExecuteState, StopReason
from replan.graphs.model.client import resolve_model
from replan.graphs.model.turn import ask_model
from replan.graphs.nodes.base import ModelNode
from replan.graphs.plan.views import REPLANNER_RESULT_CHARS, format_executed_steps

ANSWER_RESULT_CHARS = 2000
"""How much of each step's result the answer's prompt shows."""
STOPS_ANSWERED: frozenset[StopReason] = frozenset({"no_progress", "max_iterations", "no_decision"})
"""The stops whose turn, when it carried out steps, gets an answer written from its results."""


def writes_answer(state: PlanExecuteState, context: Context) -> bool:
    """Whether the turn's answer is still to be written by the `answer` node: nothing is to be
    carried out (no plan, no response), the planner or replanner responded with a note
    (`answer="plain"`), or the turn stopped short after carrying out steps."""
    stop = state.get("stop_reason", "")
    if stop:
        return stop in STOPS_ANSWERED and bool(state.get("executed_steps"))
    if not state.get("response"):
        return not state.get("plan")
    return context.answer == "plain"


def direct_messages(state: PlanExecuteState) -> list[BaseMessage]:
    """The conversation as a turn that carried out nothing answers it: its messages, with the
    results of the turn before after its answer (as the planner was shown them)."""
    carried = state.get("carried_steps", [])
    earlier = format_executed_steps(carried, limit=REPLANNER_RESULT_CHARS) if carried else ""
    return with_earlier_results(state["messages"], earlier)


class Answerer(ModelNode):
    """The `answer` node, with the graph's model and prompts."""

    def answer(self, state: PlanExecuteState, context: Context) -> Steps[dict[str, Any]]:
        """Write the turn's answer (see the module docstring); the reply is bounded like a
        decision's."""
        model = resolve_model(self.model, context, context.decision_max_tokens)
        done = state.get("executed_steps", [])
        stop = state.get("stop_reason", "")
        if not done:
            direct = with_note(direct_messages(state), self.prompts.answer_direct)
            reply = yield from ask_model(model, [self.head(context), *direct], context)
            return {"response": reply.text.strip() or state.get("response", "")}
        results = format_executed_steps(done, limit=ANSWER_RESULT_CHARS)
        task = self.prompts.answer_task.format(
            objective=turn_objective(state), executed_steps=results
        )
        asked = self.prompts.answer_stopped if stop else self.prompts.answer
        messages = [self.head(context), HumanMessage(f"{asked}\n\n{task}")]
        try:
            reply = yield from ask_model(model, messages, context)
        except ModelUnavailableError:
            if not stop:
                raise
            return {}  # the stop's report stands
        text = reply.text.strip()  # a reply run on to its token limit keeps what it wrote
        if stop:  # the report's first paragraph says why the run stopped
            why = state.get("response", "").split("\n\n")[0]
            return {"response": f"{why}\n\n{text}"} if text else {}
        if not text:
            return {"response": f"{state.get('response', '')}\n\n{results}".strip()}
        return {"response": text}
