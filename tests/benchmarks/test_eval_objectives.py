"""The objective suite (benchmarks/eval_objectives.py): the harness against the scripted
server, its command line, and answer checkers that reject wrong answers."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.tools import ToolException

from benchmarks.eval_objectives import (
    COUNTERS,
    DECISION_MAX_TOKENS,
    DESIGNS,
    EXECUTOR_MAX_TOKENS,
    NOT_COUNTED,
    Bounds,
    Meter,
    Server,
    Totals,
    counters,
    main,
    per_solved,
    run_one,
    scripted_model,
)
from benchmarks.objectives import (
    CATALOGUE,
    LOOKUPS,
    OBJECTIVES,
    Kit,
    Order,
    Outcome,
    check_catalogue,
    check_invoice_total,
    check_meeting,
    check_order,
    check_paper_order,
    check_plan_document,
    check_tasks,
    check_temperature_gap,
    check_tickets,
    check_units,
    check_warehouse,
    check_weather,
)
from benchmarks.scripted_answers import respond, results_in
from replan.state.plans import PlanUpdate
from replan.state.tasks import TaskContext
from replan.testing import MODEL_ID, ScriptedOpenAIServer, text, tool_call
from replan.testing.requests import tool_names
from replan.tools.task_tools import run_task_call
from tests.support.mistaken_replies import mistaken

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "eval_objectives.py"


def outcome(tmp_path: Path, response: str = "", tasks: TaskContext | None = None) -> Outcome:
    return Outcome(response, tasks or TaskContext(), Kit(tmp_path))


@pytest.mark.slow
def test_scripted_suite_solves_every_objective_with_every_design_and_totals_add_up() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--json"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    runs = report["runs"]
    assert {(r["objective"], r["design"]) for r in runs} == {
        (name, design) for name in OBJECTIVES for design in DESIGNS
    }
    assert all(r["solved"] and not r["error"] for r in runs), runs
    for design in DESIGNS:
        mine = [r for r in runs if r["design"] == design]
        total = report["totals"][design]
        assert (total["runs"], total["solved"]) == (len(OBJECTIVES), len(OBJECTIVES))
        for key in ("model_calls", "input_tokens", "output_tokens"):
            assert total[key] == sum(r[key] for r in mine) > 0
        counted = {} if design == "tutorial" else COUNTERS  # the tutorial counts none
        assert total["counters"] == {c: sum(r["counters"][c] for r in mine) for c in counted}
        assert total["wall"] == pytest.approx(sum(r["wall"] for r in mine))
    ratio = report["ratios"]["replan/tutorial"]
    tutorial, replan = report["totals"]["tutorial"], report["totals"]["replan"]
    assert ratio["model_calls"] == pytest.approx(replan["model_calls"] / tutorial["model_calls"])
    waves = {(r["objective"], r["design"]): r["widest_wave"] for r in runs}
    assert waves["catalogue_total", "replan"] == len(CATALOGUE)  # the look-ups ran side by side
    assert waves["catalogue_total", "tutorial"] == 1
    progress = done.stderr.strip().splitlines()
    assert len(progress) == len(runs) and all(" solved in " in line for line in progress)


@pytest.mark.parametrize(
    "argv",
    [
        ["--objective", "nope"],
        ["--repeat", "0"],
        ["--run-timeout", "soon"],
        ["--bogus"],
        ["--quirk", "nope=1"],
        ["--quirk", "calls_as_text"],
        ["--quirk", "run_on=true", "--base-url", "http://127.0.0.1:9/v1"],
    ],
)
def test_bad_usage_is_one_line_and_exit_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("eval_objectives.py: error:")


def test_a_run_that_times_out_is_unsolved_with_the_reason(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["--objective", "unit_chain", "--design", "replan", "--run-timeout", "0.001"])
    assert code == 1
    out = capsys.readouterr()
    assert "unit_chain / replan: NOT solved (stopped after the run timeout" in out.err
    assert "total             replan              0/1" in out.out


def test_a_run_stopped_by_its_bounds_is_unsolved(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--objective", "unit_chain", "--design", "when_needed", "--max-iterations", "1"]
    assert main([*argv, "--json"]) == 1
    out = capsys.readouterr()
    (run,) = json.loads(out.out)["runs"]
    assert (run["solved"], run["error"]) == (False, "stopped: max_iterations")
    assert "unit_chain / when_needed: NOT solved (stopped: max_iterations)" in out.err


def test_every_run_gets_fresh_tools(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--objective", "flaky_weather", "--design", "tutorial", "--repeat", "2", "--json"]
    assert main(argv) == 0  # the weather tool refuses its first call in each run
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [run["model_calls"] for run in runs] == [5, 5]


def test_recovered_text_calls_are_read_from_replans_state(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--objective", "flaky_weather", "--design", "tool_steps_off", "--json"]
    assert main([*argv, "--quirk", "calls_as_text=tagged"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    # plan, 2 x weather; the replanner is then asked for JSON (a forced call came back as text)
    assert run["solved"] and run["counters"]["recovered_calls"] == 3
    assert main(argv) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["counters"]["recovered_calls"] == 0


def test_fallbacks_are_counted_for_replan_designs_and_not_for_the_tutorial(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--objective", "unit_chain", "--quirk", 'refused_modes=["tool_required"]']
    assert main([*argv, "--json"]) == 0  # llama-cpp-python refuses tool_choice "required"
    report = json.loads(capsys.readouterr().out)
    counted = {run["design"]: run["counters"] for run in report["runs"]}
    replan_counts = {"corrected_mistakes": 0, "recovered_calls": 0, "fallbacks": 1}
    assert counted == {
        "replan": replan_counts,
        "when_needed": replan_counts,
        "tool_steps_off": replan_counts,
        "tutorial": {},
    }
    assert report["totals"]["tutorial"]["counters"] == {}
    assert main(argv) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    columns = [counter.column for counter in COUNTERS.values()]
    assert columns == ["mistakes", "text calls", "fallbacks"]
    (tutorial,) = [row for row in rows if row[:2] == ["unit_chain", "tutorial"]]
    (replan,) = [row for row in rows if row[:2] == ["unit_chain", "replan"]]
    assert tutorial[-4:-1] == [NOT_COUNTED] * 3 and replan[-4:-1] == ["0", "0", "1"]


def test_counters_read_replans_state() -> None:
    refusal = {"refused": "tool_required", "asked": "x", "status": 500, "fallback": "tool_named"}
    state = {
        "corrected_mistakes": 2,
        "recovered_calls": 3,
        "decision_mode": {"mode": "json_object", "fallbacks": [refusal, refusal]},
    }
    assert counters(state) == {"corrected_mistakes": 2, "recovered_calls": 3, "fallbacks": 2}
    assert counters({}) == dict.fromkeys(COUNTERS, 0)


def test_the_mistakes_column_counts_the_models_corrected_replies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    replies = {"planner": text("Let me think first."), "executor": tool_call("convert", '{"')}
    with ScriptedOpenAIServer(mistaken(replies, respond)) as scripted:
        server = Server(scripted.base_url, MODEL_ID, "test")
        objective = OBJECTIVES["unit_chain"]
        run = asyncio.run(run_one(objective, "tool_steps_off", server, Bounds()))
    assert run.solved, run.error
    steps = len(objective.script.steps)  # each goes through an executor model loop
    assert run.counters["corrected_mistakes"] == 1 + steps  # the planner's, one per step


def test_catalogue_checker(tmp_path: Path) -> None:
    assert check_catalogue(outcome(tmp_path, "The three cost 84.60 EUR together."))
    assert not check_catalogue(outcome(tmp_path, "The three cost 84.50 EUR together."))
    assert not check_catalogue(outcome(tmp_path, "kettle 24.90, toaster 31.50, blender 28.20"))


def test_units_checker(tmp_path: Path) -> None:
    assert check_units(outcome(tmp_path, "5 miles are 26,400 feet."))
    assert not check_units(outcome(tmp_path, "5 miles are 26,401 feet."))
    assert not check_units(outcome(tmp_path, "5 miles are 8046.72 metres."))


def _tasks(*calls: tuple[str, dict[str, Any]]) -> TaskContext:
    context = TaskContext()
    for name, args in calls:
        run_task_call(context, name, args)
    return context


def test_tasks_checker(tmp_path: Path) -> None:
    notes = ("TaskCreate", {"subject": "Write the release notes", "description": "2.0"})
    publish = ("TaskCreate", {"subject": "Publish the release", "description": "2.0"})
    right = _tasks(notes, publish, ("TaskUpdate", {"taskId": "2", "addBlockedBy": ["1"]}))
    assert check_tasks(outcome(tmp_path, tasks=right))
    backwards = _tasks(notes, publish, ("TaskUpdate", {"taskId": "1", "addBlockedBy": ["2"]}))
    assert not check_tasks(outcome(tmp_path, tasks=backwards))
    assert not check_tasks(outcome(tmp_path, tasks=_tasks(notes, publish)))
    assert not check_tasks(outcome(tmp_path, tasks=_tasks(publish)))


@pytest.mark.parametrize(
    ("content", "status", "solved"),
    [
        ("1. Dig the beds\n2. Plant\n3. Water", "ready", True),
        ("1. Dig the beds\n2. Plant\n3. Water", "draft", False),
        ("1. Plant\n2. Dig the beds\n3. Water", "ready", False),
        ("1. Dig the beds\n2. Plant", "ready", False),
        (None, None, False),
    ],
)
def test_plan_document_checker(
    tmp_path: Path, content: str | None, status: str | None, solved: bool
) -> None:
    done = outcome(tmp_path)
    if content is not None:
        done.kit.plans.upsert(PlanUpdate(name="garden", content=content, status=status))
    assert check_plan_document(done) is solved


def test_weather_checker_and_the_flaky_tool(tmp_path: Path) -> None:
    kit = Kit(tmp_path)
    with pytest.raises(ToolException, match="busy"):
        kit.weather("Oslo")
    forecast = kit.weather("Oslo")
    assert check_weather(Outcome(forecast, TaskContext(), kit))
    assert not check_weather(outcome(tmp_path, "Tomorrow's low in Oslo is 6.1 °C."))


def test_order_checker(tmp_path: Path) -> None:
    done = outcome(tmp_path, "Ordered: ORD-4711")
    assert not check_order(done)  # no order was placed
    with pytest.raises(ToolException, match="discontinued"):
        done.kit.place_order("P-100", 2)
    done.kit.place_order("P-200", 2)
    assert check_order(done)
    assert not check_order(outcome(tmp_path, "Ordered."))
    twice = outcome(tmp_path, "ORD-4711 and ORD-4712")
    twice.kit.orders.extend([Order("P-200", 2, "ORD-4711"), Order("P-200", 2, "ORD-4712")])
    assert not check_order(twice)
    wrong_quantity = outcome(tmp_path, "ORD-4711")
    wrong_quantity.kit.orders.append(Order("P-200", 3, "ORD-4711"))
    assert not check_order(wrong_quantity)


def test_tickets_checker(tmp_path: Path) -> None:
    right = "120 USD = 110.4 EUR; 100 GBP = 117 EUR.\nCheaper: USD"
    assert check_tickets(outcome(tmp_path, right))
    assert not check_tickets(outcome(tmp_path, right.replace("Cheaper: USD", "Cheaper: GBP")))
    assert not check_tickets(outcome(tmp_path, "120 USD = 110.4 EUR.\nCheaper: USD"))
    assert not check_tickets(outcome(tmp_path, "120 USD = 110.4 EUR; 100 GBP = 117 EUR."))


def test_meeting_checker(tmp_path: Path) -> None:
    assert check_meeting(outcome(tmp_path, "Both are free at 14:00."))
    assert not check_meeting(outcome(tmp_path, "Both are free at 13:00."))
    assert not check_meeting(outcome(tmp_path, "Both are free in the afternoon."))


def test_tools_refuse_what_they_cannot_do(tmp_path: Path) -> None:
    kit = Kit(tmp_path)
    with pytest.raises(ToolException, match="only does"):
        kit.convert(5, "miles", "feet")
    assert kit.convert(5, "miles", "kilometres") == "5 mi = 8.04672 km"
    with pytest.raises(ToolException, match="cannot evaluate"):
        kit.calculator("__import__('os').getcwd()")
    assert kit.calculator("24.90 + 31.50 + 28.20") == "24.90 + 31.50 + 28.20 = 84.6"


def test_scripted_replanner_reads_reports_from_both_designs_prompts() -> None:
    objective = OBJECTIVES["catalogue_total"]
    tutorial = (
        "['Add up Known so far: [catalogue_total/kettle] kettle costs 24.90 EUR; "
        "[catalogue_total/toaster] toaster costs 31.50 EUR']\n"
        "[('a', '[catalogue_total/kettle] kettle costs 24.90 EUR'), "
        "('b', \"FAILED: [catalogue_total/blender] Error: it's gone\")]"
    )
    assert results_in(objective, tutorial) == {
        "kettle": "kettle costs 24.90 EUR",
        "toaster": "toaster costs 31.50 EUR",
        "blender": "FAILED: Error: it's gone",
    }
    replan = "1. Look up\n   Result: [catalogue_total/total] 1 + 2 = 3\n"
    assert results_in(objective, replan) == {"total": "1 + 2 = 3"}


def _reply(tokens: tuple[int, int] | None) -> LLMResult:
    """A model reply reporting (input, output) tokens, or no usage."""
    usage = tokens and UsageMetadata(
        input_tokens=tokens[0], output_tokens=tokens[1], total_tokens=sum(tokens)
    )
    message = AIMessage("ok", response_metadata={"model_name": "m"}, usage_metadata=usage)
    return LLMResult(generations=[[ChatGeneration(message=message)]])


def test_tokens_are_unknown_unless_every_reply_reported_them() -> None:
    meter = Meter()
    assert meter.tokens("input_tokens") is None  # no reply at all
    meter.on_llm_end(_reply((7, 3)))
    meter.on_llm_end(_reply((5, 1)))
    assert (meter.tokens("input_tokens"), meter.tokens("output_tokens")) == (12, 4)
    meter.on_llm_end(_reply(None))
    assert meter.tokens("input_tokens") is None and meter.tokens("output_tokens") is None


def test_the_lookup_objectives_are_solved_with_tool_calls_and_figures_per_solved_objective(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--objective", "lookups", "--design", "replan", "--timeout", "60", "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    runs = {run["objective"]: run for run in report["runs"]}
    assert list(runs) == list(LOOKUPS)
    # each look-up and each calculation is one tool run
    assert {name: run["tool_calls"] for name, run in runs.items()} == {
        "warehouse_most": 3,
        "temperature_gap": 3,
        "invoice_total": 5,
        "paper_order": 2,
    }
    total = report["totals"]["replan"]
    assert total["tool_calls"] == 13
    spent = report["per_solved"]["replan"]
    assert spent["model_calls"] == pytest.approx(total["model_calls"] / 4)
    tokens = total["input_tokens"] + total["output_tokens"]
    assert spent["tokens"] == pytest.approx(tokens / 4)


def test_the_table_shows_tool_calls_and_what_a_solved_objective_cost(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--objective", "paper_order", "--design", "replan", "--answer", "decision"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    header, row = out.splitlines()[:2]
    assert header.split()[:5] == ["objective", "design", "solved", "calls", "tools"]
    cells = row.split()
    assert cells[:3] == ["paper_order", "replan", "yes"] and cells[4] == "2"  # price, product
    calls = int(cells[3])
    assert f"replan per solved objective: model calls {calls}.0, tool calls 2.0, tokens " in out


def test_nothing_solved_costs_nothing_per_solved_objective() -> None:
    spent = per_solved(Totals(runs=2, model_calls=9, tool_calls=3))
    assert spent == {"model_calls": None, "tool_calls": None, "tokens": None}
    unknown = per_solved(Totals(runs=1, solved=1, model_calls=4, input_tokens=None))
    assert unknown == {"model_calls": 4.0, "tool_calls": 0.0, "tokens": None}


def test_lookup_checkers(tmp_path: Path) -> None:
    assert check_warehouse(outcome(tmp_path, "Warehouse south: 340 units."))
    assert not check_warehouse(outcome(tmp_path, "Warehouse north: 120 units."))
    assert not check_warehouse(outcome(tmp_path, "north 120, south 340, east 275: south"))
    assert check_temperature_gap(outcome(tmp_path, "Lisbon is 13.5 °C warmer."))
    assert not check_temperature_gap(outcome(tmp_path, "Lisbon is 10 degrees warmer."))
    assert check_invoice_total(outcome(tmp_path, "The total is 505.75 EUR."))
    assert not check_invoice_total(outcome(tmp_path, "The total is 706.75 EUR."))
    assert check_paper_order(outcome(tmp_path, "12 boxes cost 52.20 EUR."))
    assert not check_paper_order(outcome(tmp_path, "A box costs 4.35 EUR."))


def test_the_suite_calculator_is_replans_computing_tool(tmp_path: Path) -> None:
    (calculator,) = Kit(tmp_path).tools(["calculator"])
    assert calculator.metadata == {"computes": True}
    assert calculator.invoke({"expression": "120.50 + 75.25 + 310.00"}).endswith("= 505.75")


def test_every_design_gets_the_same_task_tools_and_reply_bounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    objective = OBJECTIVES["release_tasks"]  # carried out with the task tools
    offered: dict[str, dict[str, str]] = {}
    limits: dict[str, set[tuple[str, int]]] = {}
    for design in ("replan", "tutorial"):
        with ScriptedOpenAIServer(scripted_model) as scripted:
            server = Server(scripted.base_url, MODEL_ID, "test")
            run = asyncio.run(run_one(objective, design, server, Bounds()))
            requests = scripted.requests
        assert run.solved, run.error
        executors = [r for r in requests if "TaskCreate" in tool_names(r)]
        assert executors, design
        offered[design] = {
            t["function"]["name"]: t["function"]["description"]
            for t in executors[0]["tools"]
            if t["function"]["name"].startswith("Task")
        }
        limits[design] = {
            ("decision" if "TaskCreate" not in tool_names(r) else "executor", r["max_tokens"])
            for r in requests
        }
    assert offered["tutorial"] == offered["replan"]  # the same (compact) task tools
    expected = {("decision", DECISION_MAX_TOKENS), ("executor", EXECUTOR_MAX_TOKENS)}
    assert limits["tutorial"] == limits["replan"] == expected
