"""Tool calls a model wrote as text, read back into real tool calls.

Some OpenAI-compatible servers (llama.cpp's `llama-server` with small models, for instance)
return a model's tool call as the text of the reply, with no `tool_calls`: a JSON object with
`name` and `arguments` (or `parameters`) in a ``` fence, between `<tool_call>` tags (Qwen's
own format), bare, or as the whole reply in the form of a function call, `plan({"steps": [...]})`
(alone or in a fence). `recover_text_calls` reads such a reply back into an `AIMessage` with
`tool_calls`, so the graph carries on as if the server had parsed the calls itself.

Only an unambiguous text is read: every call names an offered tool, and all the calls come in
one shape (tags, fences, or bare objects on their own lines). Anything else (an unknown tool,
JSON that does not parse, calls mixed with other JSON, a call inside a sentence) is left
alone, and `text_call_problem` says what is wrong with it. For a forced decision (one tool
required) a lone JSON object that validates as that tool's arguments counts as a call too,
and a call whose `arguments` is a list gives it to the tool's only argument where that takes a
list (`{"name": "plan", "arguments": [...]}`: the steps where `{"steps": [...]}` goes).

Everything here is a pure function of the reply and the offered tools.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, get_origin

from langchain_core.messages import AIMessage, ToolCall
from pydantic import BaseModel, ValidationError

RECOVERED_KEY = "recovered_text_calls"
"""`response_metadata` key of a recovered reply: how many of its calls were read from text."""

_TAG = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.S)
_FENCE = re.compile(r"```[ \t]*([A-Za-z_]*)[ \t]*\n(.*?)```", re.S)
_LINE_START = re.compile(r"^[ \t]*(?=[\[{])", re.M)
_CALL_LIKE = re.compile(r"<tool_call>|\"name\"\s*:.*\"(?:arguments|parameters)\"\s*:", re.S)
_ARGUMENT_KEYS = ("arguments", "parameters")
_WRITTEN_CALL = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_-]{0,63})\(\s*(\{.*\})\s*\)\s*;?\s*", re.S)
"""A whole reply written as a function call with a JSON object: `plan({"steps": [...]})`."""


@dataclass(frozen=True)
class OfferedTools:
    """The tools a model turn offers: their names and, for a forced decision, the arguments
    model of the one tool it must call (then `names` holds only that tool's name)."""

    names: frozenset[str]
    required_args: type[BaseModel] | None = None

    def __post_init__(self) -> None:
        if self.required_args is not None and len(self.names) != 1:
            raise ValueError("a forced decision offers exactly one tool")

    @classmethod
    def of(cls, names: Iterable[str], required_args: type[BaseModel] | None = None) -> OfferedTools:
        """The offer of the tools `names` (forced to the only one when `required_args`)."""
        return cls(frozenset(names), required_args)


@dataclass(frozen=True)
class _Segment:
    """One piece of the text that may hold calls: its shape, where it is, and its JSON."""

    shape: str
    span: tuple[int, int]
    values: list[Any] | None
    """The JSON values it holds, or None when its body is not JSON."""
    body: str


@dataclass(frozen=True)
class TextCalls:
    """What the text of a reply holds: the calls read from it and the prose around them, or
    why text that looks like a tool call could not be read (`problem`)."""

    calls: list[ToolCall] = field(default_factory=list)
    prose: str = ""
    problem: str | None = None


def read_text_calls(text: str, offered: OfferedTools) -> TextCalls:
    """The tool calls written in `text` for the `offered` tools (see the module docstring)."""
    if as_function := _written_call(text, offered):
        return as_function
    segments, rest = _segments(text)
    calls: list[tuple[_Segment, list[tuple[str, dict[str, Any]]]]] = []
    data: list[_Segment] = []
    for segment in segments:
        if segment.values is None:
            if segment.shape == "tagged" or _CALL_LIKE.search(segment.body):
                return TextCalls(problem=f"the {segment.shape} tool call is not valid JSON")
            continue
        found = [_as_calls(value, offered) for value in segment.values]
        if problem := next((item for item in found if isinstance(item, str)), None):
            return TextCalls(problem=problem)
        written = [item for item in found if isinstance(item, list)]
        if not written:
            data.append(segment)
        elif len(written) < len(found):
            return TextCalls(problem="tool calls are mixed with other JSON")
        else:
            calls.append((segment, [call for item in written for call in item]))
    if calls:
        return _checked(text, calls, data, rest, offered)
    if _CALL_LIKE.search(rest):
        return TextCalls(problem="a tool call is written inside the prose")
    return _required_args(text, data, offered)


def _checked(
    text: str,
    calls: list[tuple[_Segment, list[tuple[str, dict[str, Any]]]]],
    data: list[_Segment],
    rest: str,
    offered: OfferedTools,
) -> TextCalls:
    """The calls found, if they are unambiguous and name offered tools."""
    if data:
        return TextCalls(problem="tool calls are mixed with other JSON")
    shapes = {segment.shape for segment, _ in calls}
    if len(shapes) > 1:
        return TextCalls(problem=f"tool calls are written in several shapes ({', '.join(shapes)})")
    if _CALL_LIKE.search(rest):
        return TextCalls(problem="a tool call is written inside the prose")
    named = [call for _, found in calls for call in found]
    unknown = sorted({name for name, _ in named} - offered.names)
    if unknown:
        offer = ", ".join(f"`{name}`" for name in sorted(offered.names)) or "none"
        names = ", ".join(f"`{name}`" for name in unknown)
        return TextCalls(problem=f"it names {names}, not an offered tool (offered: {offer})")
    return TextCalls(
        calls=[_tool_call(name, args) for name, args in named],
        prose=_without(text, [segment.span for segment, _ in calls]),
    )


def _written_call(text: str, offered: OfferedTools) -> TextCalls | None:
    """The call a whole reply writes as `name({...})` (alone or in one fence) of an offered
    tool, with a JSON object as its arguments; None when it is not that."""
    fenced = _FENCE.fullmatch(text.strip())
    match = _WRITTEN_CALL.fullmatch(fenced[2] if fenced else text)
    if match is None or match[1] not in offered.names:
        return None
    try:
        args = json.loads(match[2])
    except ValueError:
        return TextCalls(problem=f"the arguments of `{match[1]}` are not valid JSON")
    return TextCalls(calls=[_tool_call(match[1], args)]) if isinstance(args, dict) else None


def _required_args(text: str, data: list[_Segment], offered: OfferedTools) -> TextCalls:
    """For a forced decision: a lone JSON object that validates as the required arguments."""
    if offered.required_args is None or len(data) != 1 or len(data[0].values or []) != 1:
        return TextCalls(prose=text)
    value = (data[0].values or [None])[0]
    if not isinstance(value, dict):
        return TextCalls(prose=text)
    try:
        offered.required_args.model_validate(value)
    except ValidationError:
        return TextCalls(prose=text)
    (name,) = offered.names
    return TextCalls(calls=[_tool_call(name, value)], prose=_without(text, [data[0].span]))


def _segments(text: str) -> tuple[list[_Segment], str]:
    """The tagged, fenced and bare JSON pieces of `text`, in that order, and the text outside
    them (each piece blanked out, so positions in it are positions in `text`)."""
    segments: list[_Segment] = []
    rest = text
    for shape, pattern, group in (("tagged", _TAG, 1), ("fenced", _FENCE, 2)):
        for match in pattern.finditer(rest):
            segments.append(_Segment(shape, match.span(), _json_values(match[group]), match[group]))
        rest = pattern.sub(lambda m: " " * len(m[0]), rest)
    for segment in _bare(rest):
        segments.append(segment)
        start, end = segment.span
        rest = rest[:start] + " " * (end - start) + rest[end:]
    return segments, rest


def _json_values(body: str) -> list[Any] | None:
    """The JSON in a tag or fence body: one value, or one value per non-blank line."""
    if (fenced := _FENCE.fullmatch(body.strip())) is not None:  # a fence inside a tag
        body = fenced[2]
    try:
        return [json.loads(body)]
    except ValueError:
        pass
    lines = [line for line in body.splitlines() if line.strip()]
    try:
        return [json.loads(line) for line in lines] or None
    except ValueError:
        return None


def _bare(text: str) -> Iterator[_Segment]:
    """JSON values that start a line and end one (several lines each, possibly)."""
    decoder = json.JSONDecoder()
    position = 0
    for match in _LINE_START.finditer(text):
        start = match.end()
        if start < position:
            continue
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            continue
        line_end = text.find("\n", end)
        line_end = len(text) if line_end < 0 else line_end
        if text[end:line_end].strip():
            continue
        position = end
        yield _Segment("bare", (start, end), [value], text[start:end])


def _as_calls(value: Any, offered: OfferedTools) -> list[tuple[str, dict[str, Any]]] | str | None:
    """The calls a JSON value writes (an object, or a list of them); None when it is not a
    call at all; a problem when it looks like one but is broken."""
    items = value if isinstance(value, list) and value else [value]
    found = [_as_call(item, offered) for item in items]
    if all(item is None for item in found):
        return None
    problems = [item for item in found if isinstance(item, str)]
    if problems:
        return problems[0]
    if any(item is None for item in found):
        return "tool calls are mixed with other JSON"
    return [item for item in found if isinstance(item, tuple)]


def _as_call(value: Any, offered: OfferedTools) -> tuple[str, dict[str, Any]] | str | None:
    """(name, arguments) of one call object, None for other JSON, or a problem. A forced
    decision whose one argument is a list may get that list as its whole `arguments`."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict) and "name" not in value:
        value = value["function"]  # the OpenAI wire shape, {"type": "function", ...}
    keys = [key for key in _ARGUMENT_KEYS if key in value]
    if "name" not in value or not keys:
        return None
    name = value["name"]
    if len(keys) > 1:
        return "a tool call gives both `arguments` and `parameters`"
    if not isinstance(name, str) or not name:
        return "a tool call's `name` is not a tool name"
    args = value[keys[0]]
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            return f"the arguments of `{name}` are not valid JSON"
    if args is None:
        args = {}
    if isinstance(args, list) and (field := _only_list_field(offered)):
        args = {field: args}  # `{"name": "plan", "arguments": [...]}`: the steps themselves
    if not isinstance(args, dict):
        return f"the arguments of `{name}` are not a JSON object"
    return name, args


def _only_list_field(offered: OfferedTools) -> str | None:
    """The name of a forced decision's only argument when it takes a list, else None."""
    fields = offered.required_args.model_fields if offered.required_args else {}
    if len(fields) != 1:
        return None
    ((name, info),) = fields.items()
    return name if get_origin(info.annotation) is list else None


def _tool_call(name: str, args: dict[str, Any]) -> ToolCall:
    return ToolCall(name=name, args=args, id=f"call_{uuid.uuid4().hex[:24]}", type="tool_call")


def _without(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with `spans` cut out and the blank lines left behind squeezed."""
    kept, position = [], 0
    for start, end in sorted(spans):
        kept.append(text[position:start])
        position = end
    kept.append(text[position:])
    return re.sub(r"\n\s*\n(\s*\n)+", "\n\n", "".join(kept)).strip()


def recover_text_calls(reply: AIMessage, offered: OfferedTools) -> AIMessage | None:
    """`reply` with the tool calls written in its text as real `tool_calls`, or None when it
    has real calls already or its text holds no call that can be read unambiguously.

    The recovered reply keeps only the prose around the calls as its content and says how many
    calls were recovered in `response_metadata[RECOVERED_KEY]`.
    """
    if reply.tool_calls or reply.invalid_tool_calls:
        return None
    found = read_text_calls(reply.text, offered)
    if not found.calls:
        return None
    metadata = {**reply.response_metadata, RECOVERED_KEY: len(found.calls)}
    return reply.model_copy(
        update={"content": found.prose, "tool_calls": found.calls, "response_metadata": metadata}
    )


def text_call_problem(reply: AIMessage, offered: OfferedTools) -> str | None:
    """Why the text of `reply` looks like a tool call that could not be read, or None."""
    if reply.tool_calls or reply.invalid_tool_calls:
        return None
    return read_text_calls(reply.text, offered).problem


def recovered_calls(reply: AIMessage) -> int:
    """How many of `reply`'s tool calls were recovered from its text."""
    count = reply.response_metadata.get(RECOVERED_KEY, 0)
    return count if isinstance(count, int) else 0
