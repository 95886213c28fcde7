"""The objective suite (benchmarks/eval_objectives.py): the harness against the scripted
server, its command line, its two halves, and answer checkers that reject wrong answers.

No test names an objective of the held-back half or spells its data (`HELD_BACK`): a property
that only such an objective has is shown on an objective of the tests' own, below; a held-back
objective's checker is tested with answers made from the suite's constants."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.tools import ToolException

from benchmarks import eval_objectives, scripted_answers
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
    chosen,
    counters,
    main,
    per_solved,
    run_one,
    scripted_model,
)
from benchmarks.objectives import (
    BLOCKING,
    BUSY_HOURS,
    CATALOGUE,
    DEVELOPMENT,
    ERROR,
    FORECASTS,
    HELD_BACK,
    OBJECTIVES,
    ORDERED,
    PARTS,
    RATES_TO_EUR,
    SUITE,
    TICKETS,
    WAREHOUSES,
    WORKDAY,
    Kit,
    Objective,
    Order,
    Outcome,
    Scripted,
    Step,
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
    first_common_free_hour,
    mentions,
    number_text,
    retrying,
)
from benchmarks.scripted_answers import respond, results_in
from replan.state.plans import PlanUpdate
from replan.state.tasks import TaskContext
from replan.testing import MODEL_ID, ScriptedOpenAIServer, text, tool_call
from replan.testing.requests import tool_names
from replan.tools.task_tools import run_task_call
from tests.support.mistaken_replies import mistaken

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "eval_objectives.py"
REPO = SCRIPT.parents[1]


def outcome(tmp_path: Path, response: str = "", tasks: TaskContext | None = None) -> Outcome:
    return Outcome(response, tasks or TaskContext(), Kit(tmp_path))


# --- objectives of the tests' own ------------------------------------------------------------

PAGES = 312


@dataclass
class OwnKit(Kit):
    """The suite's tools and one of the tests': a look-up whose service refuses its first call."""

    page_calls: int = 0

    def page_count(self, book: str) -> str:
        """How many pages a book has. The service is sometimes busy: try again then."""
        self.page_calls += 1
        if self.page_calls == 1:
            raise ToolException(f"{ERROR} the library service is busy, try again")
        return f"{book.strip()}: {PAGES} pages"


REFUSES_FIRST = Objective(
    "refuses_first",
    "How many pages has the book 'Lanterns'? Use the page_count tool.",
    ("page_count",),
    lambda done: mentions(done.response, PAGES),
    Scripted(
        {"pages": Step("Find the page count of 'Lanterns'", (), retrying(
            "page_count", {"book": "Lanterns"}
        ))},
        ("pages",),
    ),
)  # fmt: skip
"""An objective whose one tool refuses its first call in each run (with fresh tools)."""


def _fence_tasks(prompt: str, results: list[str]) -> tuple[str, dict[str, Any]] | None:
    if not results:
        return "TaskCreate", {"subject": "Buy the paint", "description": "Two litres."}
    if len(results) == 1:
        return "TaskCreate", {"subject": "Paint the fence", "description": "Two coats."}
    if len(results) == 2:
        paint, fence = (re.findall(r"#(\d+)", result)[0] for result in results)
        return "TaskUpdate", {"taskId": fence, "addBlockedBy": [paint]}
    return None


def _fence_checked(done: Outcome) -> bool:
    """A task to paint the fence, blocked by the task to buy the paint."""
    by_word = {task.subject.split()[0]: task for task in done.tasks.sorted_tasks()}
    buy, paint = by_word.get("Buy"), by_word.get("Paint")
    return buy is not None and paint is not None and buy.id in paint.blocked_by


WITH_TASK_TOOLS = Objective(
    "fence_tasks",
    "Set up the task list for painting the fence: a task to buy the paint and a task to paint "
    "the fence, which is blocked by the task to buy the paint.",
    (),
    _fence_checked,
    Scripted(
        {"tasks": Step("Create both fence tasks and block painting on buying", (), _fence_tasks)},
        ("tasks",),
    ),
    task_list=True,
)
"""An objective carried out with the task tools only."""


@pytest.fixture
def own_objectives(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The tests' own objectives, as `--objective` names and the scripted model solves them."""
    monkeypatch.setattr(eval_objectives, "Kit", OwnKit)
    monkeypatch.setattr(scripted_answers, "SUITE", (*SUITE, REFUSES_FIRST, WITH_TASK_TOOLS))
    for objective in (REFUSES_FIRST, WITH_TASK_TOOLS):
        monkeypatch.setitem(OBJECTIVES, objective.name, objective)
    yield


@pytest.mark.slow
def test_scripted_suite_solves_every_objective_with_every_design_and_totals_add_up() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--objective", "all", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr  # one plain request solves no tool's objective
    report = json.loads(done.stdout)
    runs = report["runs"]
    assert {(r["objective"], r["design"]) for r in runs} == {
        (name, design) for name in OBJECTIVES for design in DESIGNS
    }
    agents = [r for r in runs if r["design"] != "plain"]
    assert all(r["solved"] and not r["error"] for r in agents), agents
    written = {name for name, objective in OBJECTIVES.items() if objective.script.answer}
    assert {r["objective"] for r in runs if r["design"] == "plain" and r["solved"]} == written
    for design in DESIGNS:
        mine = [r for r in runs if r["design"] == design]
        total = report["totals"][design]
        solved = len(written) if design == "plain" else len(OBJECTIVES)
        assert (total["runs"], total["solved"]) == (len(OBJECTIVES), solved)
        for key in ("model_calls", "input_tokens", "output_tokens"):
            assert total[key] == sum(r[key] for r in mine) > 0
        counted = {} if design in ("tutorial", "plain") else COUNTERS  # they count none
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
    replan = {r["objective"]: r for r in runs if r["design"] == "replan"}
    assert all(replan[name]["model_calls"] == 1 for name in written)  # answered at once


@pytest.mark.parametrize(
    "argv",
    [
        ["--objective", "nope"],
        ["--objective", "lookups"],  # the look-ups are now part of the development half
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
    assert re.search(r"^total +replan +0/1 ", out.out, re.MULTILINE)


def test_a_run_stopped_by_its_bounds_is_unsolved(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--objective", "unit_chain", "--design", "when_needed", "--max-iterations", "1"]
    assert main([*argv, "--json"]) == 1
    out = capsys.readouterr()
    (run,) = json.loads(out.out)["runs"]
    assert (run["solved"], run["error"]) == (False, "stopped: max_iterations")
    assert "unit_chain / when_needed: NOT solved (stopped: max_iterations)" in out.err


@pytest.mark.usefixtures("own_objectives")
def test_every_run_gets_fresh_tools(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--objective", REFUSES_FIRST.name, "--design", "tutorial", "--repeat", "2", "--json"]
    assert main(argv) == 0  # the tool refuses its first call in each run
    runs = json.loads(capsys.readouterr().out)["runs"]
    # plan, a refused call, the call again, the report, the answer: in each run (with the
    # tool's state kept, the second run's first call would go through: 4 calls)
    assert [run["model_calls"] for run in runs] == [5, 5]


def test_recovered_text_calls_are_read_from_replans_state(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--objective", "unit_chain", "--design", "tool_steps_off", "--json"]
    assert main([*argv, "--quirk", "calls_as_text=tagged"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    # plan, 3 x convert; the replanner is then asked for JSON (a forced call came back as text)
    assert run["solved"] and run["counters"]["recovered_calls"] == 4
    assert main(argv) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["counters"]["recovered_calls"] == 0


def test_fallbacks_are_counted_for_replan_designs_and_not_for_the_tutorial(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--objective", "unit_chain", "--quirk", 'refused_modes=["tool_required"]']
    argv += [arg for design in DESIGNS if design != "plain" for arg in ("--design", design)]
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
    notes, publish = (
        ("TaskCreate", {"subject": f"The {word} task", "description": "-"}) for word in BLOCKING
    )
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


def test_forecast_checker_and_the_tool_that_refuses_its_first_call(tmp_path: Path) -> None:
    kit = Kit(tmp_path)
    (city,) = FORECASTS
    with pytest.raises(ToolException, match="busy"):
        kit.weather(city)
    forecast = kit.weather(city)
    assert check_weather(Outcome(forecast, TaskContext(), kit))
    other_figures = re.sub(r"high [\d.]+ °C, ", "", forecast)
    assert other_figures != forecast and not check_weather(outcome(tmp_path, other_figures))


def test_order_checker(tmp_path: Path) -> None:
    part, quantity = ORDERED
    (discontinued,) = [code for code, known in PARTS.items() if "discontinued" in known]
    kit = Kit(tmp_path)
    with pytest.raises(ToolException, match="discontinued"):
        kit.place_order(discontinued, quantity)
    assert not kit.orders
    kit.place_order(part, quantity)
    (number,) = [order.number for order in kit.orders]
    assert check_order(Outcome(f"Ordered: {number}", TaskContext(), kit))
    assert not check_order(Outcome("Ordered.", TaskContext(), kit))  # no number in the answer
    assert not check_order(outcome(tmp_path, f"Ordered: {number}"))  # no order was placed
    twice = outcome(tmp_path, "N-1 and N-2")
    twice.kit.orders.extend([Order(part, quantity, "N-1"), Order(part, quantity, "N-2")])
    assert not check_order(twice)
    wrong_quantity = outcome(tmp_path, "N-1")
    wrong_quantity.kit.orders.append(Order(part, quantity + 1, "N-1"))
    assert not check_order(wrong_quantity)
    wrong_part = outcome(tmp_path, "N-1")
    wrong_part.kit.orders.append(Order(discontinued, quantity, "N-1"))
    assert not check_order(wrong_part)


def test_tickets_checker(tmp_path: Path) -> None:
    prices = {code: amount * RATES_TO_EUR[code] for code, amount in TICKETS.items()}
    cheaper, dearer = sorted(prices, key=prices.__getitem__)
    both, one = (
        "; ".join(f"{TICKETS[code]} {code} = {number_text(prices[code])} EUR" for code in codes)
        for codes in (prices, [cheaper])
    )
    assert check_tickets(outcome(tmp_path, f"{both}.\nCheaper: {cheaper}"))
    assert not check_tickets(outcome(tmp_path, f"{both}.\nCheaper: {dearer}"))
    assert not check_tickets(outcome(tmp_path, f"{one}.\nCheaper: {cheaper}"))  # one price
    assert not check_tickets(outcome(tmp_path, f"{both}."))  # no line naming the cheaper


def test_meeting_checker(tmp_path: Path) -> None:
    free = first_common_free_hour()
    assert free in WORKDAY and not any(free in busy for busy in BUSY_HOURS.values())
    earlier = [hour for hour in WORKDAY if hour < free]
    assert all(any(hour in busy for busy in BUSY_HOURS.values()) for hour in earlier)
    assert check_meeting(outcome(tmp_path, f"Both are free at {free:02d}:00."))
    assert not check_meeting(outcome(tmp_path, f"Both are free at {free - 1:02d}:00."))
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


def test_the_default_run_is_the_development_half_solved_with_tool_calls_and_figures(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--design", "replan", "--timeout", "60", "--json"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    runs = {run["objective"]: run for run in report["runs"]}
    assert list(runs) == list(DEVELOPMENT)
    # each look-up, each calculation, each conversion and each plan-document call is one tool run
    assert {name: run["tool_calls"] for name, run in runs.items()} == {
        "catalogue_total": 4,
        "unit_chain": 3,
        "plan_document": 2,
        "temperature_gap": 3,
        "invoice_total": 5,
        "paper_order": 2,
        "task_queue_choice": 0,  # the writing objectives need no tool: answered at once
        "web_framework_choice": 0,
        "pypi_checklist": 0,
    }
    total = report["totals"]["replan"]
    assert total["tool_calls"] == 19
    spent = report["per_solved"]["replan"]
    assert spent["model_calls"] == pytest.approx(total["model_calls"] / len(DEVELOPMENT))
    tokens = total["input_tokens"] + total["output_tokens"]
    assert spent["tokens"] == pytest.approx(tokens / len(DEVELOPMENT))


def test_the_suite_is_split_into_a_development_half_and_a_held_back_half() -> None:
    def names(chosen_names: list[str]) -> list[str]:
        return [objective.name for objective in chosen(chosen_names)]

    assert names([]) == names(["development"]) == list(DEVELOPMENT)
    assert names(["held-back"]) == list(HELD_BACK)
    assert len(DEVELOPMENT) == len(HELD_BACK) and not set(DEVELOPMENT) & set(HELD_BACK)
    assert names(["all"]) == [objective.name for objective in SUITE]
    assert set(names(["held-back", "development"])) == set(OBJECTIVES)
    # each objective once, in the order named
    assert names(["unit_chain", "development"])[:2] == ["unit_chain", DEVELOPMENT[0]]
    assert names(["unit_chain", "development"]).count("unit_chain") == 1


def test_no_test_benchmark_or_product_module_names_a_held_back_objective() -> None:
    """Only the suite's definitions name the held-back half (docs keep past measurements)."""
    folders = ("tests", "benchmarks", "graphs", "tools", "state", "replan", "notebooks")
    named = [
        f"{path.relative_to(REPO)}: {name}"
        for folder in folders
        for path in sorted((REPO / folder).rglob("*"))
        if path.suffix in (".py", ".md", ".ipynb", ".json", ".txt")
        and path != REPO / "benchmarks" / "objectives.py"
        for name in HELD_BACK
        if name in path.read_text(errors="replace")
    ]
    assert not named


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
    most, *others = sorted(WAREHOUSES, key=WAREHOUSES.__getitem__, reverse=True)
    assert check_warehouse(outcome(tmp_path, f"Warehouse {most}: {WAREHOUSES[most]} units."))
    other = others[0]
    assert not check_warehouse(outcome(tmp_path, f"Warehouse {other}: {WAREHOUSES[other]} units."))
    every = ", ".join(f"{name} {units}" for name, units in WAREHOUSES.items())
    assert not check_warehouse(outcome(tmp_path, f"{every}: {most}"))  # other counts too
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


@pytest.mark.usefixtures("own_objectives")
def test_every_design_gets_the_same_task_tools_and_reply_bounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    objective = WITH_TASK_TOOLS  # carried out with the task tools
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
