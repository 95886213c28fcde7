"""The `answer` node: the final answer written in plain text, once the replanner responds.

With `Context.answer="plain"`, the replanner's `respond` decision only says that the
objective is met; the graph then goes from `replanner` to `answer`, which asks the model with a
plain request (no tools, no `response_format`) for the answer to the objective from the results
of the steps. Its tokens stream like any model turn and its usage is counted under `answer`. A
blank reply keeps the replanner's note, followed by the results.

With `answer="decision"` (the default, `DEFAULT_ANSWER`: on the real small model the plain
answer was no better, see docs/small-models.md, and it costs a request), and for turns that end
without meeting the objective (a `stop_reason`), the replanner goes straight to `reply`.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage

from replan.graphs.calls import Steps
from replan.graphs.context import Context
from replan.graphs.conversation import turn_objective
from replan.graphs.graph_state import PlanExecuteState
from replan.graphs.model.client import resolve_model
from replan.graphs.model.turn import ask_model
from replan.graphs.nodes.base import ModelNode
from replan.graphs.plan.views import format_executed_steps

ANSWER_RESULT_CHARS = 2000
"""How much of each step's result the answer's prompt shows."""


def writes_answer(state: PlanExecuteState, context: Context) -> bool:
    """Whether the run's response is still to be written by the `answer` node: the replanner
    responded (no stop reason) and the run writes its answer in plain text."""
    return (
        bool(state.get("response")) and not state.get("stop_reason") and context.answer == "plain"
    )


class Answerer(ModelNode):
    """The `answer` node, with the graph's model and prompts."""

    def answer(self, state: PlanExecuteState, context: Context) -> Steps[dict[str, Any]]:
        """Write the final answer from the objective and the steps' results (a plain request;
        the reply is bounded like a decision's)."""
        results = format_executed_steps(state.get("executed_steps", []), limit=ANSWER_RESULT_CHARS)
        task = self.prompts.answer_task.format(
            objective=turn_objective(state), executed_steps=results
        )
        model = resolve_model(self.model, context, context.decision_max_tokens)
        messages = [self.head(context), HumanMessage(f"{self.prompts.answer}\n\n{task}")]
        reply = yield from ask_model(model, messages, context)
        text = reply.text.strip()  # a reply run on to its token limit keeps what it wrote
        if not text:
            return {"response": f"{state.get('response', '')}\n\n{results}".strip()}
        return {"response": text}
