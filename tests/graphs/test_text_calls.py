"""Tool calls written as text, read back by `replan.graphs.model.text_calls` (pure functions)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from replan.graphs.model.text_calls import (
    RECOVERED_KEY,
    OfferedTools,
    read_text_calls,
    recover_text_calls,
    recovered_calls,
    text_call_problem,
)
from replan.graphs.plan.decisions import PlanArgs, RespondArgs

TASK_TOOLS = OfferedTools.of(["TaskCreate", "TaskList", "TaskUpdate"])
PLAN_FORCED = OfferedTools.of(["plan"], PlanArgs)
CREATE = {"name": "TaskCreate", "arguments": {"subject": "Write it", "description": "report"}}
LIST = {"name": "TaskList", "arguments": {}}


def _named(text: str, offered: OfferedTools = TASK_TOOLS) -> list[tuple[str, dict[str, Any]]]:
    """(name, args) of each call read from `text`."""
    return [(call["name"], call["args"]) for call in read_text_calls(text, offered).calls]


def _obj(value: Any) -> str:
    return json.dumps(value)


EXPECTED_BOTH = [("TaskCreate", CREATE["arguments"]), ("TaskList", {})]


@pytest.mark.parametrize(
    "text",
    [
        f"```json\n{_obj(CREATE)}\n```",
        f"```\n{_obj(CREATE)}\n```",
        f"<tool_call>\n{_obj(CREATE)}\n</tool_call>",
        f"<tool_call>{_obj(CREATE)}",  # Qwen sometimes stops before the closing tag
        f"<tool_call>\n```json\n{_obj(CREATE)}\n```\n</tool_call>",
        _obj(CREATE),
        json.dumps(CREATE, indent=2),
        f"  {_obj(CREATE)}  \n",
        _obj({"type": "function", "function": CREATE}),
        f"TaskCreate({_obj(CREATE['arguments'])})",
        f"```python\nTaskCreate({_obj(CREATE['arguments'])});\n```",
    ],
    ids=[
        "json fence",
        "plain fence",
        "tags",
        "unclosed tag",
        "fence in tags",
        "bare",
        "bare on several lines",
        "bare with blanks",
        "openai wire shape",
        "written as a function call",
        "a function call in a fence",
    ],
)
def test_a_call_written_as_text_is_read_in_each_shape_servers_return(text: str) -> None:
    """Servers such as llama-server return a small model's tool call as the reply's text."""
    assert _named(text) == [("TaskCreate", CREATE["arguments"])]


@pytest.mark.parametrize(
    "text",
    [
        f"```json\n{_obj(CREATE)}\n```\n\n```json\n{_obj(LIST)}\n```",
        f"```json\n{_obj(CREATE)}\n{_obj(LIST)}\n```",
        f"<tool_call>\n{_obj(CREATE)}\n</tool_call>\n<tool_call>\n{_obj(LIST)}\n</tool_call>",
        f"{_obj(CREATE)}\n{_obj(LIST)}",
        _obj([CREATE, LIST]),
        f"```json\n{_obj([CREATE, LIST])}\n```",
    ],
    ids=["two fences", "two lines in a fence", "two tags", "two lines", "a list", "fenced list"],
)
def test_several_calls_in_one_text_are_several_calls_with_distinct_ids(text: str) -> None:
    found = read_text_calls(text, TASK_TOOLS)
    assert [(call["name"], call["args"]) for call in found.calls] == EXPECTED_BOTH
    ids = [call["id"] for call in found.calls]
    assert all(ids) and len(set(ids)) == 2
    assert found.problem is None


def test_arguments_may_be_a_json_string_or_under_parameters() -> None:
    as_string = {"name": "TaskCreate", "arguments": json.dumps(CREATE["arguments"])}
    as_parameters = {"name": "TaskCreate", "parameters": CREATE["arguments"]}
    string_parameters = {"name": "TaskList", "parameters": ""}
    assert _named(_obj(as_string)) == [("TaskCreate", CREATE["arguments"])]
    assert _named(_obj(as_parameters)) == [("TaskCreate", CREATE["arguments"])]
    assert _named(_obj(string_parameters)) == [("TaskList", {})]


def test_the_prose_around_the_calls_is_kept_and_the_call_text_removed() -> None:
    text = f"I will record the task first.\n\n```json\n{_obj(CREATE)}\n```\n\nThen I check."
    reply = recover_text_calls(AIMessage(text), TASK_TOOLS)
    assert reply is not None
    assert reply.content == "I will record the task first.\n\nThen I check."
    assert [call["name"] for call in reply.tool_calls] == ["TaskCreate"]


def test_a_recovered_reply_is_marked_with_its_count() -> None:
    original = AIMessage(f"{_obj(CREATE)}\n{_obj(LIST)}", response_metadata={"model": "m"})
    reply = recover_text_calls(original, TASK_TOOLS)
    assert reply is not None
    assert reply.response_metadata == {"model": "m", RECOVERED_KEY: 2}
    assert recovered_calls(reply) == 2
    assert recovered_calls(original) == 0
    assert original.tool_calls == []  # the original is left as it was


def test_an_unknown_tool_is_not_recovered_and_the_problem_names_it() -> None:
    text = f"```json\n{_obj({'name': 'TaskDelete', 'arguments': {}})}\n```"
    assert recover_text_calls(AIMessage(text), TASK_TOOLS) is None
    problem = text_call_problem(AIMessage(text), TASK_TOOLS)
    assert problem is not None and "`TaskDelete`" in problem and "`TaskList`" in problem


def test_one_unknown_call_among_known_ones_keeps_them_all_unread() -> None:
    text = f"{_obj(CREATE)}\n{_obj({'name': 'Nope', 'arguments': {}})}"
    assert recover_text_calls(AIMessage(text), TASK_TOOLS) is None
    assert "`Nope`" in (text_call_problem(AIMessage(text), TASK_TOOLS) or "")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (f"Next time I would call {_obj(LIST)} to see the tasks.", "inside the prose"),
        (f"```json\n{_obj(CREATE)}\n```\n<tool_call>{_obj(LIST)}</tool_call>", "several shapes"),
        (f'```json\n{_obj(CREATE)}\n```\n```json\n{{"count": 3}}\n```', "mixed"),
        (_obj([CREATE, {"count": 3}]), "mixed"),
        (_obj({"name": "TaskList", "arguments": {}, "parameters": {}}), "both"),
        ('<tool_call>{"name": "TaskList", "arguments": {</tool_call>', "not valid JSON"),
        ('```json\n{"name": "TaskList", "arguments": {\n```', "not valid JSON"),
        (_obj({"name": "TaskCreate", "arguments": "{not json"}), "not valid JSON"),
        (_obj({"name": "TaskCreate", "arguments": [1, 2]}), "not a JSON object"),
        ('TaskCreate({"subject": "Write it",})', "not valid JSON"),
    ],
    ids=[
        "inline mention",
        "fence and tag",
        "call and data fences",
        "call and data in a list",
        "arguments and parameters",
        "broken tag",
        "broken fence",
        "broken string arguments",
        "list arguments",
        "broken function call",
    ],
)
def test_an_ambiguous_or_broken_text_is_not_recovered(text: str, problem: str) -> None:
    assert recover_text_calls(AIMessage(text), TASK_TOOLS) is None
    assert problem in (text_call_problem(AIMessage(text), TASK_TOOLS) or "")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "The step is done: three queues were compared.",
        'The result is:\n```json\n{"queues": ["Celery", "RQ"], "name": "report"}\n```',
        '{"name": "Celery", "score": 3}',
        "```python\nprint('hello')\n```",
        "Then I would call TaskList({}) to see them.",
        'Nope({"subject": "x"})',
    ],
    ids=[
        "empty",
        "prose",
        "data fence",
        "data object",
        "code fence",
        "a call inside a sentence",
        "a call of no offered tool",
    ],
)
def test_prose_and_plain_json_are_neither_calls_nor_problems(text: str) -> None:
    assert recover_text_calls(AIMessage(text), TASK_TOOLS) is None
    assert text_call_problem(AIMessage(text), TASK_TOOLS) is None


def test_a_reply_with_real_tool_calls_is_left_alone() -> None:
    reply = AIMessage(
        _obj(LIST), tool_calls=[{"name": "TaskList", "args": {}, "id": "c1", "type": "tool_call"}]
    )
    assert recover_text_calls(reply, TASK_TOOLS) is None
    assert text_call_problem(reply, TASK_TOOLS) is None


@pytest.mark.parametrize(
    "text",
    [
        _obj({"steps": ["Find prices", "Compare them"]}),
        f"Here is the plan:\n```json\n{_obj({'steps': ['Find prices', 'Compare them']})}\n```",
    ],
    ids=["bare", "fenced"],
)
def test_a_model_writing_only_a_forced_decisions_arguments_gets_that_call(text: str) -> None:
    """Asked for one decision, small models write only its arguments as a JSON object."""
    reply = recover_text_calls(AIMessage(text), PLAN_FORCED)
    assert reply is not None
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [
        ("plan", {"steps": ["Find prices", "Compare them"]})
    ]


def test_bare_arguments_count_only_for_a_forced_decision_and_only_when_valid() -> None:
    steps = _obj({"steps": ["Find prices"]})
    offered_two = OfferedTools.of(["plan", "respond"])
    assert recover_text_calls(AIMessage(steps), offered_two) is None
    assert recover_text_calls(AIMessage(_obj({"steps": []})), PLAN_FORCED) is None
    assert recover_text_calls(AIMessage(f"{steps}\n{steps}"), PLAN_FORCED) is None
    assert _named(_obj({"name": "plan", "arguments": {"steps": ["A"]}}), PLAN_FORCED) == [
        ("plan", {"steps": ["A"]})
    ]


def test_a_forced_decision_offers_exactly_one_tool() -> None:
    with pytest.raises(ValueError, match="exactly one tool"):
        OfferedTools.of(["plan", "respond"], PlanArgs)


def test_a_forced_decisions_only_list_argument_may_come_as_the_whole_arguments() -> None:
    """Seen on llama-server: `{"name": "plan", "arguments": [...steps]}` in a fence, the steps
    written where their object goes; before, the reply was a mistake and asked again."""
    steps = [{"tool": "cat", "args": {"file_name": "notes"}}, "Sum it up"]
    text = f"```json\n{_obj({'name': 'plan', 'arguments': steps})}\n```"
    assert _named(text, PLAN_FORCED) == [("plan", {"steps": steps})]
    # not where the tool is not forced, nor where the list is not the only argument's
    unforced = OfferedTools.of(["plan"])
    assert recover_text_calls(AIMessage(text), unforced) is None
    assert text_call_problem(AIMessage(text), unforced) == (
        "the arguments of `plan` are not a JSON object"
    )
    answer = f"```json\n{_obj({'name': 'respond', 'arguments': ['done']})}\n```"
    assert recover_text_calls(AIMessage(answer), OfferedTools.of(["respond"], RespondArgs)) is None
