"""Every default the docs state is the code's: README.md and docs/*.md, for `Context` fields,
the options of `replan` and `python -m replan.testing`, and the few other settings they name.

Each mention of "default" is either read as (setting, stated value) and checked, or matches
one of `NOT_A_SETTING` (a default of something else, or no value), each kept only while it
matches. A mention is read in one of these forms:
- a setting, then its value: `` `--timeout` (seconds per model request; default 120) ``,
  `` `max_iterations` (default 10) ``, `` (`--decision-max-tokens` and `--executor-max-tokens`
  ...; defaults 1024 and 2048) ``, `` `--db PATH` (default `$REPLAN_DB` or `./replan.sqlite`) ``;
- a value, then "default", the setting named before it in its section: `` `"compact"`
  (default: short descriptions) ``, `` | `decision` (default) | ``, `` `auto` (default) ``,
  `` (`tool_required` by default) ``, `` `"report"` (the default) ``, `` `report`, the default ``,
  `` (`Context.answer="plain"`, the default) ``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Any

import pytest

from benchmarks import eval_objectives
from replan.cli.parser import build_parser
from replan.graphs import served
from replan.graphs.context import Bounds, Context
from replan.graphs.persistence import DEFAULT_DB
from replan.testing import command as testing_command
from replan.tools.task_middleware import DEFAULT_TASKS_IN_PROMPT
from tests.support import pg_support
from tests.support.readme import DOCS, README

DOCUMENTS = [README, *sorted(DOCS.glob("*.md"))]
BACKTICKED = re.compile(r"`([^`\n]+)`")
DEFAULT_WORD = re.compile(r"\b(?:by )?defaults?\b", re.I)


@dataclass(frozen=True)
class Default:
    """A setting's default as the code has it: `value`, and an environment variable read
    first (`env`), which a statement of the default must name too."""

    value: Any
    env: str | None = None

    def spellings(self) -> list[str]:
        """What a stated default must say: the variable (`$NAME`) and the value."""
        value = self.value
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        return [*([f"${self.env}"] if self.env else []), *([shown] if value is not None else [])]


def _context_defaults() -> dict[str, Default]:
    bounds = Bounds()
    found: dict[str, Default] = {}
    for item in fields(Context):
        value = item.default
        if value is MISSING:  # read from the environment (model, base_url)
            env = {"model": "REPLAN_MODEL", "base_url": "OPENAI_BASE_URL"}[item.name]
            found[item.name] = Default(Context().settings()[item.name], env)
        elif value is None and hasattr(bounds, item.name):  # None: the graph's bound
            found[item.name] = Default(getattr(bounds, item.name))
        else:
            found[item.name] = Default(value)
    return found


def _option_defaults(parser: Any, context: dict[str, Default]) -> dict[str, Default]:
    """Each `--option` of `parser` and its subcommands: the `Context` field its dest names
    (left unset on the command line), else its own default."""
    found: dict[str, Default] = {}
    parsers = [parser]
    while parsers:
        current = parsers.pop()
        for action in current._actions:
            if isinstance(action.choices, dict):  # the subcommands
                parsers += list(action.choices.values())
                continue
            for option in action.option_strings:
                if option.startswith("--") and option not in ("--help", "--version"):
                    default = context.get(action.dest) or Default(action.default)
                    found.setdefault(option, default)
    return found


@functools.cache
def settings() -> dict[str, Default]:
    """Every setting the docs may state a default of, by the names they write it with."""
    context = _context_defaults()
    found = {**{f"Context.{name}": d for name, d in context.items()}, **context}
    found.update(_option_defaults(build_parser(), context))
    found["--db"] = Default(DEFAULT_DB, "REPLAN_DB")
    found.update(_option_defaults(testing_command.build_parser(), {}))
    if found["--port"].value == 0:  # python -m replan.testing: the system picks a free port
        found["--port"] = Default("a free one")
    found["tasks_in_prompt"] = Default(DEFAULT_TASKS_IN_PROMPT)
    found["$REPLAN_TEST_POSTGRES_URL"] = Default(pg_support.DEFAULT_URL)
    found["$REPLAN_TASK_LIST"] = Default(served.DEFAULT_TASK_LIST)
    return found


SCOPED: dict[str, Callable[[], dict[str, Default]]] = {
    "benchmarks.md": lambda: (
        {
            f"--{name.replace('_', '-')}": Default(value)
            for name, value in vars(eval_objectives.parse_args([])).items()
        }
        | {"--run-timeout": Default(eval_objectives.parse_args([]).run_timeout)}
    ),
}
"""Documents whose options are another command's: the objective suite's in benchmarks.md."""

NOT_A_SETTING: list[tuple[str, str]] = [
    (r"replan's defaults|with (the )?defaults|\((replan, )?defaults\)|defaults,|"
     r"default settings", "runs made with every setting left alone"),
    (r"\(defaults: `--latency|defaults: `tool_steps=|, default\) \||`tool_required` by default, "
     r"answer|So the default stays|the default too \(2026|used the default `decision_mode`",
     "what a dated measurement used (benchmarks.md, tool-steps.md)"),
    (r"\| defaults \||the default also works", "local-models.md's table: the settings left alone"),
    (r"default state\)|and default\)|default serializer|Aegra's default|default slots|"
     r"\(30 s by default\)", "another library's default"),
    (r"By default runs go|stay the defaults", "persistence.md: where runs go, said in words"),
    (r"\(default: the working directory|`FilesystemPlanStorage\(\)` \(the default",
     "plan-documents.md: arguments of plan_tools, said in words"),
    (r"The default lives in one constant", "small-models.md: names the constant"),
    (r"By default it answers as a cooperative model", "testing.md: the default responder, "
     "named in words and checked by tests/test_testing.py"),
    (r"defaults from\n?\s*`DEFAULT_PROMPTS`|defaults from", "graph.md: the prompts"),
    (r"default \(`max_iterations: 10`\)", "cli.md: show's output, checked by tests/cli"),
    (r"null defaults|their defaults \(`graphs.context.Bounds", "CONTRACTS.md: said in words"),
    (r"the default responder is", "CONTRACTS.md: named, checked by tests/test_testing.py"),
]  # fmt: skip


@dataclass(frozen=True)
class Mention:
    """One "default" in a document: its paragraph (or table row), where in it, its section."""

    path: Path
    line: int
    paragraph: str
    start: int
    end: int
    before: str
    """The document from the start of the mention's section to the mention."""

    @property
    def where(self) -> str:
        return f"{self.path.name}:{self.line}"


def _blank_code(text: str) -> str:
    """`text` with fenced code blocks blanked (kept in length)."""
    return re.sub(
        r"^```.*?^```[^\n]*$", lambda m: re.sub(r"[^\n]", " ", m[0]), text, flags=re.M | re.S
    )


def _paragraph(text: str, at: int) -> tuple[int, int]:
    """Where the paragraph, list item or table row holding `at` starts and ends."""
    start = max(text.rfind(mark, 0, at) for mark in ("\n\n", "\n|", "\n- ", "\n#")) + 1
    if text.startswith("|", start):
        return start, text.find("\n", at)
    ends = [i for mark in ("\n\n", "\n- ", "\n#") if (i := text.find(mark, at)) != -1]
    return start, min(ends, default=len(text))


def mentions() -> Iterator[Mention]:
    """Every "default" of the documents, outside code (fenced or in backticks) and names
    (`DEFAULT_DB`, `setdefault`)."""
    for path in DOCUMENTS:
        text = _blank_code(path.read_text(encoding="utf-8"))
        for match in DEFAULT_WORD.finditer(text):
            if re.match(r"[\w]", text[match.end() : match.end() + 1]) or re.match(
                r"[\w.]", text[match.start() - 1 : match.start()]
            ):
                continue
            start, end = _paragraph(text, match.start())
            if text.count("`", start, match.start()) % 2:
                continue  # inside a code span: a name or a value, not a statement
            section = text.rfind("\n#", 0, match.start()) + 1
            yield Mention(
                path,
                text.count("\n", 0, match.start()) + 1,
                text[start:end],
                match.start() - start,
                match.end() - start,
                text[section : match.start()],
            )


def _skipped(mention: Mention) -> str | None:
    """The `NOT_A_SETTING` pattern that covers `mention`, if any."""
    for pattern, _ in NOT_A_SETTING:
        for match in re.finditer(pattern, mention.paragraph):
            if match.start() <= mention.end and mention.start <= match.end():
                return pattern
    return None


TOKEN = re.compile(r"`([^`]+)`|\"([^\"\n]+)\"")
"""A backticked span, or a quoted value."""


AMBIGUOUS = frozenset({"replan", "answer", "model", "task_tools", "timeout", "temperature"})
"""`Context` fields the docs also use as other names (the command, a node, a function): only
`Context.NAME` or `--NAME` name the setting."""


def _setting(token: str, known: dict[str, Default]) -> tuple[str, str | None] | None:
    """The setting `token` names, and the value it gives it: `--task-tools compact`,
    `Context.answer="plain"`, `Context(recover_text_calls=True)`; a metavar (`--db PATH`) is
    no value."""
    inner = re.sub(r"^Context\((.*)\)$", r"\1", token.strip())
    match = re.fullmatch(r"([\w.$-]+)(?:[= ](.+))?", inner)
    if match is None or match[1] not in known or match[1] in AMBIGUOUS:
        return None
    value = match[2]
    return match[1], None if value is None or value.isupper() else value


def _names(text: str, known: dict[str, Default]) -> list[str]:
    """The settings `text` names in backticks, in order."""
    return [found[0] for token in BACKTICKED.findall(text) if (found := _setting(token, known))]


def stated(mention: Mention, known: dict[str, Default]) -> list[tuple[str, str]]:
    """(setting, stated value) pairs of `mention`; AssertionError when it reads as neither
    form of the module docstring."""
    head = mention.paragraph[: mention.start]
    tail = mention.paragraph[mention.end :]
    word = mention.paragraph[mention.start : mention.end].lower()
    before = re.search(r"(?:`([^`]+)`|\"([^\"\n]+)\")\s*(?:\(|,)?\s*(?:the\s+)?$", head)
    if before is not None and re.match(r"\s*(?:[:),;|]|$)", tail):  # nothing after: a value before
        token = before[1] or before[2]
        setting = _setting(token, known) if before[1] else None
        if setting is not None and setting[1] is not None:  # `--task-tools compact` (default)
            return [(setting[0], setting[1])]
        if setting is None:  # a value: the setting is the one named last before it
            earlier = _names(mention.before[: len(mention.before) - len(head)] + head, known)
            assert earlier, f"{mention.where}: no setting named before the default {token}"
            return [(earlier[-1], token)]
    # A setting, then its value: `name` (...; default 3), `a` and `b` (...; defaults 1 and 2).
    after = re.match(r"\s*:?\s*([^\s,;)].*?)(?=\)|;|, |\.\s|\n\n|$)", tail, re.S)
    names = _names(head, known)
    assert names and after, f"{mention.where}: cannot read '{mention.paragraph[:200]}'"
    values = [after[1]]
    if word == "defaults":
        values = re.split(r"\s+and\s+", after[1])
    return list(zip(names[-len(values) :], values, strict=True))


def _case(mention: Mention) -> Any:
    return pytest.param(mention, id=mention.where)


MENTIONS = list(mentions())


@pytest.mark.parametrize("mention", [_case(m) for m in MENTIONS])
def test_a_stated_default_is_the_code_s(mention: Mention) -> None:
    if _skipped(mention):
        return
    known = {**settings(), **SCOPED.get(mention.path.name, dict)()}
    for name, value in stated(mention, known):
        default = known[name]
        said = value.replace("`", "").replace('"', "").strip()
        for spelling in default.spellings():
            assert re.search(rf"(?<![\w.]){re.escape(spelling)}(?![\w])", said), (
                f"{mention.where}: the docs say {name} defaults to {value!r}; the code: "
                f"{default.value!r}" + (f" (from ${default.env})" if default.env else "")
            )


def test_every_exception_still_matches_a_mention() -> None:
    used = {_skipped(m) for m in MENTIONS}
    assert [pattern for pattern, _ in NOT_A_SETTING if pattern not in used] == []


def test_the_variables_the_docs_name_set_those_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    named = {name: d.env for name, d in settings().items() if d.env}
    assert named == {"model": "REPLAN_MODEL", "Context.model": "REPLAN_MODEL",
                     "--model": "REPLAN_MODEL", "base_url": "OPENAI_BASE_URL",
                     "Context.base_url": "OPENAI_BASE_URL", "--base-url": "OPENAI_BASE_URL",
                     "--db": "REPLAN_DB"}  # fmt: skip
    for variable in ("REPLAN_MODEL", "OPENAI_BASE_URL", "REPLAN_DB"):
        monkeypatch.setenv(variable, f"from-{variable}")
    assert (Context().model, Context().base_url) == ("from-REPLAN_MODEL", "from-OPENAI_BASE_URL")
    assert build_parser().parse_args(["threads"]).db == "from-REPLAN_DB"


def test_the_check_finds_a_wrong_default() -> None:
    known = settings()
    wrong = "`--answer plain|decision` (how the answer is written; default plain)"
    mention = Mention(Path("x.md"), 1, wrong, wrong.index("default"), wrong.index(" plain)"), "")
    ((name, value),) = stated(mention, known)
    assert (name, value, known[name].value) == ("--answer", "plain", "decision")
