"""An executor's tool loop: the small graph (`act` → prebuilt `ToolNode` → `act` …) that carries
out one text step with the model and the run's tools.

The loop runs over its own `messages` and `tasks_context`, so the task tools see the state they
need and parallel tool calls of one model turn are handled by `ToolNode` (a call to an unknown tool
gets its error reply there, and so does a call of one of the run's own tools that raised, unless
`Context.tool_errors` says "raise": `replan.graphs.tool_errors`). A call whose arguments are not
valid JSON never reaches `ToolNode`: `act` answers it with an error `ToolMessage` so the model can
call again. Tool calls the model wrote as text are run like real ones
(`replan.graphs.model.text_calls`, with `Context.recover_text_calls`); a reply whose text looks
like a call that cannot be read (an unknown tool, broken JSON) is not taken as the step's result:
the model is told so and asked again. A reply with a call of the run's own tools whose value
comes from nowhere (a template's value, a result's text as an identifier, an id found in no
message or result: `replan.graphs.plan.provenance`) has none of its calls made: each gets a
reply saying why, once per value and step. Nor, once per step, is a report that says the step
failed or gives figures no tool or earlier result showed (`replan.graphs.nodes.report_check`).
The loop stops when the model answers in prose without tool calls, when its reply was cut off at
the token limit, or after `executor_max_steps` model calls; in the last two cases the step's
result says plainly that it is unfinished and shows what the model had written and the last tool
results.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.runnables import Runnable
from langgraph.graph import START, StateGraph

from replan.graphs.calls import Steps
from replan.graphs.context import (
    MAX_BOUND,
    Bounds,
    Context,
    DecisionMode,
    TaskToolsChoice,
)
from replan.graphs.graph_state import ACT, EXECUTOR, ExecutorState, StepStatus
from replan.graphs.model.client import resolve_model
from replan.graphs.model.decision_modes.json_reply import bind_json, json_value
from replan.graphs.model.decision_modes.registry import asks_json, strategy
from replan.graphs.model.offers import ToolOffer, ToolOffers
from replan.graphs.model.text_calls import text_call_problem
from replan.graphs.model.turn import ask_model, cut_off, with_distinct_call_ids
from replan.graphs.nodes.base import ModelNode
from replan.graphs.nodes.driver import dual_node
from replan.graphs.nodes.report_check import is_failure_report, reminder_problem, tool_to_force
from replan.graphs.plan.provenance import CALL_ADVICE, NOT_CALLED, Provenance
from replan.graphs.prompts import Prompts
from replan.graphs.tool_errors import tool_node
from replan.state.task_stores import TaskStore

PROGRESS_RESULTS = 3
"""How many of the last tool results an unfinished step's note shows."""
PROGRESS_CHARS = 500
"""How much of each of them it shows."""
INVALID_ARGUMENTS = (
    "Error: the arguments of this `{name}` call were not valid JSON, so it did not run. "
    "Call `{name}` again with the arguments as a JSON object."
)
CALL_HELD = f"{NOT_CALLED} another call of this reply is being corrected. Call it again with it."
UNSOURCED = "unsourced"
"""The artifact key of a call's reply that lists the values asked about."""
TOOLS: Literal["tools"] = "tools"
"""The loop's node that runs the requested tools."""


def invalid_call_replies(reply: AIMessage) -> list[ToolMessage]:
    """An error reply for each tool call of `reply` whose arguments did not parse."""
    return [
        ToolMessage(
            INVALID_ARGUMENTS.format(name=call.get("name") or "tool"),
            tool_call_id=call.get("id") or "",
            name=call.get("name") or "tool",
            status="error",
        )
        for call in reply.invalid_tool_calls
    ]


def unsourced_call_replies(
    reply: AIMessage, messages: Sequence[AnyMessage], offer: ToolOffer, known: str = ""
) -> list[ToolMessage]:
    """When a call of `reply` to one of the run's own tools has a value that comes from nowhere
    (`replan.graphs.plan.provenance`), a reply to each of its calls, none of them made; else
    none. The values are asked about once a step (they ride on the replies' artifacts)."""
    read: dict[int | str, str] = {
        f"result {i}": str(m.text) for i, m in enumerate(messages) if isinstance(m, ToolMessage)
    }
    read["the thread"] = known
    given = tuple(str(m.text) for m in messages if isinstance(m, HumanMessage))
    told = {v for m in messages if isinstance(m, ToolMessage) for v in _unsourced(m.artifact)}
    sources = Provenance(given, read, told)
    found = {
        call.get("id") or "": sources.problems(call["args"], offer.parameters[call["name"]])
        for call in reply.tool_calls
        if call["name"] in offer.own
    }
    if not any(found.values()):
        return []
    replies = []
    for call in reply.tool_calls:
        problems = found.get(call.get("id") or "") or []
        text = CALL_ADVICE.format(problems="; ".join(p for _, p in problems))
        replies.append(
            ToolMessage(
                text if problems else CALL_HELD,
                tool_call_id=call.get("id") or "",
                name=call["name"],
                status="error",
                artifact={UNSOURCED: [value for value, _ in problems]},
            )
        )
    return replies


def _unsourced(artifact: Any) -> list[str]:
    return list(artifact.get(UNSOURCED) or []) if isinstance(artifact, dict) else []


def answered(messages: Sequence[AnyMessage], reply: AIMessage) -> bool:
    """Whether every tool call of `reply`, the last model turn of `messages`, has its reply
    after it already (call ids may repeat across turns)."""
    after = messages[max(i for i, m in enumerate(messages) if m is reply) + 1 :]
    ids = {m.tool_call_id for m in after if isinstance(m, ToolMessage)}
    return all(call["id"] in ids for call in reply.tool_calls)


def corrected_mistakes(loop: ExecutorState) -> int:
    """How many of the loop's replies were corrected and asked again: those `act` answered
    with a correction, unless the loop ended on that correction (its budget spent or the reply
    cut off), which the model then never read."""
    unread = bool(loop["messages"]) and not isinstance(loop["messages"][-1], AIMessage)
    return loop.get("corrected_mistakes", 0) - unread


def last_reply(messages: Sequence[AnyMessage]) -> AIMessage | None:
    """The model's latest turn in `messages`."""
    return next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)


class ToolLoop(ModelNode):
    """The tool loop of each tool offer (`Context.task_tools`), compiled once, with what the
    executor is asked: a run uses the one its context chose, so its `ToolNode` runs exactly
    the tools the model was offered. `checkpointed` says the graph was built with a
    checkpointer: the loop then saves each turn at `durability="sync"`."""

    def __init__(
        self,
        model: BaseChatModel | None,
        offers: ToolOffers,
        prompts: Prompts,
        bounds: Bounds,
        task_store: TaskStore | None = None,
        *,
        checkpointed: bool = False,
    ) -> None:
        super().__init__(model, offers, prompts, bounds, task_store)
        self.checkpointed = checkpointed

    @functools.cached_property
    def instructions(self) -> dict[TaskToolsChoice, str]:
        """What the executor is asked, before its step's briefing, for each tool offer."""
        return {
            choice: self.prompts.executor.format(
                tools=offer.names,
                task_tools=self.prompts.executor_task_tools if offer.has_task_tools else "",
                computing=offer.computing_note(self.prompts.executor_computing),
            )
            for choice, offer in self.offers.items()
        }

    @functools.cached_property
    def loops(self) -> dict[TaskToolsChoice, Runnable[Any, Any]]:
        """The compiled tool loop for each tool offer (it runs exactly the offered tools)."""
        return {choice: self.compile(offer) for choice, offer in self.offers.items()}

    def for_run(self, context: Context) -> Runnable[Any, Any]:
        """The loop the run's context chose, run with that context."""
        return self.loops[self.offers.choice(context)].bind(context=context)

    def act(self, state: ExecutorState, context: Context) -> Steps[dict[str, Any]]:
        """One model turn over the conversation of this step, with an error reply for each
        call whose arguments are not valid JSON, a correction when its text looks like a
        tool call that could not be read, or a tool reminder (`reminder`); each counted once
        (see `corrected_mistakes`)."""
        offer = self.offer(context)
        model = resolve_model(self.model, context, context.executor_max_tokens)
        forced = state.get("forced_tool") or None
        conversation = [self.head(context), *state["messages"]]
        forced_as = state.get("forced_as", "tool_required")
        if forced and asks_json(forced_as):
            reply = yield from self.call_as_json(
                model, conversation, offer, forced, forced_as, context
            )
        else:
            chat = model.bind_tools(list(offer.specs), tool_choice=forced) if offer.specs else model
            reply = yield from ask_model(chat, conversation, context, offer.offered)
        corrections: list[AnyMessage] = [*invalid_call_replies(reply)]
        corrections += unsourced_call_replies(
            reply, state["messages"], offer, state.get("known", "")
        )
        if context.recover_text_calls and (problem := text_call_problem(reply, offer.offered)):
            tools = ", ".join(f"`{name}`" for name in sorted(offer.offered.names))
            corrections.append(
                HumanMessage(self.prompts.text_call_correction.format(problem=problem, tools=tools))
            )
        calls = state.get("model_calls", 0) + 1
        update: dict[str, Any] = {"model_calls": calls}
        if forced:
            update["forced_tool"] = ""  # forced for one turn only
        if not corrections and calls < self.budget(state):
            if reminder := self.reminder(state, reply, offer):
                corrections.append(HumanMessage(reminder))
                update["reminded"] = True
                step, builds_on = state.get("step", ""), state.get("builds_on", False)
                update["forced_tool"] = tool_to_force(offer, step, builds_on) or ""
        update["messages"] = [reply, *corrections]
        if corrections:  # one mistaken reply, however many of its calls were wrong
            update["corrected_mistakes"] = 1
        return update

    def call_as_json(
        self,
        model: BaseChatModel,
        conversation: Sequence[BaseMessage],
        offer: ToolOffer,
        tool: str,
        mode: DecisionMode,
        context: Context,
    ) -> Steps[AIMessage]:
        """Ask for a call of `tool` as a JSON object of its arguments, in the JSON decision
        `mode` the run asks its decisions in (a server that let a forced call come back as
        text enforces `response_format`, not `tool_choice`); a reply holding such an object
        becomes that tool call, any other stays as it is."""
        spec = next(spec for spec in offer.specs if spec["function"]["name"] == tool)
        form = strategy(mode).response_format(spec["function"]["parameters"], tool)
        assert form is not None  # `act` asks so only in a JSON mode
        chat = bind_json(model, form)
        note = HumanMessage(self.prompts.call_as_json.format(tool=f"`{tool}`"))
        reply = yield from ask_model(chat, [*conversation, note], context)
        args = json_value(reply.text)
        if isinstance(args, dict) and args.get("name") == tool:  # the call's own shape
            args = args.get("arguments", args.get("parameters"))
        if not isinstance(args, dict):
            return reply
        call = ToolCall(name=tool, args=args, id=f"call_{tool}", type="tool_call")
        return with_distinct_call_ids(
            reply.model_copy(update={"content": "", "tool_calls": [call]})
        )

    def reminder(self, state: ExecutorState, reply: AIMessage, offer: ToolOffer) -> str | None:
        """What the model is told when its final `reply` should not pass unchecked: the run has
        tools of its own, none of them was called in this step, no reminder was given yet, and
        the reply reports a failure or gives figures that nothing the step was shown or its
        tools answered holds. Figures are checked when the run has a computing tool (the sum
        belongs to it) or the step builds on no earlier result (a new figure can only be a
        look-up); a step that works figures out of earlier results with no tool to compute
        them is left to do so. None when the reply stands."""
        if state.get("reminded") or not offer.own or reply.tool_calls or cut_off(reply):
            return None
        own = set(offer.own)
        earlier = [m for m in state["messages"] if isinstance(m, AIMessage)]
        if any(call["name"] in own for m in earlier for call in m.tool_calls):
            return None
        figures = bool(offer.computing) or not state.get("builds_on", False)
        problem = reminder_problem(
            self.prompts,
            reply.text,
            [m.text for m in state["messages"] if not isinstance(m, AIMessage)],
            figures=figures,
        )
        if problem is None:
            return None
        tools = " or ".join(f"`{name}`" for name in offer.own)
        return self.prompts.tool_reminder.format(problem=problem, tools=tools)

    def budget(self, state: ExecutorState) -> int:
        """The most model calls the step may make (a loop saved before steps carried their
        budget has the graph's)."""
        return state.get("max_steps", self.bounds.executor_max_steps)

    def route(self, state: ExecutorState) -> Literal["tools", "act", "__end__"]:
        """Run the requested tools (or ask again after malformed calls or a correction), unless
        the model is done, its reply was cut off at the token limit, or the step's budget of
        model calls is spent."""
        reply = last_reply(state["messages"])
        if reply is None or cut_off(reply) or state["model_calls"] >= self.budget(state):
            return "__end__"
        if reply.tool_calls and not answered(state["messages"], reply):
            return TOOLS
        return "__end__" if isinstance(state["messages"][-1], AIMessage) else ACT

    def compile(self, offer: ToolOffer) -> Runnable[Any, Any]:
        """The compiled inner loop over the tools of `offer` (its own tools following the run's
        `Context.tool_errors`), with a recursion limit that fits the largest step budget."""
        builder = StateGraph(ExecutorState, context_schema=Context)
        builder.add_node(ACT, dual_node(self.act))
        builder.add_node(TOOLS, tool_node(offer.tools, offer.own))
        builder.add_edge(START, ACT)
        builder.add_conditional_edges(ACT, self.route)
        builder.add_edge(TOOLS, ACT)
        compiled = builder.compile(name=EXECUTOR).with_config(recursion_limit=2 * MAX_BOUND + 5)
        if not self.checkpointed:  # a server's saver: the run's durability (aegra.json: sync)
            return compiled
        # Each turn is saved before the next starts, whatever the run's durability: a step
        # resumed after a crash goes on from its last turn, and the calls that turn made are
        # found by their keys, not asked of the model again (durable_calls).
        return compiled.bind(durability="sync")

    def step_result(
        self, messages: Sequence[AnyMessage], max_steps: int, max_tokens: int
    ) -> tuple[str, StepStatus]:
        """The model's final answer (failed when it starts with FAILED_PREFIX, also inside a code
        fence, as small models write it), or an UNFINISHED note when that answer is blank, when
        its reply was cut off at `max_tokens` (with what it had written) or when the budget of
        `max_steps` model calls ran out (also when the last reply still called tools or was
        corrected)."""
        reply = messages[-1] if messages else None
        results = [m for m in messages if isinstance(m, ToolMessage)][-PROGRESS_RESULTS:]
        progress = "\n".join(f"- {m.name or 'tool'}: {m.text[:PROGRESS_CHARS]}" for m in results)
        progress = progress or "(no tool results)"
        if isinstance(reply, AIMessage) and cut_off(reply):
            note = self.prompts.step_cut_off.format(
                max_tokens=max_tokens, text=reply.text.strip() or "(nothing)", progress=progress
            )
            return note, "unfinished"
        if isinstance(reply, AIMessage) and not (reply.tool_calls or reply.invalid_tool_calls):
            if not reply.text.strip():
                return self.prompts.step_no_report.format(progress=progress), "unfinished"
            return reply.text, "failed" if is_failure_report(reply.text) else "done"
        note = self.prompts.step_unfinished.format(max_steps=max_steps, progress=progress)
        return note, "unfinished"
