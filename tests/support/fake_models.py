"""An in-process fake chat model for graph tests: scripted replies per role, recorded requests.

The role of each call is read from the tools it was bound with, as the plan–execute graph binds
them: the planner forces `plan`, the replanner offers `plan` and `respond`, the executor offers
anything else; the plain-text answer (`answer`) is read from its system prompt. Unless scripted,
the answer repeats the last `respond` decision's response.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.messages.tool import invalid_tool_call
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from replan.graphs.context import DEFAULT_ANSWER
from replan.graphs.prompts import DEFAULT_PROMPTS
from replan.testing.requests import ANSWER_ASKS, UNMADE_CALLS_ASKS

ANSWER_CALLS = int(DEFAULT_ANSWER == "plain")
"""Model calls the plain-text answer adds to a run that responds, with the default settings."""

_ids = itertools.count(1)

Mode = Literal["sync", "async"]
both_modes = pytest.mark.parametrize("mode", ["sync", "async"])
"""Run a test through `invoke`/`stream` and through `ainvoke`/`astream` (its `mode` argument)."""


def text(content: str) -> AIMessage:
    """A plain answer without tool calls."""
    return AIMessage(content=content)


def calls(*named_args: tuple[str, dict[str, Any]]) -> AIMessage:
    """One model turn calling several tools, in order."""
    return AIMessage(
        content="",
        tool_calls=[
            {"name": name, "args": args, "id": f"call_{next(_ids)}", "type": "tool_call"}
            for name, args in named_args
        ],
    )


def call(name: str, **args: Any) -> AIMessage:
    """One model turn calling one tool."""
    return calls((name, args))


def plan(*steps: str) -> AIMessage:
    """A `plan` decision."""
    return call("plan", steps=list(steps))


def respond(response: str) -> AIMessage:
    """A `respond` decision."""
    return call("respond", response=response)


def malformed(name: str, raw_args: str) -> AIMessage:
    """A tool call whose arguments are not valid JSON (as a provider would report it)."""
    bad = invalid_tool_call(name=name, args=raw_args, id=f"call_{next(_ids)}", error="bad JSON")
    return AIMessage(content="", invalid_tool_calls=[bad])


@dataclass(frozen=True)
class Request:
    """One call the graph made: its role, prompt messages, offered tool names and tool_choice."""

    role: str
    messages: list[BaseMessage]
    tools: list[str]
    tool_choice: Any

    @property
    def prompt(self) -> str:
        """All message texts joined, for assertions on what the model was shown."""
        return "\n".join(str(m.content) for m in self.messages)


Reply = AIMessage | Callable[[Request], AIMessage]


class FakeChatModel(BaseChatModel):
    """Answers each role from its own queue; `requests` records every call."""

    planner: list[Any] = Field(default_factory=list)  # Reply items; Any keeps callables as is
    executor: list[Any] = Field(default_factory=list)
    replanner: list[Any] = Field(default_factory=list)
    answer: list[Any] = Field(default_factory=list)
    requests: list[Request] = Field(default_factory=list)
    last_response: str = ""
    """The response of the last `respond` decision (the answer, unless one is scripted)."""

    @property
    def _llm_type(self) -> str:
        return "fake-plan-execute"

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools the way OpenAI-style models do, keeping the choice for inspection."""
        specs = [convert_to_openai_tool(tool) for tool in tools]
        return self.bind(tools=specs, tool_choice=tool_choice, **kwargs)

    def role_of(
        self, tools: list[str], tool_choice: Any, messages: Sequence[BaseMessage] = ()
    ) -> str:
        """planner, replanner or executor, from the bound tools; answer, from the prompt."""
        asked = next((m for m in messages if isinstance(m, HumanMessage)), None)
        last = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
        if asked is not None and asked.text.startswith(ANSWER_ASKS):
            return "answer"
        if last is not None and last.text.endswith(DEFAULT_PROMPTS.answer_direct):
            return "answer"
        if any(m.text.startswith(UNMADE_CALLS_ASKS) for m in messages if m.type == "human"):
            return "replanner"  # its plan-only request after a response leaving calls unmade
        if tool_choice == "plan":
            return "planner"
        return "replanner" if {"plan", "respond"} <= set(tools) else "executor"

    def requests_of(self, role: str) -> list[Request]:
        """The recorded requests of one role."""
        return [r for r in self.requests if r.role == role]

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        tools = [spec["function"]["name"] for spec in kwargs.get("tools") or []]
        tool_choice = kwargs.get("tool_choice")
        role = self.role_of(tools, tool_choice, messages)
        request = Request(role, list(messages), tools, tool_choice)
        self.requests.append(request)
        queue: list[Reply] = getattr(self, request.role)
        if not queue and role == "answer":
            queue = [text(self.last_response)]
        if not queue:
            raise AssertionError(f"the fake model's {request.role} script ran out")
        reply = queue.pop(0)
        message = reply(request) if callable(reply) else reply
        for call in message.tool_calls:
            if call["name"] == "respond":
                self.last_response = str(call["args"].get("response", ""))
        return ChatResult(generations=[ChatGeneration(message=message.model_copy(deep=True))])


def _graph_input(objective: str | Any) -> Any:
    """A str is the user's objective; anything else (None, a `Command`) is the input itself."""
    return {"messages": [("user", objective)]} if isinstance(objective, str) else objective


def run(graph: Any, objective: str | Any, mode: Mode = "async", **kwargs: Any) -> dict[str, Any]:
    """Run a compiled graph with `invoke` (sync) or `ainvoke` on its own event loop (async)."""
    graph_input = _graph_input(objective)
    if mode == "sync":
        result: dict[str, Any] = graph.invoke(graph_input, **kwargs)
    else:
        result = asyncio.run(graph.ainvoke(graph_input, **kwargs))
    return result


def stream(graph: Any, objective: str | Any, mode: Mode, **kwargs: Any) -> list[Any]:
    """Everything `stream` (sync) or `astream` (async) yields for one run."""
    graph_input = _graph_input(objective)
    if mode == "sync":
        return list(graph.stream(graph_input, **kwargs))

    async def collect() -> list[Any]:
        return [chunk async for chunk in graph.astream(graph_input, **kwargs)]

    return asyncio.run(collect())
