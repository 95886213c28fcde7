"""The tool list at the head of every request: what each tool does and what its arguments take,
as the tools' own documentation says (JSON-schema tools included)."""

from __future__ import annotations

from typing import Any

from langchain_core.tools import StructuredTool, tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from replan.graphs.model.offers import ARGUMENT_NOTE_CHARS, ToolOffer, tool_lines

SUITE = "This tool belongs to the garden suite, which tends plants."


def _json_tool(name: str, description: str, properties: dict[str, Any]) -> StructuredTool:
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    return StructuredTool(
        name=name, description=description, args_schema=schema, func=lambda **_: "ok"
    )


def test_a_sentence_every_tool_of_a_suite_opens_with_gives_way_to_each_tools_own() -> None:
    water = _json_tool(
        "water",
        f"{SUITE} Waters the beds you name. Uses the rain tank first.",
        {
            "beds": {"type": "array", "items": {"type": "string"}, "description": "Beds to water."},
            "litres": {"type": "number", "description": "How much each bed gets."},
        },
    )
    light = _json_tool(
        "light",
        f"{SUITE} Switches the lamps.",
        {"mode": {"type": "string", "enum": ["on", "off"]}},
    )
    lone = _json_tool("lone", SUITE, {"note": {"type": "string"}})
    listing = ToolOffer((water, light, lone), False, ("water", "light", "lone")).listing
    assert listing.splitlines() == [
        "- water(beds, litres): Waters the beds you name",
        "    beds (array): Beds to water.",
        "    litres (number): How much each bed gets.",
        "- light(mode): Switches the lamps",
        "    mode: One of: on, off.",
        f"- lone(note): {SUITE.rstrip('.')}",  # nothing of its own: the suite's sentence stays
    ]


def test_a_python_tool_is_listed_as_before_and_long_argument_notes_are_cut() -> None:
    @tool
    def price(item: str) -> float:
        """Price of an item in euros. Prices change daily."""
        return 1.0

    assert tool_lines([_spec(price)]) == "- price(item): Price of an item in euros"
    long = _json_tool("send", "Sends a note.", {"to": {"type": "string", "description": "x" * 500}})
    (_, note) = tool_lines([_spec(long)]).splitlines()
    assert note.startswith("    to: xxx") and note.endswith("…")
    assert len(note) == len("    to: ") + ARGUMENT_NOTE_CHARS


def _spec(one: Any) -> dict[str, Any]:
    return convert_to_openai_tool(one)
