"""`json_schema`: no tools; `response_format` with the JSON schema of the decision's fields
(llama-server and Ollama, which ignore `tool_choice` but enforce a schema)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from replan.graphs.context import DecisionMode
from replan.graphs.model.decision_modes.json_reply import json_request
from replan.graphs.model.decision_modes.strategy import (
    DecisionTool,
    ProbeSpec,
    Request,
    decision_schema,
)
from replan.graphs.prompts import Prompts


class JsonSchema:
    """A JSON reply under a schema (see the module docstring)."""

    name: DecisionMode = "json_schema"
    after_mistakes: DecisionMode | None = "json_object"
    probes: tuple[ProbeSpec, ...] = (("json_schema", 2),)

    def request(
        self,
        model: BaseChatModel,
        messages: Sequence[BaseMessage],
        tools: Sequence[DecisionTool],
        prompts: Prompts,
    ) -> Request:
        form = self.response_format(decision_schema(tools), "decision")
        return json_request(self.name, form, model, messages, tools, prompts)

    def response_format(self, schema: Mapping[str, Any], name: str) -> dict[str, Any]:
        """OpenAI's `response_format` asking for one JSON object of `schema` (`name`: what it
        holds)."""
        return {"type": "json_schema", "json_schema": {"name": name, "schema": dict(schema)}}

    def sent(self, body: Mapping[str, Any]) -> bool:
        form = body.get("response_format")
        return isinstance(form, dict) and form.get("type") == "json_schema"


STRATEGY = JsonSchema()
