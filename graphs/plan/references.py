"""References to earlier results in a tool step's arguments: `$N` (step N's result) and `$N`
followed by a path into it (`$2.id`, `$2.items[0].price`, `$3.rows[-1]`, `$4[0]`).

A path is a series of `.name` (a field of a JSON object) and `[i]` or `.[i]` (an item of a JSON
list, counted from the end when negative). A dot must be followed by a name or `[`, and a
reference never runs into digits: `$2.50` and `$1,000` are amounts of money, not references.
A path is read in the result as JSON (a Python literal also does, as some tools print their
results); one that does not resolve raises `UnresolvedPath`, which says what is there.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

_STEP = r"[1-9][0-9]*"
_NAME = r"[A-Za-z_][A-Za-z0-9_-]*"
"""A field name in a path. Spelled without `\\w`: llama.cpp's JSON-schema grammars take no
escape in a character class, and a pattern they cannot convert accepts any string."""
_PART = rf"\.{_NAME}|\.?\[-?[0-9]+\]"
REFERENCE = re.compile(rf"\$({_STEP})((?:{_PART})*)(?![.,]?[0-9])")
"""`$N` with an optional path: group 1 the step number, group 2 the path."""
REFERENCE_SCHEMA: dict[str, Any] = {"type": "string", "pattern": rf"^\${_STEP}(?:{_PART})*$"}
"""What a non-string argument may be instead of its value: a reference, with or without a path."""
_PARTS = re.compile(rf"\.({_NAME})|\.?\[(-?[0-9]+)\]")
FIELDS_SHOWN = 12
"""How many of a JSON object's fields a message about it names."""


def references(value: Any) -> set[int]:
    """The step numbers `value` (arguments, or any part of them) refers to."""
    if isinstance(value, str):
        return {int(match[1]) for match in REFERENCE.finditer(value)}
    if isinstance(value, Mapping):
        return set().union(*(references(item) for item in value.values()))
    if isinstance(value, list | tuple):
        return set().union(*(references(item) for item in value))
    return set()


def renumber(value: Any, numbers: Mapping[int, int]) -> Any:
    """`value` with every reference to a number of `numbers` made one to `numbers[N]` (paths
    kept)."""
    if isinstance(value, str):
        return REFERENCE.sub(lambda m: f"${numbers.get(int(m[1]), int(m[1]))}{m[2]}", value)
    if isinstance(value, Mapping):
        return {key: renumber(item, numbers) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [renumber(item, numbers) for item in value]
    return value


class UnresolvedPath(ValueError):
    """A reference's path names nothing in the result it points into."""

    def __init__(self, reference: str, problem: str) -> None:
        self.reference, self.problem = reference, problem
        super().__init__(f'"{reference}" names nothing: {problem}')


def parsed(text: str) -> Any:
    """`text` as the JSON (or Python literal) object or list it is, else None."""
    text = text.strip()
    if not text.startswith(("{", "[")):
        return None
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict | list) else None


def shape(value: Any) -> str:
    """What `value` is, in a few words: its fields, its length, or that it is text."""
    if isinstance(value, dict):
        names = list(map(str, value))
        more = f" and {len(names) - FIELDS_SHOWN} more" if len(names) > FIELDS_SHOWN else ""
        return f"a JSON object with the fields {', '.join(names[:FIELDS_SHOWN])}{more}"
    if isinstance(value, list):
        return f"a JSON list of {len(value)} items"
    return "not a JSON object or list"


def resolve(step: int, text: str, path: str) -> Any:
    """What the reference `$step` + `path` names in step `step`'s result `text`."""
    value: Any = parsed(text)
    walked = reference = f"${step}"
    reference += path
    if value is None:
        raise UnresolvedPath(reference, f"step {step}'s result is {shape(text)}")
    for part in _PARTS.finditer(path):
        name, index = part[1], part[2]
        if name is not None:
            if not isinstance(value, dict) or name not in value:
                raise UnresolvedPath(reference, f"{walked} is {shape(value)}")
            value, walked = value[name], f"{walked}.{name}"
            continue
        position = int(index)
        if not isinstance(value, list) or not -len(value) <= position < len(value):
            raise UnresolvedPath(reference, f"{walked} is {shape(value)}")
        value, walked = value[position], f"{walked}[{position}]"
    return value


def as_text(value: Any) -> str:
    """A resolved value as it goes into a longer string: text as it is, anything else as
    JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
