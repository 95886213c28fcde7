"""Steps that copy the model's own instructions: a small model may write a sentence of its
prompt (a note on how to plan) as a step, which then runs, fails to move the work on, and is
planned again until the run stops as making no progress. Such a step is a mistake the model is
told about (`replan.graphs.plan.numbering.Numbering.problems`)."""

from __future__ import annotations

import re
from collections.abc import Iterable

ECHO_WORDS = 6
"""The fewest words a step must copy from the instructions to count as a copy."""
ECHO_SHARE = 0.7
"""The least share of a step's words that must be copied."""
ECHO_RUN = 3
"""The fewest words in a row that count as copied (shorter runs are common phrases)."""
_WORD = re.compile(r"[a-z0-9$]+")
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{[a-z_]+\}")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def instruction_words(templates: Iterable[str]) -> tuple[tuple[str, ...], ...]:
    """The sentences of prompt `templates` (their placeholders left out), as lists of words."""
    sentences = []
    for template in templates:
        for sentence in re.split(r"(?<=[.!?])\s+", _PLACEHOLDER.sub(" ", template)):
            if len(words := _words(sentence)) >= ECHO_WORDS:
                sentences.append(tuple(words))
    return tuple(sentences)


def _copied(step: list[str], sentence: tuple[str, ...], into: set[int]) -> None:
    """Add to `into` the positions of `step`'s words inside runs of at least `ECHO_RUN` words
    in a row that `sentence` holds too."""
    previous = [0] * (len(sentence) + 1)
    for position, word in enumerate(step):
        current = [0] * (len(sentence) + 1)
        for index, other in enumerate(sentence, 1):
            if word == other:
                current[index] = run = previous[index - 1] + 1
                if run >= ECHO_RUN:
                    into.update(range(position - run + 1, position + 1))
        previous = current


def copies_instructions(text: str, instructions: tuple[tuple[str, ...], ...]) -> bool:
    """Whether a step's `text` is mostly words copied from `instructions`."""
    step, copied = _words(text), set[int]()
    for sentence in instructions:
        _copied(step, sentence, copied)
    return len(copied) >= max(ECHO_WORDS, ECHO_SHARE * len(step))
