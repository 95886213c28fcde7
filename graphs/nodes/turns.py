"""The nodes that open and close a turn of the conversation: `start_turn` saves the run's
settings (the `settings` channel: the one copy a resume, an approval and `replan show` read),
keeps the turn before in `turns` and clears what the new one writes; `reply` appends the turn's
answer (or its "not finished" report) to `messages` as an AI message, named for replan and
carrying the turn's token usage, so chat surfaces and parent graphs see the reply."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langchain_core.messages.ai import UsageMetadata
from langgraph.config import get_config
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph.runtime import get_runtime
from langgraph.types import Overwrite

from replan.graphs.context import Context, run_context
from replan.graphs.conversation import REPLY_NAME, objective_text
from replan.graphs.errors import InvalidInputError
from replan.graphs.graph_state import REPLY, PlanExecuteState, Turn
from replan.graphs.plan_stream import publish, tokens_of
from replan.state.usage import Tally, total_tally

NO_CHECKPOINTER = (
    "approve_plan pauses the run until someone answers, and a graph with no checkpointer cannot "
    "resume it: build it with build_plan_execute_graph(checkpointer=...) or run it where a "
    "server gives it one"
)


def _usage_metadata(tally: Tally) -> UsageMetadata:
    """A turn's tally as LangChain's usage metadata of a message."""
    return {
        "input_tokens": tally["input"],
        "output_tokens": tally["output"],
        "total_tokens": tally["input"] + tally["output"],
        "input_token_details": {"cache_read": tally["cached"]},
    }


def reply(state: PlanExecuteState) -> dict[str, Any]:
    """Append the turn's answer to the conversation (and publish it on the plan stream)."""
    usage = total_tally(state.get("usage"))
    message = AIMessage(
        content=state.get("response", ""),
        name=REPLY_NAME,
        usage_metadata=_usage_metadata(usage),
        response_metadata={"stop_reason": state.get("stop_reason", "")},
    )
    stopped = state.get("stop_reason", "")
    publish("answer", REPLY, text=message.text, stop_reason=stopped, tokens=tokens_of(usage))
    return {"messages": [message]}


class StartTurn:
    """The `start_turn` node, with the report that stands as the answer of a turn a new
    message cut short."""

    def __init__(self, superseded: str) -> None:
        self.superseded = superseded

    def __call__(self, state: PlanExecuteState) -> dict[str, Any]:
        """Open a turn, saving the run's settings first (`opened`); refuse a run that asks for
        plan approval on a graph with no checkpointer, which could never be resumed."""
        saved = state.get("settings")
        context = run_context(get_runtime(Context).context, saved)
        configurable = get_config().get("configurable") or {}
        if context.approve_plan and configurable.get(CONFIG_KEY_CHECKPOINTER) is None:
            raise InvalidInputError(NO_CHECKPOINTER)
        settings = context.settings()
        update = self.opened(state)
        return update if settings == saved else {**update, "settings": settings}

    def opened(self, state: PlanExecuteState) -> dict[str, Any]:
        """The update opening a turn. On a thread that holds one already, keep it in `turns`
        (one that had not ended is kept as `superseded`), offer its steps to the new turn's plans
        (`carried_steps`), and clear the plan, steps, answer and usage the new turn writes.
        When the conversation lacks the turn's answer (a thread saved before answers were
        messages, or a turn cut short), it is put before the new message."""
        if not (state.get("response") or state.get("plan") or state.get("executed_steps")):
            return {"carried_steps": []}  # a new thread: nothing before this turn
        messages = state.get("messages", [])
        ended = bool(state.get("response"))
        response = state.get("response", "") if ended else self.superseded
        update: dict[str, Any] = {}
        if len(messages) > 1 and not isinstance(messages[-2], AIMessage):
            newest = messages[-1]
            update["messages"] = [
                RemoveMessage(id=newest.id or ""),
                AIMessage(content=response, name=REPLY_NAME),
                HumanMessage(content=newest.content),
            ]
        objective = state.get("objective") or objective_text(messages[:-1])
        return {**update, **_cleared(objective, response, state, ended)}


def _cleared(objective: str, response: str, state: PlanExecuteState, ended: bool) -> dict[str, Any]:
    """The update keeping the turn before in `turns` and clearing what a turn writes."""
    turn: Turn = {
        "objective": objective,
        "response": response,
        "stop_reason": state.get("stop_reason", "") if ended else "superseded",
        "executed_steps": list(state.get("executed_steps", [])),
        "plan": list(state.get("plan", [])),
        "usage": state.get("usage") or {},
    }
    return {
        "turns": [turn],
        "carried_steps": turn["executed_steps"],
        "executed_steps": Overwrite([]),
        "usage": Overwrite({}),
        "plan": [],
        "response": "",
        "stop_reason": "",
        "iterations": 0,
        "todos": [],
    }
