"""Tokens and cost of a run: every model call counted once, for its node and its plan step,
through the real ChatOpenAI client and the scripted server, whose reported usage depends on
each request and reply; then `show`, `--json` and the progress line of the `replan` command."""

from __future__ import annotations

import asyncio
import functools
import io
import json
import operator
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from langchain_core.messages import AIMessage
from langchain_openai import ChatOpenAI
from pydantic import SecretStr
from rich.console import Console

from replan.cli.display import Lane, LiveDisplay, NullDisplay
from replan.cli.pricing import KNOWN_PRICES, Price, cost, known_price, run_pricing
from replan.cli.progress import ProgressPrinter
from replan.graphs.context import Context
from replan.graphs.plan_execute import build_plan_execute_graph
from replan.state.usage import (
    call_tally,
    merge_usage,
    node_usage,
    step_usage,
    tally_text,
    total_tally,
)
from replan.testing import Quirks, Reply, ScriptedOpenAIServer, text, tool_call
from replan.testing import plan_script as script
from tests.support.cli_harness import PLANNED, run_cli
from tests.support.fake_models import ANSWER_CALLS, Mode, both_modes, run

OBJECTIVE = "Count in 3 parallel steps"
TOPIC = "count in 3 parallel steps"


def _uneven(request: dict[str, Any]) -> Reply:
    """The scripted model, with steps that differ in what they cost: step N's result is about
    50·N characters long, and step 2 lists the tasks before it answers (two model calls)."""
    call = script.classify(request)
    if call.role == "executor" and call.step is not None:
        if call.step == 2 and request["messages"][-1]["role"] != "tool":
            return tool_call("TaskList", {})
        return text(script.step_result(request, 50 * call.step))
    return script.respond(request)


def _expected(server: ScriptedOpenAIServer, role: str, step: int | None = None) -> dict[str, int]:
    """The tally of the usage the server reported for `role` (and `step`) requests."""
    reported = [
        usage
        for request, usage in server.usages
        if script.classify(request).role == role
        and (step is None or script.classify(request).step == step)
    ]
    known = [usage for usage in reported if usage is not None]
    return {
        "calls": len(reported),
        "no_usage": len(reported) - len(known),
        "input": sum(u["prompt_tokens"] for u in known),
        "cached": sum(u["prompt_tokens_details"]["cached_tokens"] for u in known),
        "output": sum(u["completion_tokens"] for u in known),
    }


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with ScriptedOpenAIServer(_uneven) as scripted:
        yield scripted


def _context(server: ScriptedOpenAIServer) -> Context:
    return Context(model="scripted-model", base_url=server.base_url)


def _counts(tally: dict[str, Any]) -> dict[str, Any]:
    """`tally` without the cost `--json` adds to it."""
    return {key: value for key, value in tally.items() if key != "cost_usd"}


def _assert_attributed(usage: dict[str, Any], server: ScriptedOpenAIServer) -> None:
    """Every node's and every step's tally is what the server reported for its requests (the
    `--json` document adds each step's text)."""
    for node in ("planner", "executor", "replanner"):
        assert _counts(usage["nodes"][node]) == _expected(server, node), node
    assert {key: _counts(step) for key, step in usage["steps"].items()} == {
        str(i): {**_text_of(usage, i), **_expected(server, "executor", i)} for i in (1, 2, 3)
    }


def _text_of(usage: dict[str, Any], step: int) -> dict[str, str]:
    """`{"step": text}` where the usage document has step texts (`--json`), else nothing."""
    has_text = "step" in next(iter(usage["steps"].values()))
    return {"step": script.step_text(step, 3, TOPIC)} if has_text else {}


# --- through the graph ---------------------------------------------------------------------


@both_modes
def test_usage_per_node_and_per_step_of_a_parallel_wave(
    server: ScriptedOpenAIServer, mode: Mode
) -> None:
    result = run(
        build_plan_execute_graph(task_tools="compact"), OBJECTIVE, mode, context=_context(server)
    )

    assert result["response"].startswith("All 3 steps")
    usage = result["usage"]
    _assert_attributed(usage, server)
    assert [usage["steps"][key]["calls"] for key in "123"] == [1, 2, 1]
    outputs = [usage["steps"][key]["output"] for key in "123"]
    assert outputs[0] < outputs[2]  # each step got its own calls' tokens, not another's
    assert usage["nodes"]["planner"]["cached"] == 0  # the first request: nothing cached yet
    assert usage["nodes"]["replanner"]["cached"] > 0  # the head the requests share is read
    assert total_tally(usage)["calls"] == len(server.requests)


def test_streamed_replies_report_their_usage_too(server: ScriptedOpenAIServer) -> None:
    async def streamed() -> dict[str, Any]:
        graph = build_plan_execute_graph(task_tools="compact")
        last: dict[str, Any] = {}
        tokens = 0
        async for mode, chunk in graph.astream(
            {"messages": [("user", OBJECTIVE)]},
            context=_context(server),
            stream_mode=["messages", "values"],
            subgraphs=False,
        ):
            if mode == "values":
                last = cast(dict[str, Any], chunk)
            else:
                tokens += 1
        assert tokens > 0
        return last

    usage = asyncio.run(streamed())["usage"]
    assert all(r["stream"] and r["stream_options"]["include_usage"] for r in server.requests)
    _assert_attributed(usage, server)
    assert total_tally(usage)["no_usage"] == 0


def test_a_server_without_usage_counts_calls_with_unknown_tokens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with ScriptedOpenAIServer(_uneven, quirks=Quirks(usage=False)) as server:
        result = run(
            build_plan_execute_graph(task_tools="compact"),
            OBJECTIVE,
            "sync",
            context=_context(server),
        )
    _assert_attributed(result["usage"], server)
    total = total_tally(result["usage"])
    calls = 6 + ANSWER_CALLS
    assert total["calls"] == total["no_usage"] == len(server.requests) == calls
    assert tally_text(total) == f"{calls} model calls: tokens unknown"
    assert cost(total, KNOWN_PRICES["gpt-4o-mini"]) is None


# --- the arithmetic ------------------------------------------------------------------------


def test_merged_usage_adds_calls_and_keeps_each_steps_text() -> None:
    with_usage = call_tally({"input_tokens": 100, "output_tokens": 10, "total_tokens": 110})
    cached = call_tally(
        {"input_tokens": 50, "output_tokens": 5, "input_token_details": {"cache_read": 40}}
    )
    merged = merge_usage(
        merge_usage(step_usage("executor", 7, with_usage), node_usage("planner", cached)),
        step_usage("executor", 7, call_tally(None)),
    )
    assert merged["steps"] == {
        "7": {"calls": 2, "no_usage": 1, "input": 100, "cached": 0, "output": 10}
    }
    assert total_tally(merged) == {
        "calls": 3,
        "no_usage": 1,
        "input": 150,
        "cached": 40,
        "output": 15,
    }
    assert tally_text(merged["steps"]["7"]) == (
        "2 model calls: 100 in, 10 out, plus unknown tokens of 1 model call without usage"
    )


def test_cost_prices_cached_input_at_its_own_rate() -> None:
    tally = call_tally(
        {
            "input_tokens": 3_000_000,
            "output_tokens": 1_000_000,
            "input_token_details": {"cache_read": 1_000_000},
        }
    )
    assert cost(tally, Price(input=2.0, cached_input=0.5, output=8.0)) == 2 * 2.0 + 0.5 + 8.0
    assert cost(tally, Price(input=2.0, output=8.0)) == 3 * 2.0 + 8.0


def test_list_prices_apply_only_to_openai_itself() -> None:
    assert known_price("gpt-4o-mini", None) == KNOWN_PRICES["gpt-4o-mini"]
    assert known_price("gpt-4o-mini", "https://api.openai.com/v1") is not None
    assert known_price("gpt-4o-mini", "http://127.0.0.1:8080/v1") is None  # a local server
    assert known_price("qwen", None) is None
    given = run_pricing({"model": "gpt-4o", "price_in": 1, "price_out": 3})
    assert given is not None and given.price == Price(input=1, output=3)


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"price_in": -1.0, "price_out": 1.0}, "price_in must be 0 or more"),
        ({"price_in": float("nan"), "price_out": 1.0}, "price_in must be a number"),
        ({"price_in": "1", "price_out": 1.0}, "price_in must be a number"),
        ({"price_out": 1.0}, "price_in and price_out go together"),
    ],
)
def test_bad_prices_are_refused_by_the_context(fields: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        Context(**fields)


def test_progress_counts_a_running_step_once_its_update_lands() -> None:
    printer = ProgressPrinter(NullDisplay())
    printer.lanes["executor:a"] = Lane("Step 4: x", 0.0, step_id=4)
    turn = node_usage("act", call_tally({"input_tokens": 30, "output_tokens": 3}))
    printer.handle(("executor:a",), "updates", {"act": {"messages": [], "usage": turn}})
    assert printer.usage_text() == "Tokens so far: 1 model call: 30 in, 3 out"
    step = step_usage("executor", 4, total_tally(turn))
    printer.handle((), "updates", {"executor": {"executed_steps": [], "usage": step}})
    assert printer.usage_text() == "Tokens so far: 1 model call: 30 in, 3 out"  # not twice


# --- the command line ----------------------------------------------------------------------


def _json(outcome: Any) -> Any:
    assert outcome.code == 0, outcome.err
    return json.loads(outcome.out)


def _tokens_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("Tokens so far: ")]


@pytest.mark.slow  # real processes
def test_show_json_and_progress_report_usage_and_cost(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(_uneven) as server:
        done = run_cli(
            server, tmp_path, "run", *PLANNED, OBJECTIVE, "--thread-id", "u",
            "--price-in", "1", "--price-out", "2",
        )  # fmt: skip
        assert done.code == 0, done.err
        usage = _json(run_cli(None, tmp_path, "show", "--thread-id", "u", "--json"))["usage"]
        _assert_attributed(usage, server)
    total = _expected(server, "planner")
    for role in ("executor", "replanner", *["answer"] * ANSWER_CALLS):
        total = {key: total[key] + _expected(server, role)[key] for key in total}
    dollars = (total["input"] * 1 + total["output"] * 2) / 1e6
    assert usage["total"] == {**total, "cost_usd": pytest.approx(dollars)}
    assert usage["pricing"]["source"] == "price_in/price_out"

    lines = _tokens_lines(done.err)
    assert len(lines) >= 4 and lines[-1] == (
        f"Tokens so far: {total['calls']} model calls: {total['input']:,} in "
        f"({total['cached']:,} cached), {total['output']:,} out; "
        f"cost ${dollars:.4f}"
    )
    shown = run_cli(None, tmp_path, "show", "--thread-id", "u").out
    report = shown.split("Usage:\n")[1].split("\nAnswer:")[0].splitlines()
    assert report[0].startswith(f"  total: {total['calls']} model calls: ")
    assert [line.split(":")[0].strip() for line in report] == [
        "total",
        "planner",
        "executor",
        *(f"step {i} (Step {i} of 3 [{TOPIC}])" for i in (1, 2, 3)),
        "replanner",
        *["answer"] * ANSWER_CALLS,
    ]
    assert report[4].startswith("    step 2 (Step 2 of 3 [count in 3 parallel steps]): 2 model")

    free = run_cli(
        None, tmp_path, "show", "--thread-id", "u", "--json", "--price-in", "0", "--price-out", "0"
    )
    assert _json(free)["usage"]["total"]["cost_usd"] == 0


@pytest.mark.slow  # real processes
def test_a_server_without_usage_shows_unknown_tokens(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(_uneven, quirks=Quirks(usage=False)) as server:
        done = run_cli(server, tmp_path, "run", *PLANNED, OBJECTIVE, "--thread-id", "n")
    assert done.code == 0, done.err
    calls = 6 + ANSWER_CALLS
    assert _tokens_lines(done.err)[-1] == f"Tokens so far: {calls} model calls: tokens unknown"
    shown = run_cli(
        None, tmp_path, "show", "--thread-id", "n", "--price-in", "1", "--price-out", "1"
    ).out
    assert (
        f"  total: {calls} model calls: tokens unknown; cost unknown (price_in/price_out)" in shown
    )
    assert "  planner: 1 model call: tokens unknown; cost unknown" in shown
    total = _json(run_cli(None, tmp_path, "show", "--thread-id", "n", "--json"))["usage"]["total"]
    assert total == {
        "calls": calls,
        "no_usage": calls,
        "input": None,
        "cached": None,
        "output": None,
    }


@pytest.mark.slow  # real processes
def test_bad_price_flags_are_one_line_usage_errors(tmp_path: Path) -> None:
    for args, message in [
        (
            ["run", "x", "--price-in", "-1", "--price-out", "1"],
            "a price must be 0 or more",
        ),
        (
            ["run", "x", "--price-in", "cheap", "--price-out", "1"],
            "not a number: 'cheap'",
        ),
        (["resume", "--thread-id", "t", "--price-out", "inf"], "not a finite number"),
        (
            ["run", "x", "--price-in", "1"],
            "replan: --price-in and --price-out go together: give",
        ),
        (["show", "--thread-id", "t", "--price-in", "1"], "--price-in and --price-out go"),
    ]:
        outcome = run_cli(None, tmp_path, *args)
        assert outcome.code == 2 and len(outcome.err.splitlines()) == 1, (args, outcome.err)
        assert message in outcome.err and not re.search("Traceback", outcome.err)
    assert not (tmp_path / "replan.sqlite").exists()


def test_the_live_display_shows_the_running_total_at_its_foot_and_keeps_it() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=100, record=True)
    live = LiveDisplay(console)
    printer = ProgressPrinter(live)
    printer.lanes["executor:a"] = lane = Lane("Step 1: Fetch A", 0.0, step_id=1)
    turn = node_usage("act", call_tally({"input_tokens": 1200, "output_tokens": 34}))
    printer.handle(("executor:a",), "updates", {"act": {"messages": [], "usage": turn}})
    console.print(live.render([lane]))
    drawn = console.export_text(clear=True).splitlines()
    total = "Tokens so far: 1 model call: 1,200 in, 34 out"
    assert drawn[0].startswith("Step 1: Fetch A") and drawn[-1] == total

    with live:
        pass
    assert console.export_text().splitlines()[-1] == total  # kept once the live region is gone


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("usage", [True, False])
def test_the_scripted_server_reports_usage_or_none_at_all(streaming: bool, usage: bool) -> None:
    with ScriptedOpenAIServer(quirks=Quirks(usage=usage)) as server:
        server.push(text("one two"))
        model = ChatOpenAI(
            model="m", base_url=server.base_url, api_key=SecretStr("x"), stream_usage=True
        )
        reply: AIMessage
        if streaming:
            reply = functools.reduce(operator.add, model.stream("hi"))
        else:
            reply = model.invoke("hi")
    assert (reply.usage_metadata is not None) == usage
    assert (server.usages[0][1] is not None) == usage
