"""TextCallRecoveryMiddleware in a real `langchain.agents.create_agent` agent, on replies as a
small local model writes them (tool calls as a ```json fence or a bare JSON object in the
text, which the server returns as the answer): the tool runs with the arguments written, and
nothing else is read as a call."""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest, ModelResponse, wrap_model_call
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool, tool

from replan import TextCallRecoveryMiddleware
from replan.graphs.model.text_calls import recovered_calls
from tests.support.fake_models import FakeChatModel, text

MIDDLEWARE_MODULE = "replan.graphs.model.text_call_middleware"
FENCED = 'I will count them.\n```json\n{"name": "word_count", "arguments": {"text": "a b c"}}\n```'
BARE = '{"name": "word_count", "arguments": {"text": "a b c"}}'
UNKNOWN = '```json\n{"name": "delete_everything", "arguments": {}}\n```'
ANSWER = "There are 3 words."


def counting_tool(ran: list[dict[str, Any]]) -> BaseTool:
    """`word_count`, recording the arguments of every call it runs in `ran`."""

    @tool
    def word_count(text: str) -> int:
        """How many words `text` has."""
        ran.append({"text": text})
        return len(text.split())

    return word_count


def run_agent(replies: list[AIMessage], middleware: list[Any], mode: str = "sync") -> Any:
    """An agent with `word_count` and `middleware` answering with `replies`: its final state,
    the calls the tool ran and the model's recorded requests."""
    ran: list[dict[str, Any]] = []
    model = FakeChatModel(executor=list(replies))
    agent = create_agent(model, tools=[counting_tool(ran)], middleware=middleware)
    request = {"messages": [("user", "How many words are in 'a b c'?")]}
    result = agent.invoke(request) if mode == "sync" else asyncio.run(agent.ainvoke(request))
    return result, ran, model.requests


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("written", [FENCED, BARE], ids=["fenced", "bare"])
def test_a_call_written_as_text_runs_and_the_agent_finishes(written: str, mode: str) -> None:
    result, ran, requests = run_agent(
        [text(written), text(ANSWER)], [TextCallRecoveryMiddleware()], mode
    )

    assert ran == [{"text": "a b c"}]
    _, call, answer, final = result["messages"]
    assert [(c["name"], c["args"]) for c in call.tool_calls] == [("word_count", {"text": "a b c"})]
    assert recovered_calls(call) == 1
    assert call.content == ("I will count them." if written == FENCED else "")
    assert (answer.type, answer.content, answer.tool_call_id) == (
        "tool",
        "3",
        call.tool_calls[0]["id"],
    )
    assert final.content == ANSWER and not final.tool_calls
    assert len(requests) == 2 and requests[0].tools == ["word_count"]


def test_without_the_middleware_the_written_call_is_the_agents_answer() -> None:
    result, ran, requests = run_agent([text(FENCED), text(ANSWER)], [])

    assert ran == [] and len(requests) == 1
    assert result["messages"][-1].content == FENCED and not result["messages"][-1].tool_calls


def test_a_call_of_a_tool_not_offered_stays_the_answer() -> None:
    result, ran, _ = run_agent([text(UNKNOWN)], [TextCallRecoveryMiddleware()])

    assert ran == []
    final = result["messages"][-1]
    assert final.content == UNKNOWN and not final.tool_calls and recovered_calls(final) == 0


def test_only_the_tools_offered_to_that_model_call_count() -> None:
    """A middleware listed before it (so wrapping it) offers the model no tool this time: the
    agent's own `word_count`, written as text, is then not a call."""

    @wrap_model_call
    def offer_nothing(
        request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelResponse[Any]:
        return handler(request.override(tools=[]))

    result, ran, requests = run_agent([text(FENCED)], [offer_nothing, TextCallRecoveryMiddleware()])

    assert ran == [] and requests[0].tools == []
    assert result["messages"][-1].content == FENCED


def test_without_langchain_the_import_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "langchain.agents.middleware", None)  # blocks the import
    monkeypatch.delitem(sys.modules, MIDDLEWARE_MODULE)
    monkeypatch.delitem(sys.modules, "replan.tools.agent_middleware_api", raising=False)
    with pytest.raises(ImportError, match=r'pip install "replan\[agents\]"'):
        importlib.import_module(MIDDLEWARE_MODULE)
