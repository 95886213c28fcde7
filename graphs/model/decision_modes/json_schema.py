"""`json_schema`: no tools; `response_format` with the JSON schema of the decision's fields
(llama-server and Ollama, which ignore `tool_choice` but enforce a schema)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replan.graphs.context import DecisionMode
from replan.graphs.model.decision_modes.json_reply import JsonReply
from replan.graphs.model.decision_modes.strategy import ProbeSpec


class JsonSchema(JsonReply):
    """A JSON reply under a schema (see the module docstring)."""

    name: DecisionMode = "json_schema"
    after_mistakes: DecisionMode | None = "json_object"
    probes: tuple[ProbeSpec, ...] = (("json_schema", 2),)

    def response_format(self, schema: Mapping[str, Any], name: str) -> dict[str, Any]:
        """OpenAI's `response_format` asking for one JSON object of `schema` (`name`: what it
        holds)."""
        return {"type": "json_schema", "json_schema": {"name": name, "schema": dict(schema)}}


STRATEGY = JsonSchema()
