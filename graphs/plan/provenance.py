"""Where a call's argument values come from, checked before the call is made.

Every argument a plan or an executor writes should come from somewhere: the user's messages,
a result of this run (by reference, or read by the model that writes the call), or the tool's
own documentation (a default, an allowed value, its description). A small model instead writes
template values (`your_username`, `<file>`), the text of a result where an identifier goes
(a status line, an error message), or ids and tokens it made up. Each is a valid string under
the tool's schema, so the schema cannot catch them; `Provenance.problems` does, in words the
model can act on. A model is told once (`Provenance.told`): a value it writes again after the
correction is taken, since it may know better (a name the user implied, a date it worked out).

Checked: text values (in lists and objects too) without a reference (`$N`) in them. Not
checked: numbers, yes/no, values an enum allows, numbers or dates written as text (often worked
out), text of one or two characters, and sentences (a message's body is written, not found);
only a value without spaces (an id, a token, a path, a name) must be found somewhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from replan.graphs.graph_state import ExecutedStep
from replan.graphs.plan.references import REFERENCE

_PLACEHOLDER = re.compile(
    r"^(?:your[\s_-]?\w+|<[^<>]+>|\{\{?[^{}]+\}?\}|\[[a-z _-]+\]|\.\.\.|x{3,}|"
    r"(?:placeholder|example|sample|dummy|changeme|todo|tbd|string|value|insert[\s_-]?\w+|"
    r"none|null|nil|undefined|n/a)"
    r"(?:[\s_-]\w+)?)$",
    re.IGNORECASE,
)
"""A template's value: `your_token`, `<name>`, `{{id}}`, `[username]`, `...`, `xxx`, `example`,
or a value standing for none (`None`, `null`), written where a name goes."""
_EXAMPLE_DOMAIN = re.compile(r"@example\.(?:com|org|net)$|^https?://(?:www\.)?example\.", re.I)
_SPACE = re.compile(r"\s")
_WORKED_OUT = re.compile(r"^[-+]?\d+(?:[.,]\d+)?%?$|^\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+Z?)?$")
"""Numbers and dates written as text: often worked out, so never asked about."""
SHORTEST = 3
"""Shorter text says nothing of where it came from (a letter, a unit), so it is not asked about."""
MOST_WORDS = 4
"""Text of more words than this is written (a message, a note), not looked up."""
RESULT_WORDS = 3
"""A result's line of at least this many words is prose, never an identifier."""
SHOWN_CHARS = 60
"""How much of a value a problem quotes."""
PLAN_ADVICE = (
    'take each value from the request or a result ("$N", "$N.field"), or plan a step that looks '
    "it up first and refer to its result"
)
"""What a plan whose values come from nowhere is told to do (after the values)."""
NOT_CALLED = "Not called:"
"""How the reply to a call that was not made begins."""
CALL_ADVICE = (
    NOT_CALLED + " {problems}. Take each value from the request or a result, or call a tool that "
    "looks it up first."
)
"""The reply to an executor's call whose values come from nowhere (none of its calls is made)."""


def _texts(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Each text inside `value` with where it is (`names[1]`)."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _texts(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _texts(item, f"{path}[{index}]")


def _documented(schema: Mapping[str, Any]) -> str:
    """What a tool's argument schema documents: its description, default, allowed values."""
    parts = [str(schema.get(key, "")) for key in ("description", "default", "examples")]
    return " ".join([*parts, *map(str, schema.get("enum") or [])]).lower()


def _quoted(text: str) -> str:
    text = " ".join(text.split())
    return f'"{text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"}"'


@dataclass
class Provenance:
    """The texts a call's values may come from: `given` (the user's messages, the step text an
    executor was given) and `read` (results of this run the writer has read, by step number
    where known); `told` holds the values the writer was already told about."""

    given: tuple[str, ...] = ()
    read: Mapping[int | str, str] = field(default_factory=dict)
    told: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, given: tuple[str, ...], steps: Sequence[ExecutedStep]) -> Provenance:
        """The sources of a plan: what the user wrote, and the results of `steps`."""
        return cls(given, {step["id"]: step["result"] for step in steps if "id" in step})

    def _found(self, value: str, documented: str) -> bool:
        low = value.lower()
        haystacks = [documented, *(text.lower() for text in (*self.given, *self.read.values()))]
        if any(low in text for text in haystacks):
            return True
        parts = [part for part in re.split(r"[/\\]", low) if part]
        return len(parts) > 1 and all(any(p in text for text in haystacks) for p in parts)

    def _result_line(self, value: str) -> str | int | None:
        """The result whose whole text or first line `value` is, when that is prose."""
        text = " ".join(value.split())
        if len(text.split()) < RESULT_WORDS:
            return None
        for where, result in self.read.items():
            lines = [" ".join(line.split()) for line in result.strip().splitlines()[:1]]
            if text in (" ".join(result.split()), *lines):
                return where
        return None

    def problem(self, name: str, value: str, schema: Mapping[str, Any]) -> str | None:
        """What is wrong with the text `value` of argument `name`, or None."""
        stripped = value.strip()
        if len(stripped) < SHORTEST or REFERENCE.search(stripped) or _WORKED_OUT.match(stripped):
            return None
        if schema.get("enum") or stripped in self.told:
            return None
        if (where := self._result_line(stripped)) is not None:
            source = f"step {where}'s result" if isinstance(where, int) else "a result"
            return (
                f"`{name}` is given the text of {source} ({_quoted(stripped)}), not a value from it"
            )
        if len(stripped.split()) > MOST_WORDS:
            return None
        documented = _documented(schema)
        if (_PLACEHOLDER.match(stripped) or _EXAMPLE_DOMAIN.search(stripped)) and (
            not self._found(stripped, "")
        ):
            return f"`{name}` is {_quoted(stripped)}, a template's value, not the real one"
        if not _SPACE.search(stripped) and not self._found(stripped, documented):
            return (
                f"`{name}` is {_quoted(stripped)}, which appears nowhere in the request or the "
                "results"
            )
        return None

    def problems(
        self, args: Mapping[str, Any], parameters: Mapping[str, Any]
    ) -> list[tuple[str, str]]:
        """Each value of `args` (a call's arguments; `parameters`, the tool's JSON schema) that
        comes from nowhere, with what is wrong with it. The values are then `told`."""
        properties = parameters.get("properties") or {}
        found = []
        for name, value in args.items():
            schema = properties.get(name) or {}
            for path, text in _texts(value, name):
                if (problem := self.problem(path, text, schema)) is not None:
                    found.append((text.strip(), problem))
        self.told.update(value for value, _ in found)
        return found


_SEPARATORS = re.compile(r"[\s\"'{}\[\](),;]+")


def known_words(texts: Iterable[str]) -> str:
    """The distinct words of `texts` (split at spaces and JSON punctuation), in one string: what
    a value without spaces is looked for in, smaller than the texts themselves."""
    words = dict.fromkeys(
        w for text in texts for w in _SEPARATORS.split(text) if len(w) >= SHORTEST
    )
    return " ".join(words)


def said_by_user(value: Any, said: Sequence[str]) -> bool:
    """Whether every text (or number) in `value` is one the user wrote in `said` (the user's
    messages), whole, between word boundaries: a party or place the user chose, not a result."""
    if isinstance(value, bool):
        return False
    texts = [str(value)] if isinstance(value, int | float) else [t for _, t in _texts(value, "")]
    return bool(texts) and all(_written(text, said) for text in texts)


def _written(text: str, said: Sequence[str]) -> bool:
    wanted = text.strip().lower()
    if len(wanted) < SHORTEST:
        return False
    bounded = re.compile(rf"(?<![\w@-]){re.escape(wanted)}(?![\w@-])")
    return any(bounded.search(message.lower()) for message in said)
