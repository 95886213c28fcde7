"""`json_object`: llama-cpp-python's form of a JSON reply, `{"type": "json_object", "schema":
...}` (its server refuses OpenAI's `json_schema` with HTTP 500)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replan.graphs.context import DecisionMode
from replan.graphs.model.decision_modes.json_reply import JsonReply
from replan.graphs.model.decision_modes.strategy import ProbeSpec


class JsonObject(JsonReply):
    """A JSON object with a schema, llama-cpp-python's way (see the module docstring)."""

    name: DecisionMode = "json_object"
    after_mistakes: DecisionMode | None = None
    probes: tuple[ProbeSpec, ...] = (("json_object", 2),)

    def response_format(self, schema: Mapping[str, Any], name: str) -> dict[str, Any]:
        """How this mode asks for a JSON object of `schema` (`name` is not sent)."""
        return {"type": "json_object", "schema": dict(schema)}


STRATEGY = JsonObject()
