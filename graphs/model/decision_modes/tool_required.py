"""`tool_required`: the decision tools, with `tool_choice` forcing a call: the tool's name when
only one is offered, else "required" (OpenAI, vLLM, llama.cpp's llama-server)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from replan.graphs.context import DecisionMode
from replan.graphs.model.decision_modes.strategy import (
    DecisionTool,
    ProbeSpec,
    Request,
    call_correction,
    named_request,
    read_tool_call,
)
from replan.graphs.model.text_calls import OfferedTools
from replan.graphs.prompts import Prompts


class ToolRequired:
    """Forced tool calls (see the module docstring)."""

    name: DecisionMode = "tool_required"
    after_mistakes: DecisionMode | None = "json_schema"
    probes: tuple[ProbeSpec, ...] = (("named", 1), ("required", 2))

    def request(
        self,
        model: BaseChatModel,
        messages: Sequence[BaseMessage],
        tools: Sequence[DecisionTool],
        prompts: Prompts,
    ) -> Request:
        if len(tools) == 1:
            return named_request(self.name, model, messages, tools[0], prompts)
        bound = model.bind_tools([tool.spec() for tool in tools], tool_choice="any")
        names = [tool.name for tool in tools]
        return Request(
            self.name,
            bound,
            list(messages),
            "tool_choice 'required'",
            tools,
            OfferedTools.of(names),
            lambda reply: read_tool_call(reply, tools),
            call_correction(prompts, " or ".join(f"`{name}`" for name in names)),
        )

    def response_format(self, schema: Mapping[str, Any], name: str) -> None:
        """None: this mode asks for tool calls, not for a JSON reply."""
        return None

    def sent(self, body: Mapping[str, Any]) -> bool:
        return body.get("tool_choice") == "required"


STRATEGY = ToolRequired()
