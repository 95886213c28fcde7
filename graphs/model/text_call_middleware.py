"""`TextCallRecoveryMiddleware`: tool calls written as text, read back in any `create_agent` agent.

Small local models often write their tool calls in the reply's text (a ```json fence, a bare
JSON object), which some servers return as text with no `tool_calls`; a plain
`langchain.agents.create_agent` agent then takes the call for its answer and never runs a tool.
This middleware reads such a reply with replan's own parser (`replan.graphs.model.text_calls`)
after every model call, against the tools offered to that call, so the agent runs the calls as
if the server had parsed them. It changes nothing the model is sent.

Needs the optional `langchain` package (`pip install "replan[agents]"`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import BaseTool

import replan.tools.agent_middleware_api as agents
from replan.graphs.model.text_calls import OfferedTools, recover_text_calls


class TextCallRecoveryMiddleware(agents.AgentMiddleware[agents.AgentState[Any], Any, Any]):
    """Turns tool calls a model wrote as text into real tool calls, for
    `create_agent(middleware=[...])`.

    A reply with no tool calls whose text holds calls of the tools offered to that model call,
    written unambiguously (see `replan.graphs.model.text_calls`), becomes a reply with those
    `tool_calls`, its content the prose around them; `recovered_calls(message)` says how many
    were read. Anything else (a tool not offered, JSON that does not parse, a call inside a
    sentence, a reply with a structured response) is left as it was. Only the agent's own tools
    count as offered (provider tools given as dicts run on the provider's side), as the request
    reaches this middleware: list it after any middleware that changes the tools offered.
    """

    def wrap_model_call(
        self,
        request: agents.ModelRequest[Any],
        handler: Callable[[agents.ModelRequest[Any]], agents.ModelResponse[Any]],
    ) -> agents.ModelCallResult[Any]:
        """Read the calls written in the text of this model call's reply."""
        return _recovered(request, handler(request))

    async def awrap_model_call(
        self,
        request: agents.ModelRequest[Any],
        handler: Callable[[agents.ModelRequest[Any]], Awaitable[agents.ModelResponse[Any]]],
    ) -> agents.ModelCallResult[Any]:
        """Read the calls written in the text of this model call's reply."""
        return _recovered(request, await handler(request))


def _recovered(
    request: agents.ModelRequest[Any], response: agents.ModelResponse[Any]
) -> agents.ModelResponse[Any]:
    """`response` with the calls written in its replies' text made real, when there are any."""
    if response.structured_response is not None:
        return response
    offered = OfferedTools.of(tool.name for tool in request.tools if isinstance(tool, BaseTool))
    return replace(response, result=[_with_calls(message, offered) for message in response.result])


def _with_calls(message: BaseMessage, offered: OfferedTools) -> BaseMessage:
    if not isinstance(message, AIMessage):
        return message
    return recover_text_calls(message, offered) or message
