"""`tool_named`: one tool forced by name. With several decisions they come as one tool,
`decide`, whose arguments hold the fields of exactly one of them (llama-cpp-python, which
refuses `tool_choice: "required"`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import BaseModel

from replan.graphs.context import DecisionMode
from replan.graphs.conversation import with_note
from replan.graphs.model.decision_modes.strategy import (
    DecisionTool,
    ProbeSpec,
    Request,
    call_correction,
    decision_schema,
    named_request,
    one_call,
    read_fields,
)
from replan.graphs.model.text_calls import OfferedTools
from replan.graphs.prompts import Prompts

DECIDE_TOOL_NAME = "decide"
"""The one tool asked for when several decisions are offered."""


def decide_spec(tools: Sequence[DecisionTool], prompts: Prompts) -> dict[str, Any]:
    """The OpenAI function schema of the `decide` tool: the fields of every tool of `tools`,
    exactly one tool's to be given."""
    function = {
        "name": DECIDE_TOOL_NAME,
        "description": prompts.decide_tool,
        "parameters": decision_schema(tools),
    }
    return {"type": "function", "function": function}


class ToolNamed:
    """One tool forced by name (see the module docstring)."""

    name: DecisionMode = "tool_named"
    after_mistakes: DecisionMode | None = "json_schema"
    probes: tuple[ProbeSpec, ...] = (("named", 1), ("decide", 2))

    def request(
        self,
        model: BaseChatModel,
        messages: Sequence[BaseMessage],
        tools: Sequence[DecisionTool],
        prompts: Prompts,
    ) -> Request:
        if len(tools) == 1:
            return named_request(self.name, model, messages, tools[0], prompts)
        bound = model.bind_tools([decide_spec(tools, prompts)], tool_choice=DECIDE_TOOL_NAME)

        def read(reply: AIMessage) -> BaseModel:
            _, args, sent = one_call(reply, [DECIDE_TOOL_NAME])
            return read_fields(args, tools, sent)

        return Request(
            self.name,
            bound,
            with_note(messages, prompts.decide_note),
            f"a named tool_choice ('{DECIDE_TOOL_NAME}')",
            tools,
            OfferedTools.of([DECIDE_TOOL_NAME]),
            read,
            call_correction(prompts, f"`{DECIDE_TOOL_NAME}`"),
        )

    def response_format(self, schema: Mapping[str, Any], name: str) -> None:
        """None: this mode asks for tool calls, not for a JSON reply."""
        return None

    def sent(self, body: Mapping[str, Any]) -> bool:
        choice = body.get("tool_choice")
        return isinstance(choice, dict) and choice.get("function", {}).get("name") is not None


STRATEGY = ToolNamed()
