"""Prompt weight: compact task-tool descriptions, the run's choice of the executor's task tools
(`Context.task_tools`, `--task-tools`), the executor's prompt about its tools, and the
`benchmarks/prompt_weight.py` script."""

from __future__ import annotations

import json
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from replan.graphs.context import TASK_TOOLS_CHOICES, Context, TaskToolsChoice
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.testing import Reply, ScriptedOpenAIServer, tool_call
from replan.testing import plan_script as script
from replan.tools.task_descriptions import LANGUAGES, Language
from replan.tools.task_tools import TASK_TOOL_NAMES, task_tools
from tests.support.cli_harness import invoke

ROOT = Path(__file__).resolve().parents[2]
OBJECTIVE = "Draft a changelog entry in 1 steps"


@tool
def word_count(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


def _specs(language: Language, detail: str) -> list[dict[str, Any]]:
    return [convert_to_openai_tool(t) for t in task_tools(language=language, detail=detail)]  # type: ignore[arg-type]


def _types(schema: dict[str, Any]) -> Any:
    """What values an argument schema accepts, the null alternative of an optional one aside."""
    options = [o for o in schema.get("anyOf", [schema]) if o != {"type": "null"}]
    keep = ("type", "enum", "items")
    return [{k: v for k, v in option.items() if k in keep} for option in options]


@pytest.mark.parametrize("language", LANGUAGES)
def test_compact_tools_keep_every_name_argument_type_and_required_field(language: Language) -> None:
    full, compact = _specs(language, "full"), _specs(language, "compact")
    assert [s["function"]["name"] for s in compact] == list(TASK_TOOL_NAMES)
    for long, short in zip(full, compact, strict=True):
        long_args, short_args = long["function"]["parameters"], short["function"]["parameters"]
        assert short_args["type"] == "object"
        assert list(short_args["properties"]) == list(long_args["properties"])
        assert short_args.get("required", []) == long_args.get("required", [])
        for name, schema in long_args["properties"].items():
            assert _types(short_args["properties"][name]) == _types(schema), name
        assert "$defs" not in json.dumps(short) and '"title"' not in json.dumps(short)
        assert short["function"]["description"]


@pytest.mark.parametrize(
    ("language", "ascii_only", "most"),
    [("en", True, 0.45), ("zh", True, 0.4), ("zh", False, 0.55)],
)
def test_compact_tools_are_about_half_the_full_ones_or_less(
    language: Language, ascii_only: bool, most: float
) -> None:
    """JSON characters; Chinese is dense, so unescaped the fixed JSON structure weighs more."""
    full = len(json.dumps(_specs(language, "full"), ensure_ascii=ascii_only))
    compact = len(json.dumps(_specs(language, "compact"), ensure_ascii=ascii_only))
    assert compact <= most * full, (compact, full)


def test_compact_tools_validate_and_run_like_the_full_ones() -> None:
    compact = {t.name: t for t in task_tools(detail="compact", store=None)}
    assert type(compact["TaskCreate"]).__name__ == "CompactTaskTool"
    problem = compact["TaskGet"].invoke(
        {"type": "tool_call", "id": "1", "name": "TaskGet", "args": {}}
    )
    assert "taskId" in problem.text  # validated by the full argument model, reported to the model


def test_the_middleware_offers_the_detail_asked_for() -> None:
    middleware = pytest.importorskip("replan.tools.task_middleware")
    offered = middleware.TaskToolsMiddleware(language="zh", detail="compact").tools
    assert [convert_to_openai_tool(t) for t in offered] == _specs("zh", "compact")


def test_an_unknown_detail_is_refused() -> None:
    with pytest.raises(ValueError, match="detail must be one of full, compact"):
        task_tools(detail="tiny")  # type: ignore[arg-type]


def test_context_refuses_an_unknown_task_tools_choice() -> None:
    assert Context().task_tools is None  # the graph's choice: none, or compact with a store
    with pytest.raises(ValueError, match="task_tools must be one of full, compact, none"):
        Context(task_tools="some")  # type: ignore[arg-type]


class CallsTaskCreate:
    """The plan–execute script, except that the executor's first turn calls TaskCreate."""

    def __call__(self, request: dict[str, Any]) -> Reply:
        first_turn = not any(m.get("role") == "tool" for m in request["messages"])
        if script.classify(request).role == "executor" and first_turn:
            return tool_call("TaskCreate", {"subject": "Draft", "description": "Write the notes"})
        return script.respond(request)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with ScriptedOpenAIServer(CallsTaskCreate()) as scripted:
        yield scripted


def _by_role(requests: list[dict[str, Any]], role: str) -> list[dict[str, Any]]:
    return [r for r in requests if script.classify(r).role == role]


def _system(request: dict[str, Any]) -> str:
    """The head every request of a run starts with."""
    return str(request["messages"][0]["content"])


def _asked(request: dict[str, Any]) -> str:
    """What a request asks after the head."""
    return "\n".join(str(m.get("content") or "") for m in request["messages"][1:])


@pytest.mark.parametrize("choice", TASK_TOOLS_CHOICES)
def test_the_executor_is_offered_exactly_the_chosen_task_tools(
    server: ScriptedOpenAIServer, choice: TaskToolsChoice
) -> None:
    graph = build_plan_execute_graph(tools=[word_count], task_tools="compact")
    context = Context(  # tool steps off: the planner lists the executor's tools in full
        model="scripted-model", base_url=server.base_url, task_tools=choice, tool_steps="off"
    )
    result = graph.invoke({"messages": [("user", OBJECTIVE)]}, context=context)

    first, *later = _by_role(server.requests, "executor")
    user_spec = convert_to_openai_tool(word_count)
    expected = [user_spec, *(_specs("en", choice) if choice != "none" else [])]
    assert first["tools"] == expected
    listed = [line.split("(")[0] for line in _system(first).splitlines()[1:]]
    assert listed == ["- word_count"]  # the caller's; the task tools come with their schemas
    assert ("Task tools share a list" in _asked(first)) is (choice != "none")
    planner = _by_role(server.requests, "planner")[0]
    assert _system(planner) == _system(first)  # one head for every request of the run
    # The loop runs exactly the tools offered: the call works, or is refused as unknown.
    reply = next(m for m in later[0]["messages"] if m["role"] == "tool")
    if choice == "none":
        assert "TaskCreate is not a valid tool" in reply["content"]
        assert result["executed_steps"][0]["status"] == "done"
    else:
        assert reply["content"].startswith("Task #1 created")


def test_a_run_with_no_tools_at_all_is_answered_in_one_request_offering_none(
    server: ScriptedOpenAIServer,
) -> None:
    graph = build_plan_execute_graph()  # the default: no task tools
    context = Context(model="scripted-model", base_url=server.base_url)
    result = graph.invoke({"messages": [("user", OBJECTIVE)]}, context=context)

    (only,) = server.requests
    assert script.classify(only).role == "answer" and "tools" not in only
    assert _asked(only).startswith(OBJECTIVE) and result["executed_steps"] == []
    assert result["response"] == f"{script.DIRECT_ANSWER} {' '.join(OBJECTIVE.split()[:8])}"


def test_the_cli_flag_reaches_the_request_and_is_stored(
    server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    ran = invoke(capsys, "run", OBJECTIVE, "--thread-id", "t", "--task-tools", "full")
    assert ran.code == 0, ran.err
    first = _by_role(server.requests, "executor")[0]
    assert first["tools"] == _specs("en", "full")
    shown = invoke(capsys, "show", "--thread-id", "t", "--json")
    assert json.loads(shown.out)["settings"]["task_tools"] == "full"
    with pytest.raises(SystemExit) as refused:
        invoke(capsys, "run", OBJECTIVE, "--task-tools", "some")
    assert refused.value.code == 2
    assert "--task-tools: invalid choice: 'some'" in capsys.readouterr().err


def test_the_benchmark_runs_offline(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["prompt_weight.py"])
    runpy.run_path(str(ROOT / "benchmarks" / "prompt_weight.py"), run_name="__main__")
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line.split() for line in lines[1:5]}
    assert list(rows) == [*TASK_TOOLS_CHOICES, "tutorial"]
    chars = {name: int(row[1].replace(",", "")) for name, row in rows.items()}
    assert chars["none"] < chars["compact"] <= 0.6 * chars["full"]
    assert rows["tutorial"][3] == "x1.00" and rows["full"][4] == "x1.00"
    assert "tokens" not in lines[0] and "characters only" in lines[-1]


def test_the_benchmark_counts_tokens_with_a_one_token_request() -> None:
    """The token path replays a kept request as is, asking for one token (the scripted
    server's usage figures are not tokens; here they only show the count is read)."""
    bench = runpy.run_path(str(ROOT / "benchmarks" / "prompt_weight.py"))
    kept = {"messages": [{"role": "user", "content": "hi"}], "tools": [], "stream": True}
    with ScriptedOpenAIServer(script.respond) as server:
        tokens, seconds = bench["count_tokens"](server.base_url, "local-model", kept)
        (sent,) = server.requests
        ((_, reported),) = server.usages
    assert reported is not None and tokens == reported["prompt_tokens"] and seconds > 0
    assert sent == {
        "messages": kept["messages"],
        "tools": [],
        "model": "local-model",
        "max_tokens": 1,
    }
    with pytest.raises(bench["ServerError"], match="no prompt token count"):
        bench["count_tokens"]("http://127.0.0.1:9/v1", "local-model", kept)


def test_the_benchmark_reports_a_tokenizer_it_cannot_use(tmp_path: Path) -> None:
    bench = runpy.run_path(str(ROOT / "benchmarks" / "prompt_weight.py"))
    missing = str(tmp_path / "missing.gguf")
    with pytest.raises(bench["ServerError"], match="missing.gguf: no prompt token count"):
        bench["gguf_tokens"](missing, sys.executable, [{"messages": []}])
