"""Tool calls made once: every call of a run's tools, in tool steps and in executor loops, runs
as a LangGraph task (`langgraph.func.task`), so a step resumed after a crash gets the results of
the calls it had finished instead of making them again (docs/persistence.md, "Actions run
once").

Each call has an idempotency key derived from the thread, the task that makes it (a step, or a
turn of its loop: stable across a resume) and its position in the model's reply; a tool reads
it with `idempotency_key()` while it runs. Before a call starts, its intent is written to the
run's store (`langgraph.store`, given by `langgraph dev`, Aegra and the CLI); a resumed call
whose intent is there but whose result is not was in flight when the run stopped. It is made
again, with the same key, only when its tool is read-only or safe to retry
(`replan.tools.effects`); otherwise the run pauses in LangChain's human-in-the-loop shape with
the call as the action (`approve` makes it again, `respond` gives its result, `reject` leaves it
unmade) or, under `Context.in_flight_calls = "fail"`, the call fails with one line saying so.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, cast

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp
from langgraph.func import task
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from replan.graphs.context import Context
from replan.graphs.graph_state import one_action_request
from replan.graphs.plan.tool_steps import RESULT_CHARS, WITHHELD, first_line
from replan.graphs.plan_stream import paused, publish
from replan.graphs.seal import (
    REJECTED,
    SEAL_DECISIONS,
    held_request,
    hold_reason,
    refused,
    seal_of,
)
from replan.tools.effects import ToolEffects, effects_by_name

Answer = ToolMessage | Command[Any]
Execute = Callable[[ToolCallRequest], Answer]
AExecute = Callable[[ToolCallRequest], Awaitable[Answer]]

CALL_TASK = "tool_call"
"""The name of the LangGraph task each tool call runs as."""
INTENTS = ("replan", "calls_started")
"""The store namespace of the intents: one item per call started, keyed by its idempotency key."""
IN_FLIGHT_DECISIONS = ["approve", "respond", "reject"]
"""What a person may answer to a call that was in flight when its run stopped."""
IN_FLIGHT = (
    "`{tool}` was being called when the run stopped; it may have taken effect, and it is not "
    "declared safe to retry. Approve to call it again (idempotency key {key}), respond with "
    "its result, or reject to leave it unmade."
)
NOT_REMADE = (
    WITHHELD + " again: `{tool}` was being called when the run stopped and may have taken "
    "effect, and it is not declared safe to retry{reason}."
)

_KEY: ContextVar[str | None] = ContextVar("replan_idempotency_key", default=None)


def idempotency_key() -> str | None:
    """The idempotency key of the tool call running now (the same when a call cut short by a
    crash is made again); None outside a replan tool call."""
    return _KEY.get()


def call_key(thread: str | None, task_id: str, position: int) -> str:
    """The idempotency key of the call at `position` of the task `task_id` of `thread`."""
    return f"{thread or 'no-thread'}:{task_id}:{position}"


def _calls_of(state: Any) -> Sequence[Mapping[str, Any]]:
    """The tool calls one `ToolNode` invocation runs, in the order the model wrote them."""
    if isinstance(state, Mapping) and state.get("messages"):
        last = next((m for m in reversed(state["messages"]) if isinstance(m, AIMessage)), None)
        return last.tool_calls if last is not None else []
    if isinstance(state, list):
        return [call for call in state if isinstance(call, Mapping)]
    return []


def _position(request: ToolCallRequest) -> tuple[int, tuple[str, ...]]:
    """Where the request's call stands among its invocation's calls, and their ids."""
    ids = tuple(str(call.get("id")) for call in _calls_of(request.state))
    call_id = str(request.tool_call.get("id"))
    return (ids.index(call_id) if call_id in ids else 0), ids


def _key(request: ToolCallRequest, position: int) -> str:
    info = request.runtime.execution_info
    thread = info.thread_id if info else None
    return call_key(thread, info.task_id if info else "no-task", position)


def in_flight_request(call: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The interrupt value asking a person about a call in flight at a crash: a `HITLRequest`
    with the call as its one action."""
    name = str(call.get("name"))
    description = IN_FLIGHT.format(tool=name, key=key)
    return one_action_request(name, call.get("args") or {}, description, IN_FLIGHT_DECISIONS)


def _decision(
    answer: Any, allowed: Sequence[str] = IN_FLIGHT_DECISIONS, about: str = "a call in flight"
) -> Mapping[str, Any]:
    """The one decision of an answer to a `HITLRequest` about one call (a bare decision is
    taken too)."""
    if isinstance(answer, Mapping) and isinstance(answer.get("decisions"), list):
        decisions = answer["decisions"]
        answer = decisions[0] if decisions else {}
    if isinstance(answer, Mapping) and answer.get("type") in allowed:
        return answer
    raise ValueError(f"an answer to {about} takes one decision of {list(allowed)}: got {answer!r}")


def _sealed(request: ToolCallRequest, effects: ToolEffects) -> ToolCallRequest | ToolMessage:
    """`request` as it may go on in a sealed run (edited by a person, maybe), or the held
    call's result (`replan.graphs.seal`); `request` itself in an open run."""
    seal = seal_of(request.state)
    if seal is None:
        return request
    call = request.tool_call
    messages = request.state.get("messages") or [] if isinstance(request.state, Mapping) else []
    read = any(isinstance(message, ToolMessage) for message in messages)
    reason = hold_reason(call, effects, seal, read)
    if reason is None:
        return request
    context = request.runtime.context
    if isinstance(context, Context) and context.sealed_calls == "refuse":
        return refused(call, reason)
    answer = paused(held_request(call, reason))
    decision = _decision(answer, SEAL_DECISIONS, "a held call")
    if decision["type"] == "respond":
        return ToolMessage(
            str(decision.get("message") or ""), tool_call_id=call["id"], name=call["name"]
        )
    if decision["type"] == "reject":
        text = REJECTED.format(reason=reason)
        return ToolMessage(text, tool_call_id=call["id"], name=call["name"], status="error")
    if decision["type"] == "edit":
        edited = decision.get("edited_action") or {}
        return request.override(tool_call={**call, "args": dict(edited.get("args") or {})})
    return request


def _announce_call(request: ToolCallRequest) -> None:
    call = request.tool_call
    publish("tool_call", call_id=call["id"], name=call["name"], args=call.get("args") or {})


def _announce_result(request: ToolCallRequest, answer: Answer) -> Answer:
    """`answer`, once its `tool_result` event is published (a `Command` a tool returned is
    shown by the message it carries, if any)."""
    call = request.tool_call
    message = answer if isinstance(answer, ToolMessage) else _message_of(answer)
    text = first_line(message.text, RESULT_CHARS) if message is not None else ""
    error = message is not None and message.status == "error"
    publish("tool_result", call_id=call["id"], name=call["name"], summary=text, error=error)
    return answer


def _message_of(command: Command[Any]) -> ToolMessage | None:
    update = command.update if isinstance(command.update, Mapping) else {}
    found = [m for m in update.get("messages") or [] if isinstance(m, ToolMessage)]
    return found[-1] if found else None


def _unmade(request: ToolCallRequest, reason: str = "") -> ToolMessage:
    call = request.tool_call
    text = NOT_REMADE.format(tool=call["name"], reason=f": {reason}" if reason else "")
    return ToolMessage(text, tool_call_id=call["id"], name=call["name"], status="error")


def _settle(request: ToolCallRequest, key: str) -> ToolMessage | None:
    """For a call that was in flight and may not simply be made again: its result when it is
    not made again (failed under "fail", a person's response or rejection), None when a
    person approved making it again."""
    context = request.runtime.context
    if isinstance(context, Context) and context.in_flight_calls == "fail":
        return _unmade(request)
    decision = _decision(paused(in_flight_request(request.tool_call, key)))
    call = request.tool_call
    if decision["type"] == "respond":
        text = str(decision.get("message") or "")
        return ToolMessage(text, tool_call_id=call["id"], name=call["name"])
    if decision["type"] == "reject":
        return _unmade(request, str(decision.get("message") or "a person declined"))
    return None


class DurableCalls:
    """`ToolNode` wrappers making each call a LangGraph task with an idempotency key and an
    intent (see the module docstring); `inner` wraps the call itself (error reporting)."""

    def __init__(
        self,
        effects: Mapping[str, ToolEffects],
        inner: Callable[[ToolCallRequest, Execute], Answer],
        ainner: Callable[[ToolCallRequest, AExecute], Awaitable[Answer]],
    ) -> None:
        self.effects = effects
        self.inner, self.ainner = inner, ainner
        self.turns: dict[tuple[str, ...], _Turn] = {}
        self.lock = threading.Lock()
        # One task name for sync and async runs: a run resumed the other way finds its calls.
        self.call: Any = task(name=CALL_TASK)(cast(Any, self._call))
        self.acall: Any = task(name=CALL_TASK)(cast(Any, self._acall))

    def may_repeat(self, tool: str) -> bool:
        return self.effects.get(tool, ToolEffects()).may_repeat

    def _call(self, request: ToolCallRequest, execute: Execute, key: str) -> Answer:
        sealed = _sealed(request, self.effects.get(request.tool_call["name"], ToolEffects()))
        if isinstance(sealed, ToolMessage):
            return sealed
        request, store = sealed, request.runtime.store
        if store is not None:
            started = store.get(INTENTS, key)
            if started is not None and not self.may_repeat(request.tool_call["name"]):
                if (settled := _settle(request, key)) is not None:
                    return settled
            store.put(INTENTS, key, _intent(request))
        token = _KEY.set(key)
        try:
            _announce_call(request)
            return _announce_result(request, self.inner(request, execute))
        except GraphBubbleUp:  # the tool paused itself (`interrupt`): it runs again on resume
            if store is not None:
                store.delete(INTENTS, key)
            raise
        finally:
            _KEY.reset(token)

    async def _acall(self, request: ToolCallRequest, execute: AExecute, key: str) -> Answer:
        sealed = _sealed(request, self.effects.get(request.tool_call["name"], ToolEffects()))
        if isinstance(sealed, ToolMessage):
            return sealed
        request, store = sealed, request.runtime.store
        if store is not None:
            started = await store.aget(INTENTS, key)
            if started is not None and not self.may_repeat(request.tool_call["name"]):
                if (settled := _settle(request, key)) is not None:
                    return settled
            await store.aput(INTENTS, key, _intent(request))
        token = _KEY.set(key)
        try:
            _announce_call(request)
            return _announce_result(request, await self.ainner(request, execute))
        except GraphBubbleUp:  # the tool paused itself (`interrupt`): it runs again on resume
            if store is not None:
                await store.adelete(INTENTS, key)
            raise
        finally:
            _KEY.reset(token)

    def wrap(self, request: ToolCallRequest, execute: Execute) -> Answer:
        position, ids = _position(request)
        key = _key(request, position)
        with self._turn(ids).in_order(position):
            try:
                future = self.call(request, execute, key)
            except (RuntimeError, KeyError):  # not inside a LangGraph run: no task to make
                return self._call(request, execute, key)
        return cast(Answer, future.result())

    async def awrap(self, request: ToolCallRequest, execute: AExecute) -> Answer:
        # `ToolNode` starts its calls with `asyncio.gather`, in order, and nothing is awaited
        # before the task is made: positions and task order agree without a gate.
        position, _ = _position(request)
        key = _key(request, position)
        try:
            future = self.acall(request, execute, key)
        except (RuntimeError, KeyError):  # not inside a LangGraph run: no task to make
            return await self._acall(request, execute, key)
        return cast(Answer, await future)

    def _turn(self, ids: tuple[str, ...]) -> _Turn:
        with self.lock:
            return self.turns.setdefault(ids, _Turn(len(ids), lambda: self.turns.pop(ids, None)))


def _run(request: ToolCallRequest, execute: Execute) -> Answer:
    return execute(request)


async def _arun(request: ToolCallRequest, execute: AExecute) -> Answer:
    return await execute(request)


def durable_tool_node(
    tools: Sequence[BaseTool],
    inner: Callable[[ToolCallRequest, Execute], Answer] = _run,
    ainner: Callable[[ToolCallRequest, AExecute], Awaitable[Answer]] = _arun,
    *,
    name: str = "tools",
) -> ToolNode:
    """A `ToolNode` over `tools` whose calls are made once (`DurableCalls`), each through
    `inner` (sync runs) or `ainner` (async runs)."""
    durable = DurableCalls(effects_by_name(tools), inner, ainner)
    return ToolNode(
        list(tools), name=name, wrap_tool_call=durable.wrap, awrap_tool_call=durable.awrap
    )


def _intent(request: ToolCallRequest) -> dict[str, Any]:
    call = request.tool_call
    return {"tool": call["name"], "args": call.get("args") or {}}


class _Turn:
    """The calls of one `ToolNode` invocation made as tasks in the order the model wrote them
    (LangGraph numbers a node's tasks in the order they are made, and `ToolNode` runs sync
    calls in threads that race): each waits for the one before it."""

    def __init__(self, count: int, done: Callable[[], object]) -> None:
        self.count, self.done = max(count, 1), done
        self.next = 0
        self.ready = threading.Condition()

    @contextmanager
    def in_order(self, position: int) -> Iterator[None]:
        """Hold the call at `position` until the calls before it have made their tasks."""
        with self.ready:
            self.ready.wait_for(lambda: self.next >= position)
        try:
            yield
        finally:
            with self.ready:
                self.next = max(self.next, position + 1)
                self.ready.notify_all()
                if self.next >= self.count:
                    self.done()
