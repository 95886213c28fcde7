"""Speed and cost of plan–execute runs: replan's waves next to LangGraph's tutorial design.

Every run goes through `ChatOpenAI` to the scripted OpenAI-compatible server of the test suite
(`replan/testing.py`, answering like `replan/testing/plan_script.py`), which holds each
reply for a fixed latency. For each plan shape the script prints wall time, model calls by node,
prompt characters (all calls, and the first and last executor call), the tokens the server
reports (about 4 characters each) and what they would cost at gpt-4o-mini's list price,
checkpoint bytes per step and the non-model time per model call (wall time outside the
client's model calls, divided by the number of calls), for four designs:

- tutorial: LangGraph's plan-and-execute tutorial (`benchmarks/tutorial.py`: plans of plain
  strings, one step at a time, a replanner call after every step);
- sequential: replan with plans of plain strings (what replan did before dependencies);
- waves: replan with dependencies, replanner after every wave (the default);
- when_needed: the same with `Context(replan="when_needed")`.

Every design is given the same objective, words for the plan shape included ("8 parallel
steps", "8 diamond steps"); the designs whose plans are plain strings (tutorial, sequential)
get the same steps without their dependencies, as the script writes a plan for them. The
figures are scripted: the script decides the plan shape, so they show each design's ceiling on
that shape, not a measurement of a model.

Ratios compare each replan design with the tutorial and with sequential, and the targets of the
design are checked at the end (the wall-time one at `--wall-latency`).

Run: python benchmarks/bench_plan_execute.py [--latency 0.1] [--wall-latency 1.0]
     [--result-chars 500] [--tool-calls N]  (N calls of a look-up tool in each executor step)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `tests` and `benchmarks`

from benchmarks.tutorial import tutorial_decision, tutorial_graph  # noqa: E402
from replan.cli.pricing import KNOWN_PRICES, cost  # noqa: E402
from replan.graphs.context import Context, ReplanMode  # noqa: E402
from replan.graphs.persistence import open_checkpointer  # noqa: E402
from replan.graphs.plan_execute import build_plan_execute_graph  # noqa: E402
from replan.state.usage import (  # noqa: E402
    Tally,
    add_tallies,
    call_tally,
    empty_tally,
    total_tally,
)
from replan.testing import (  # noqa: E402
    MODEL_ID,
    Reply,
    ScriptedOpenAIServer,
    text,
    tool_call,
)
from replan.testing import plan_script as script  # noqa: E402
from replan.testing.requests import first_param  # noqa: E402

SHAPES: dict[str, tuple[str, int]] = {
    "8 independent": ("parallel ", 8),
    "chain of 10": ("", 10),
    "chain of 30": ("", 30),
    "diamond 1→6→1": ("diamond ", 8),
}
"""Plan shape -> (the objective's word for it, number of steps); see replan.testing.plan_script."""
DESIGNS = ("tutorial", "sequential", "waves", "when_needed")
RESULT_CHARS = 500
"""Default length of every step's result (`--result-chars`): a short report, long enough that
re-sending results shows in the prompts."""
MAX_ITERATIONS = 100


# --- the scripted model, clocked ----------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """One model request as the server saw it."""

    role: str
    prompt_chars: int
    start: float
    end: float


PLAIN_DESIGNS = ("tutorial", "sequential")
"""The designs whose plans are plain strings: the script leaves the dependencies out."""


def _plain(steps: list[Any]) -> list[str]:
    """`steps` as plain strings (a step with dependencies as its text)."""
    return [step["step"] if isinstance(step, dict) else step for step in steps]


@tool
def lookup(key: str) -> str:
    """Look a key up (the executor's tool when steps make `--tool-calls`)."""
    return f"value of {key}"


def _answer(
    request: dict[str, Any], result_chars: int, plain: bool, tool_calls: int = 0
) -> tuple[str, Reply]:
    """The role of `request` and the scripted reply, for replan's and the tutorial's tools;
    with `plain`, plans without dependencies; an executor makes `tool_calls` calls of `lookup`,
    one a turn, before its report."""
    decision = tutorial_decision(request)
    if decision == "Plan":
        return "planner", tool_call("Plan", {"steps": _plain(script.first_plan(request))})
    if decision == "Act":
        replanned = script.replan(request)
        action = (
            {"response": replanned}
            if isinstance(replanned, str)
            else {"steps": _plain(replanned or [])}
        )
        return "replanner", tool_call("Act", {"action": action})
    role = script.classify(request).role
    if role == "executor":
        made = sum(m.get("role") == "tool" for m in request.get("messages", []))
        if made < tool_calls:
            return role, tool_call("lookup", {"key": f"k{made}"})
        return role, text(script.step_result(request, result_chars))
    if plain and role == "planner":
        steps = _plain(script.first_plan(request))
        return role, tool_call("plan", {first_param(request, "plan", "steps"): steps})
    if plain and role == "replanner" and isinstance(left := script.replan(request), list):
        return role, tool_call("plan", {first_param(request, "plan", "steps"): _plain(left)})
    return role, script.respond(request)


class ModelCalls(BaseCallbackHandler):
    """Records when the graph's chat model calls start and end, as the client sees them, and
    the usage their replies report (for every design alike)."""

    run_inline = True

    def __init__(self) -> None:
        self.started: dict[UUID, float] = {}
        self.spans: list[tuple[float, float]] = []
        self.tokens = empty_tally()
        self.lock = threading.Lock()

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: Any, *, run_id: UUID, **kwargs: Any
    ) -> None:
        with self.lock:
            self.started[run_id] = time.perf_counter()

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        with self.lock:
            self.spans.append((self.started.pop(run_id), time.perf_counter()))
            if response is not None:
                message = response.generations[0][0].message
                self.tokens = add_tallies(self.tokens, call_tally(message.usage_metadata))

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with self.lock:
            self.spans.append((self.started.pop(run_id), time.perf_counter()))


@dataclass
class ClockedModel:
    """A responder that answers after `latency` seconds and records every request."""

    latency: float
    result_chars: int
    plain: bool = False
    tool_calls: int = 0
    """Plans of plain strings (`PLAIN_DESIGNS`)."""
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: dict[str, Any]) -> Reply:
        start = time.perf_counter()
        time.sleep(self.latency)
        role, reply = _answer(request, self.result_chars, self.plain, self.tool_calls)
        chars = len(script.prompt_text(request))
        with self.lock:
            self.requests.append(Request(role, chars, start, time.perf_counter()))
        return reply


# --- one run ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figures:
    """What one run cost."""

    wall: float
    calls: dict[str, int]
    prompt_chars: int
    first_executor_chars: int
    last_executor_chars: int
    checkpoint_bytes_per_step: float
    non_model_ms_per_call: float
    tokens: Tally

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())


def _busy_seconds(spans: list[tuple[float, float]]) -> float:
    """How long at least one of `spans` (start, end) was going on."""
    busy, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reach:
            busy += end - max(start, reach)
            reach = end
    return busy


async def _stored_bytes(saver: Any) -> int:
    query = (
        "SELECT (SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0) "
        "FROM checkpoints) + (SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes)"
    )
    async with saver.conn.execute(query) as cursor:
        row = await cursor.fetchone()
    return int(row[0])


async def run_once(
    design: str, shape: str, latency: float, result_chars: int, tool_calls: int = 0
) -> Figures:
    """Run one design on one plan shape against a fresh server and database."""
    word, steps = SHAPES[shape]
    objective = f"Benchmark run in {steps} {word}steps"  # the same for every design
    clock = ClockedModel(latency, result_chars, design in PLAIN_DESIGNS, tool_calls)
    tools = [lookup] if tool_calls else []
    model_calls = ModelCalls()
    with ScriptedOpenAIServer(clock) as server, tempfile.TemporaryDirectory() as folder:
        async with open_checkpointer(Path(folder) / "runs.sqlite") as saver:
            config: RunnableConfig = {
                "configurable": {"thread_id": "bench"},
                "recursion_limit": 1000,
                "callbacks": [model_calls],
            }
            if design == "tutorial":
                model = ChatOpenAI(
                    model=MODEL_ID, base_url=server.base_url, api_key=SecretStr("x"), temperature=0
                )
                graph = tutorial_graph(model, saver, tools)
                started = time.perf_counter()
                result = await graph.ainvoke({"input": objective}, config)
            else:
                mode: ReplanMode = "when_needed" if design == "when_needed" else "each_wave"
                graph = build_plan_execute_graph(  # task tools given: a run with no tools
                    tools=tools,
                    checkpointer=saver,
                    max_iterations=MAX_ITERATIONS,
                    task_tools="compact",
                )  # at all is answered in one request, with no plan to measure
                context = Context(
                    model=MODEL_ID, base_url=server.base_url, replan=mode, max_plan_steps=steps
                )
                started = time.perf_counter()
                result = await graph.ainvoke(
                    {"messages": [("user", objective)]}, config, context=context
                )
            wall = time.perf_counter() - started
            if not str(result.get("response", "")).startswith(f"All {steps} steps"):
                raise RuntimeError(f"{design} / {shape} did not finish: {result}")
            if design != "tutorial" and total_tally(result["usage"]) != model_calls.tokens:
                raise RuntimeError(f"{design} / {shape}: the state's usage is not the client's")
            stored = await _stored_bytes(saver)
    requests = sorted(clock.requests, key=lambda r: r.start)
    executors = [r for r in requests if r.role == "executor"]
    calls = {role: sum(r.role == role for r in requests) for role in script.ROLES}
    return Figures(
        wall=wall,
        calls=calls,
        prompt_chars=sum(r.prompt_chars for r in requests),
        first_executor_chars=executors[0].prompt_chars,
        last_executor_chars=executors[-1].prompt_chars,
        checkpoint_bytes_per_step=stored / steps,
        non_model_ms_per_call=1000 * (wall - _busy_seconds(model_calls.spans)) / len(requests),
        tokens=model_calls.tokens,
    )


# --- report -------------------------------------------------------------------------------

PRICE = KNOWN_PRICES["gpt-4o-mini"]
"""The list price the cost row applies to the scripted server's token counts."""
METRICS: dict[str, Callable[[Figures], float]] = {
    "wall s": lambda f: f.wall,
    "model calls": lambda f: f.total_calls,
    "  planner": lambda f: f.calls["planner"],
    "  executor": lambda f: f.calls["executor"],
    "  replanner": lambda f: f.calls["replanner"],
    "prompt chars": lambda f: f.prompt_chars,
    "  first executor": lambda f: f.first_executor_chars,
    "  last executor": lambda f: f.last_executor_chars,
    "input tokens": lambda f: f.tokens["input"],
    "output tokens": lambda f: f.tokens["output"],
    "gpt-4o-mini $/1000 runs": lambda f: 1000 * (cost(f.tokens, PRICE) or 0.0),
    "checkpoint bytes/step": lambda f: f.checkpoint_bytes_per_step,
    "non-model ms/call": lambda f: f.non_model_ms_per_call,
}
RATIOS = (
    ("seq/tut", "sequential", "tutorial"),
    ("waves/tut", "waves", "tutorial"),
    ("w_n/tut", "when_needed", "tutorial"),
    ("waves/seq", "waves", "sequential"),
    ("w_n/seq", "when_needed", "sequential"),
)


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.2f}"


def print_table(shape: str, latency: float, figures: dict[str, Figures]) -> None:
    """One shape: a row per metric, a column per design, then the ratios."""
    head = f"{'':22}" + "".join(f"{d:>12}" for d in DESIGNS)
    head += "".join(f"{name:>10}" for name, _, _ in RATIOS)
    print(f"\n{shape} (model latency {latency:.2f} s)\n{head}")
    for metric, read in METRICS.items():
        values = {design: read(figures[design]) for design in DESIGNS}
        row = f"{metric:22}" + "".join(f"{_number(values[d]):>12}" for d in DESIGNS)
        for _, top, bottom in RATIOS:
            row += f"{values[top] / values[bottom]:>10.2f}" if values[bottom] else f"{'-':>10}"
        print(row)


def check(label: str, ok: bool, detail: str) -> bool:
    """Print one target and whether it was met."""
    print(f"  [{'ok' if ok else 'MISSED'}] {label}: {detail}")
    return ok


async def main(latency: float, wall_latency: float, result_chars: int, tool_calls: int) -> int:
    """Measure every shape and design, print the tables, check the targets."""
    print(f"Every step's result is {result_chars} characters long.")
    print(f"Every executor step makes {tool_calls} tool call(s), one a model turn.")
    table: dict[str, dict[str, Figures]] = {}
    for shape in SHAPES:
        table[shape] = {
            d: await run_once(d, shape, latency, result_chars, tool_calls) for d in DESIGNS
        }
        print_table(shape, latency, table[shape])
    timed = {
        d: await run_once(d, "8 independent", wall_latency, result_chars, tool_calls)
        for d in DESIGNS
    }
    print_table("8 independent", wall_latency, timed)

    print("\nTargets")
    waves, tutorial = timed["waves"], timed["tutorial"]
    chain10, chain30 = table["chain of 10"]["when_needed"], table["chain of 30"]["when_needed"]
    prompt_growth = chain30.prompt_chars / chain10.prompt_chars
    executor_growth = chain30.last_executor_chars / chain30.first_executor_chars
    byte_ratios = {
        (shape, design): figures.checkpoint_bytes_per_step
        / row["tutorial"].checkpoint_bytes_per_step
        for shape, row in table.items()
        for design, figures in row.items()
        if design != "tutorial"
    }
    non_model = max(
        f.non_model_ms_per_call for r in table.values() for d, f in r.items() if d != "tutorial"
    )
    tutorial_non_model = max(row["tutorial"].non_model_ms_per_call for row in table.values())
    results = [
        check(
            f"8 independent at {wall_latency:g} s latency",
            waves.wall <= 3.5 * wall_latency and waves.total_calls <= 11,
            f"wall {waves.wall:.2f} s, tutorial {tutorial.wall:.2f} s "
            f"(x{tutorial.wall / waves.wall:.1f} faster); {waves.total_calls} model calls",
        ),
        check(
            "chain of 30, when_needed",
            chain30.total_calls <= 32 and prompt_growth <= 3.5 and executor_growth <= 2,
            f"{chain30.total_calls} calls; prompt chars x{prompt_growth:.2f} the chain of 10's; "
            f"last executor prompt x{executor_growth:.2f} the first's",
        ),
        check(
            "checkpoint bytes per step at most the tutorial's",
            max(byte_ratios.values()) <= 1,
            f"replan / tutorial from x{min(byte_ratios.values()):.2f} "
            f"to x{max(byte_ratios.values()):.2f}",
        ),
        check(
            f"non-model time per model call at {latency:g} s latency at most 6 ms",
            non_model <= 6,
            f"replan worst {non_model:.1f} ms, tutorial worst {tutorial_non_model:.1f} ms",
        ),
    ]
    return 0 if all(results) else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per model reply")
    parser.add_argument(
        "--wall-latency", type=float, default=1.0, help="latency of the wall-time target run"
    )
    parser.add_argument(
        "--result-chars", type=int, default=RESULT_CHARS, help="length of each step's result"
    )
    parser.add_argument(
        "--tool-calls", type=int, default=0, help="tool calls each executor step makes"
    )
    options = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "scripted")
    figures = main(options.latency, options.wall_latency, options.result_chars, options.tool_calls)
    sys.exit(asyncio.run(figures))
