"""What the two JSON modes share: the decision asked for as one JSON object, with
`response_format` carrying its schema, and the reply's text read as that object."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from replan.graphs.context import DecisionMode
from replan.graphs.conversation import with_note
from replan.graphs.model.decision_modes.strategy import (
    DecisionTool,
    ModelMistake,
    Request,
    decision_schema,
    field_list,
    read_fields,
)
from replan.graphs.prompts import Prompts

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)


def json_value(text: str) -> Any:
    """The JSON value `text` holds, alone or in a ```json fence; None when it holds none."""
    fenced = _FENCE.match(text.strip())
    try:
        return json.loads(fenced[1] if fenced else text)
    except ValueError:
        return None


def read_json_decision(reply: AIMessage, tools: Sequence[DecisionTool]) -> BaseModel:
    """The decision the reply's text holds as a JSON object (a ```json fence is allowed)."""
    text = reply.text.strip()
    sent = repr(text) if text else "(an empty reply)"
    args = json_value(text)
    if args is None:
        raise ModelMistake("the reply is not a JSON object", sent, form=True)
    return read_fields(args, tools, sent)


def bind_json(
    model: BaseChatModel, response_format: dict[str, Any]
) -> Runnable[LanguageModelInput, BaseMessage]:
    """`model` asked for a reply in `response_format`."""
    if isinstance(model, ChatOpenAI):
        # Sent as is: langchain-openai would route a `response_format` through the OpenAI
        # client's structured-output parser, which raises on a reply cut off at a token limit
        # instead of handing it over to be corrected.
        extra_body = {**(model.extra_body or {}), "response_format": response_format}
        return model.bind(extra_body=extra_body)
    return model.bind(response_format=response_format)


class JsonReply:
    """A mode that asks for the decision as one JSON object under `response_format`; the
    keys to give are named at the end of the request (the server enforces their schema).
    A subclass names its mode and says how its server takes the schema (`response_format`)."""

    name: DecisionMode

    def response_format(self, schema: Mapping[str, Any], name: str) -> dict[str, Any]:
        raise NotImplementedError

    def sent(self, body: Mapping[str, Any]) -> bool:
        form = body.get("response_format")
        return isinstance(form, dict) and form.get("type") == self.name

    def request(
        self,
        model: BaseChatModel,
        messages: Sequence[BaseMessage],
        tools: Sequence[DecisionTool],
        prompts: Prompts,
    ) -> Request:
        fields = " or ".join(
            f"`{name}` ({tool.description.rstrip('.')})" for tool in tools for name in tool.fields
        )
        if len(tools) > 1:
            fields += "; not both"
        expected = field_list(tools)
        form = self.response_format(decision_schema(tools), "decision")
        return Request(
            self.name,
            bind_json(model, form),
            with_note(messages, prompts.json_note.format(fields=fields)),
            f"response_format {self.name}",
            tools,
            None,
            lambda reply: read_json_decision(reply, tools),
            lambda mistake: prompts.json_correction.format(
                problem=mistake.problem, sent=mistake.sent, expected=expected
            ),
        )
